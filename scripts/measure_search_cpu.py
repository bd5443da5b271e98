"""What a search costs in process, pass by pass, over one brain at a bench scale.

    python scripts/measure_search_cpu.py --db bench.db [--documents 20000] [--searches 200] \
        [--passes 5] [--mode balanced]

Opens the brain as a server does (warmed, Brain.warm), then sends the bench's own queries
(`nexusbrain bench` at --documents) --passes times, one at a time, and prints each pass's
wall and CPU milliseconds a search, the page faults a search, and the full collections of
Python's collector during the pass with the longest. The first pass meets every query's
words for the first time (their postings read from the database); the passes after it find
them cached. Build the brain with `python scripts/measure_concurrency.py --db bench.db
--rounds 1` (or `ingest-dir` of the bench's corpus). Run it with PYTHONPATH=TREE/src to
measure another tree, each tree in turn in one session: the machine's speed drifts.
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import time
from typing import Any

from nexusbrain.bench.corpus import Corpus, CorpusSpec
from nexusbrain.brain import Brain
from nexusbrain.records import SearchMode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True, help="a brain: a SQLite file or a postgresql:// URL")
    parser.add_argument("--documents", type=int, default=20_000, help="the bench scale it holds")
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--mode", choices=[m.value for m in SearchMode], default="balanced")
    args = parser.parse_args()
    queries = Corpus(CorpusSpec()).queries(args.searches, args.documents)
    full: list[float] = []  # each full collection's milliseconds
    started = [0.0]

    def timed(phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            full.append((time.perf_counter() - started[0]) * 1e3)

    with Brain.open(args.db, create=False) as brain:
        _warm(brain)
        gc.callbacks.append(timed)
        for n in range(1, args.passes + 1):
            full.clear()
            before = resource.getrusage(resource.RUSAGE_SELF)
            walls = []
            for query in queries:
                t = time.perf_counter()
                brain.search(query, k=10, mode=SearchMode(args.mode))
                walls.append((time.perf_counter() - t) * 1e3)
            after = resource.getrusage(resource.RUSAGE_SELF)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            faults = after.ru_minflt - before.ru_minflt
            print(
                f"pass {n}: wall median {statistics.median(walls):.2f} ms, mean"
                f" {statistics.mean(walls):.2f} ms; CPU {cpu / len(queries) * 1e3:.2f} ms a"
                f" search (both threads); {faults / len(queries):.0f} page faults a search;"
                f" {len(full)} full collections"
                + (f", the longest {max(full):.1f} ms" if full else ""),
                flush=True,
            )
        gc.callbacks.remove(timed)


def _warm(brain: Any) -> None:
    """As a server warms its brain, in this tree or an older one (Brain.warm before the
    admin part, refresh_index before Brain.warm)."""
    admin = getattr(brain, "admin", None)
    warm = getattr(admin, "warm", None) or getattr(brain, "warm", None)
    (warm or brain.refresh_index)()


if __name__ == "__main__":
    main()
