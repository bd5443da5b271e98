"""Where a search's time goes, on either backend (docs/design/postgres.md, issue 36): the time
to open the brain and answer its first search, then per search of a query file: the
statements sent to PostgreSQL (a pipeline's statements count one each) and, with --prof,
cProfile's top functions.

Usage:
  python scripts/profile_search.py BRAIN --queries queries.json [--prof]

BRAIN is a SQLite file or a postgresql:// URL; queries.json is a JSON list of strings (for
the bench corpus: `Corpus().queries(200, 5000)` of nexusbrain.bench.corpus).
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import json
import pstats
import time
from pathlib import Path
from typing import Any

import psycopg

from nexusbrain import Brain

sent: collections.Counter[str] = collections.Counter()
_execute = psycopg.Connection.execute


def _counted(self: psycopg.Connection[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
    sent[(query if isinstance(query, str) else repr(query))[:90]] += 1
    return _execute(self, query, *args, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("brain")
    parser.add_argument("--queries", required=True)
    parser.add_argument("--prof", action="store_true")
    args = parser.parse_args()
    queries: list[str] = json.loads(Path(args.queries).read_text(encoding="utf-8"))
    psycopg.Connection.execute = _counted  # type: ignore[method-assign]
    started = time.perf_counter()
    brain = Brain.open(args.brain, create=False)
    opened = time.perf_counter()
    brain.search("warm up the index")
    print(f"open {opened - started:.2f} s, first search {time.perf_counter() - opened:.2f} s")
    sent.clear()
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
    if profile:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(30)
    brain.close()


if __name__ == "__main__":
    main()
