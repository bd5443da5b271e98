"""Where a search's time goes, on either backend (docs/design/postgres.md, issue 36): the time
to open the brain and answer its first search, then per search of a query file: the
statements sent to PostgreSQL (a pipeline's statements count one each) and, with --prof,
cProfile's top functions.

Usage:
  python scripts/profile_search.py BRAIN --queries queries.json [--prof] [--stages] [--warm]

--stages runs each search's BM25 on the calling thread (not the worker thread it shares with
the dense side) and prints the wall time per search of each stage of the pipeline: where a
backend's round trips go, stage by stage (--prof's cProfile counts only the calling thread).

--warm searches every query once before the timed pass, as the bench warms a server: the
timed pass then finds every token's postings cached, as the bench's timed series do.

BRAIN is a SQLite file or a postgresql:// URL; queries.json is a JSON list of strings (for
the bench corpus: `Corpus().queries(200, 5000)` of nexusbrain.bench.corpus).
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import functools
import json
import pstats
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import psycopg

from nexusbrain import Brain
from nexusbrain.retrieval import pipeline, retrievers

sent: collections.Counter[str] = collections.Counter()
_execute = psycopg.Connection.execute


def _counted(self: psycopg.Connection[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
    sent[(query if isinstance(query, str) else repr(query))[:90]] += 1
    return _execute(self, query, *args, **kwargs)


stages: collections.Counter[str] = collections.Counter()
STAGES = {
    pipeline.Searcher: ("rank", "_fuse", "_unranked_scores", "_shown", "_confidence"),
    retrievers.Lexical: ("search", "scores"),
    retrievers.Dense: ("vector", "centred", "search", "scores"),
}


class _Inline:
    """An executor that runs what it is given at once, on the calling thread."""

    def submit(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        done: Future[Any] = Future()
        done.set_result(fn(*args, **kwargs))
        return done


def _timed(label: str, method: Any) -> Any:
    @functools.wraps(method)
    def timed(*args: Any, **kwargs: Any) -> Any:
        begun = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            stages[label] += time.perf_counter() - begun

    return timed


def _time_stages() -> None:
    pipeline.Searcher._workers = lambda self, kind="search": _Inline()  # type: ignore[method-assign,assignment,return-value]
    for owner, names in STAGES.items():
        for name in names:
            setattr(owner, name, _timed(f"{owner.__name__}.{name}", getattr(owner, name)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("brain")
    parser.add_argument("--queries", required=True)
    parser.add_argument("--prof", action="store_true")
    parser.add_argument("--stages", action="store_true", help="wall time of each stage")
    parser.add_argument("--warm", action="store_true", help="search every query once first")
    args = parser.parse_args()
    if args.stages:
        _time_stages()
    queries: list[str] = json.loads(Path(args.queries).read_text(encoding="utf-8"))
    psycopg.Connection.execute = _counted  # type: ignore[method-assign]
    started = time.perf_counter()
    brain = Brain.open(args.brain, create=False)
    opened = time.perf_counter()
    brain.search("warm up the index")
    print(f"open {opened - started:.2f} s, first search {time.perf_counter() - opened:.2f} s")
    if args.warm:
        for query in queries:
            brain.search(query, k=10)
    sent.clear()
    stages.clear()
    profile = cProfile.Profile() if args.prof else None
    took = []
    for query in queries:
        begun = time.perf_counter()
        if profile:
            profile.enable()
        brain.search(query, k=10)
        if profile:
            profile.disable()
        took.append(time.perf_counter() - begun)
    took.sort()
    p50, p95 = took[len(took) // 2], took[int(len(took) * 0.95)]
    print(f"search p50 {p50 * 1e3:.2f} ms, p95 {p95 * 1e3:.2f} ms")
    for statement, count in sent.most_common(12):
        print(f"{count / len(queries):6.2f} a search  {statement}")
    for stage, seconds in stages.most_common():
        print(f"{seconds / len(queries) * 1e3:7.2f} ms a search  {stage}")
    if profile:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(30)
    brain.close()


if __name__ == "__main__":
    main()
