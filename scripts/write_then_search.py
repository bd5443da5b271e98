"""What a search costs right after a write (an agent saving a memory, then recalling).

Usage:
  python scripts/write_then_search.py DB [--writes 20]

Copies DB (and its vector cache) to a scratch folder, then, `--writes` times: stores a short
note, times the search that follows (it brings the vector index up to date first) and the
search after that. Prints both medians in milliseconds. The DB given is not changed.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from nexusbrain.brain import Brain


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db", type=Path)
    parser.add_argument("--writes", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / args.db.name
        for source in args.db.parent.glob(args.db.name + "*"):
            shutil.copy(source, Path(scratch) / source.name)
        with Brain.open(db) as brain:
            brain.search("warm up")
            after_write: list[float] = []
            next_one: list[float] = []
            for i in range(args.writes):
                brain.add_memory(f"the kestrel nests on ledge {i} of the old mill")
                for out in (after_write, next_one):
                    started = time.perf_counter()
                    brain.search("kestrel ledge")
                    out.append((time.perf_counter() - started) * 1000)
            chunks = brain.stats().store.chunks
    print(
        f"{chunks:,} chunks: search right after a write, median"
        f" {statistics.median(after_write):.1f} ms; the search after it"
        f" {statistics.median(next_one):.1f} ms"
    )


if __name__ == "__main__":
    main()
