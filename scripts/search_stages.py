"""Where a search's time goes, in process: each stage alone, then whole searches with BM25 on
a worker thread (as shipped) against BM25 inline, interleaved in one process.

Usage:
  python scripts/search_stages.py DB [--documents N] [--queries 200] [--mode balanced]

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
        for q in queries[:10]:  # warm the page cache and the index
            brain.search(q, mode=mode)
        none = SearchFilters()
        terms = [query_terms(q) for q in queries]
        vectors = [embedder.encode([q])[0] for q in queries]
        probes = [index.centre(v) for v in vectors]
        bm25 = [lambda t=t: searcher._bm25(t, 100, none, False) for t in terms]
        print(_line("bm25", _timed(bm25)))
        print(_line("embed query", _timed([lambda q=q: embedder.encode([q]) for q in queries])))
        print(_line("dense search", _timed([lambda p=p: index.search(p, 100) for p in probes])))
        parallel: list[float] = []
        serial: list[float] = []
        pool = searcher._workers()
        for q in queries:  # interleaved, so that both see the same machine
            parallel += _timed([lambda q=q: brain.search(q, mode=mode)])
            searcher._workers = lambda: _Inline()  # type: ignore[method-assign,assignment,return-value]
            serial += _timed([lambda q=q: brain.search(q, mode=mode)])
            searcher._workers = lambda: pool  # type: ignore[method-assign]
        print(_line("search, BM25 inline", serial))
        print(_line("search, BM25 on a worker", parallel))


if __name__ == "__main__":
    main()
