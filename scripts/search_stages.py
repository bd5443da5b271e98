"""Where a search's time goes, in process: each stage alone, then whole searches as shipped
against one change, interleaved in one process: `--compare worker` runs BM25 inline instead
of on a worker thread; `--compare postings` ranks with FTS5's bm25() instead of scoring
FTS5's postings in numpy (LexicalConfig.from_postings).

Usage:
  python scripts/search_stages.py DB [--documents N] [--queries 200] [--mode balanced]
      [--common-share S] [--compare worker|postings]

DB is a brain built with the edge profile from a bench corpus (`nexusbrain bench --workdir W`
keeps it, or `nexusbrain --db DB ingest-dir` of a corpus folder); the queries are the bench's,
about its first N documents. Times are wall milliseconds on this machine: p50 and p95.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace

from nexusbrain.bench.corpus import Corpus
from nexusbrain.bench.latency import summarise
from nexusbrain.brain import Brain
from nexusbrain.records import SearchFilters, SearchMode
from nexusbrain.retrieval.terms import query_terms


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
    with Brain.open(args.db) as brain:
        searcher, index, embedder = brain.searcher, brain.index, brain.embedder
        if args.common_share is not None:
            searcher.lexical = replace(searcher.lexical, common_share=args.common_share)
        assert index is not None and embedder is not None
        print(
            f"{brain.store.stats().chunks:,} chunks, {len(queries)} queries, mode {mode.value},"
            f" common share {searcher.lexical.common_share}"
        )
        words = Corpus().words
        for i in range(10):  # warm the page cache and the index, with words of no query
            brain.search(" ".join(words[5_000 + 3 * i : 5_003 + 3 * i]), mode=mode)
        none = SearchFilters()
        terms = [query_terms(q) for q in queries]
        vectors = [embedder.encode([q])[0] for q in queries]
        probes = [index.centre(v) for v in vectors]
        fts5 = [lambda t=t: searcher._bm25(t, 100, none, False) for t in terms]
        shipped = searcher.lexical
        searcher.lexical = replace(shipped, from_postings=False)
        print(_line("bm25, FTS5 bm25()", _timed(fts5)))
        searcher.lexical = shipped
        if shipped.from_postings:
            print(_line("bm25, postings, first time", _timed(fts5)))
            print(_line("bm25, postings, cached", _timed(fts5)))
        print(_line("embed query", _timed([lambda q=q: embedder.encode([q]) for q in queries])))
        print(_line("dense search", _timed([lambda p=p: index.search(p, 100) for p in probes])))
        if args.compare == "worker":
            pool = searcher._workers()
            inline = lambda: _Inline()  # noqa: E731
            changed = ("BM25 inline", lambda: setattr(searcher, "_workers", inline))
            restored = lambda: setattr(searcher, "_workers", lambda: pool)  # noqa: E731
        else:
            changed = (
                "FTS5 bm25()",
                lambda: setattr(searcher, "lexical", replace(shipped, from_postings=False)),
            )
            restored = lambda: setattr(searcher, "lexical", shipped)  # noqa: E731
        as_shipped: list[float] = []
        other: list[float] = []
        for q in queries:  # interleaved, so that both see the same machine
            as_shipped += _timed([lambda q=q: brain.search(q, mode=mode)])
            changed[1]()
            other += _timed([lambda q=q: brain.search(q, mode=mode)])
            restored()
        print(_line(f"search, {changed[0]}", other))
        print(_line("search, as shipped", as_shipped))


if __name__ == "__main__":
    main()
