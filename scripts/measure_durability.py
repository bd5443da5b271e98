"""The cost of durable commits: single writes (as /add makes them) and 32-document batches (as
/ingest/markdown/batch), with BRAIN_DURABILITY full and normal interleaved in one run.

Usage:
  python scripts/measure_durability.py [--writes 300] [--batches 30] [--work /tmp/nb-durability]

Each round writes into two fresh brains, one per setting, alternately, so both see the same
machine; the figures are medians over all writes (milliseconds) and batch throughput
(chunks per second). The brains use the hashing embedder, so the figures are storage's.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from dataclasses import replace
from pathlib import Path

from nexusbrain.bench.corpus import Corpus
from nexusbrain.brain import Brain
from nexusbrain.config import Durability, Profile, Settings, StorageConfig
from nexusbrain.records import MarkdownNote


def brain_for(work: Path, durability: Durability) -> Brain:
    settings = Settings(db=work / f"{durability.value}.db", embedder=Profile.HASHING)
    return Brain.open(settings=replace(settings, storage=StorageConfig(durability=durability)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--work", type=Path, default=Path("/tmp/nb-durability"))
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    brains = {d: brain_for(args.work, d) for d in Durability}
    single: dict[Durability, list[float]] = {d: [] for d in Durability}
    for i in range(args.writes):
        for durability, brain in brains.items():
            started = time.perf_counter()
            brain.add_memory(f"memory {i}: the backup runs at {i % 24}:00 on host {i % 7}")
            single[durability].append((time.perf_counter() - started) * 1000)
    corpus = Corpus()
    rates: dict[Durability, list[float]] = {d: [] for d in Durability}
    for b in range(args.batches):
        docs = [corpus.document(b * 32 + j) for j in range(32)]
        notes = [MarkdownNote(d.content, title=d.title, uri=d.name) for d in docs]
        for durability, brain in brains.items():
            started = time.perf_counter()
            results = brain.ingest_markdown_batch(notes)
            seconds = time.perf_counter() - started
            rates[durability].append(sum(r.chunks for r in results) / seconds)
    for durability, brain in brains.items():
        brain.close()
        times = sorted(single[durability])
        print(
            f"{durability.value:>6}: single write p50 {statistics.median(times):.2f} ms"
            f" (p95 {times[int(0.95 * len(times))]:.2f});"
            f" batch of 32 documents {statistics.median(rates[durability]):,.0f} chunks/s"
        )


if __name__ == "__main__":
    main()
