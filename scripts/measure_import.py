"""Import speed with chunk rows written one per statement against a few hundred per statement.

Usage:
  python scripts/measure_import.py [--documents 2000] [--runs 3] [--work /tmp/nb-import]

Ingests the first N documents of the bench corpus into a lexical-only brain, exports it, then
imports that export into fresh databases, alternating the two ways `--runs` times in one
process. Prints the median seconds of each and their ratio.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from pathlib import Path

from nexusbrain.bench.corpus import Corpus
from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings
from nexusbrain.storage.sqlite import multirow


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/nb-import"))
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    corpus = args.work / "corpus"
    Corpus().write(corpus, args.documents)
    with Brain.open(settings=Settings(db=args.work / "source.db", embedder=Profile.NONE)) as source:
        source.ingest_dir(corpus)
        records = list(source.admin.export())
    print(f"{args.documents} documents, {len(records):,} records")
    seconds: dict[int, list[float]] = {1: [], multirow.MAX_ROWS: []}
    default = multirow.MAX_ROWS
    for run in range(args.runs):
        for rows in seconds:
            multirow.MAX_ROWS = rows
            db = args.work / f"import-{rows}-{run}.db"
            with Brain.open(settings=Settings(db=db, embedder=Profile.NONE)) as target:
                started = time.perf_counter()
                target.admin.import_records(records)
                seconds[rows].append(time.perf_counter() - started)
    multirow.MAX_ROWS = default
    for rows, values in seconds.items():
        print(f"{rows:>4} rows per INSERT: median {statistics.median(values):.2f} s  {values}")
    one, many = (statistics.median(v) for v in seconds.values())
    print(f"ratio {one / many:.2f}x")


if __name__ == "__main__":
    main()
