"""What a PostgreSQL search pays to see other replicas' writes: the change-log check.

Usage:
  python scripts/measure_change_check.py 'postgresql://…?schema=NAME' [--word database]
      [--rounds 5] [--calls 400]

Times, interleaved in rounds on one pooled connection: the round trip a lexical search makes
when every query token's postings are cached (BEGIN REPEATABLE READ READ ONLY, the change head,
the change log since this process's last search; then COMMIT), a bare `SELECT 1`, and a whole
lexical search of one word (its postings cached after the first). The brain must exist.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from nexusbrain import storage
from nexusbrain.records import SearchFilters
from nexusbrain.storage.postgres.backend import PostgresBackend


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--word", default="database")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=400)
    args = parser.parse_args()
    backend = storage.open(args.url, create=False)
    assert isinstance(backend, PostgresBackend), "a postgresql:// URL"
    lexical, db = backend.lexical, backend.db

    def check() -> None:
        with lexical.read():
            pass

    def select_1() -> None:
        with db.read() as conn:
            conn.execute("SELECT 1").fetchone()

    def search() -> None:
        lexical.search([args.word], 10, SearchFilters())

    timed: dict[str, Callable[[], None]] = {
        "change-log check (one search's snapshot, head and changes)": check,
        "SELECT 1 round trip": select_1,
        "whole lexical search, postings cached": search,
    }
    samples: dict[str, list[float]] = {name: [] for name in timed}
    search()
    for _ in range(args.rounds):
        for name, call in timed.items():
            for _ in range(50):
                call()
            for _ in range(args.calls):
                started = time.perf_counter_ns()
                call()
                samples[name].append((time.perf_counter_ns() - started) / 1e6)
    for name, ms in samples.items():
        ms.sort()
        p95 = ms[int(0.95 * (len(ms) - 1))]
        print(f"{name:60s} p50 {statistics.median(ms):.3f} ms  p95 {p95:.3f} ms  n {len(ms)}")
    backend.close()


if __name__ == "__main__":
    main()
