"""Where a search's time goes, in process: each stage alone, then whole searches as shipped
against one change, interleaved in one process: `--compare worker` runs BM25 inline instead
of on a worker thread; `--compare postings` ranks with FTS5's bm25() instead of scoring
FTS5's postings in numpy (LexicalConfig.from_postings).

Usage:
  python scripts/search_stages.py DB [--documents N] [--queries 200] [--mode balanced]
      [--common-share S] [--compare worker|postings]

The pipeline is composed here from the backend's parts (as Brain.open does), so that two
configurations run side by side. DB is a brain built with the edge profile from a bench
corpus (`nexusbrain bench --workdir W` keeps it, or `nexusbrain --db DB ingest-dir` of a
corpus folder); the queries are the bench's, about its first N documents. Times are wall
milliseconds on this machine: p50 and p95.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from nexusbrain import storage
from nexusbrain.bench.corpus import Corpus
from nexusbrain.config import LexicalConfig, Profile
from nexusbrain.embeddings import Embedder, load_embedder
from nexusbrain.embeddings.profiles import centred
from nexusbrain.latency import summarise
from nexusbrain.records import SearchFilters, SearchMode
from nexusbrain.retrieval.modes import PRESETS
from nexusbrain.retrieval.pipeline import Searcher
from nexusbrain.retrieval.terms import query_terms
from nexusbrain.storage.base import Backend


class _Inline:
    """An executor that runs the job on the calling thread: the serial baseline."""

    def submit(self, fn: Callable[..., object], *args: object) -> Future[object]:
        future: Future[object] = Future()
        future.set_result(fn(*args))
        return future


def _timed(calls: list[Callable[[], object]]) -> list[float]:
    out = []
    for call in calls:
        started = time.perf_counter()
        call()
        out.append((time.perf_counter() - started) * 1000)
    return out


def _line(name: str, milliseconds: list[float]) -> str:
    s = summarise(milliseconds, sum(milliseconds) / 1000)
    return f"{name:<28} p50 {s.p50:7.2f}  p95 {s.p95:7.2f} ms"


def _searcher(backend: Backend, embedder: Embedder, lexical: LexicalConfig) -> Searcher:
    """A search pipeline over the backend's parts, with its own lexical settings (a second
    handle on the database, so that each has its own lexical index)."""
    index = backend.dense_index(embedder.model_id, embedder.dim, centre=centred(Profile.EDGE))
    text = storage.open(backend.describe(), lexical).lexical
    return Searcher(backend.documents, text, lexical, embedder, index)


class _InlineSearcher(Searcher):
    def _workers(self) -> Any:
        return _Inline()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--mode", default="balanced", choices=[m.value for m in SearchMode])
    parser.add_argument("--common-share", type=float, help="override LexicalConfig.common_share")
    parser.add_argument("--compare", choices=["worker", "postings"], default="postings")
    args = parser.parse_args()
    queries = Corpus().queries(args.queries, args.documents)
    mode = SearchMode(args.mode)
    config = PRESETS[mode]
    embedder = load_embedder(Profile.EDGE)
    assert embedder is not None
    shipped = LexicalConfig()
    if args.common_share is not None:
        shipped = replace(shipped, common_share=args.common_share)
    backend = storage.open(args.db, shipped)
    searcher = _searcher(backend, embedder, shipped)
    fts5 = _searcher(backend, embedder, replace(shipped, from_postings=False))
    print(
        f"{backend.documents.stats().chunks:,} chunks, {len(queries)} queries, mode {mode.value},"
        f" common share {shipped.common_share}"
    )
    none = SearchFilters()
    words = Corpus().words
    for i in range(10):  # warm the page cache and the index, with words of no query
        searcher.search(" ".join(words[5_000 + 3 * i : 5_003 + 3 * i]), 10, none, config)
    terms = [query_terms(q) for q in queries]
    index = searcher.index
    assert index is not None
    probes = [index.centre(embedder.encode([q])[0]) for q in queries]
    print(
        _line(
            "bm25, FTS5 bm25()",
            _timed([lambda t=t: fts5._bm25(t, 100, none, False) for t in terms]),
        )
    )
    if shipped.from_postings:
        bm25 = [lambda t=t: searcher._bm25(t, 100, none, False) for t in terms]
        print(_line("bm25, postings, first time", _timed(bm25)))
        print(_line("bm25, postings, cached", _timed(bm25)))
    print(_line("embed query", _timed([lambda q=q: embedder.encode([q]) for q in queries])))
    print(_line("dense search", _timed([lambda p=p: index.search(p, 100) for p in probes])))
    if args.compare == "worker":
        name = "BM25 inline"
        other_searcher: Searcher = _InlineSearcher(
            backend.documents, backend.lexical, shipped, embedder, index
        )
    else:
        name, other_searcher = "FTS5 bm25()", fts5
    as_shipped: list[float] = []
    other: list[float] = []
    for q in queries:  # interleaved, so that both see the same machine
        as_shipped += _timed([lambda q=q: searcher.search(q, config.k, none, config)])
        other += _timed([lambda q=q: other_searcher.search(q, config.k, none, config)])
    print(_line(f"search, {name}", other))
    print(_line("search, as shipped", as_shipped))
    backend.close()


if __name__ == "__main__":
    main()
