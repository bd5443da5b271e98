"""HTTP batch ingest into fresh brains of several targets, interleaved round by round: the
bench's HTTP ingest (`nexusbrain.bench.runner.http_ingest`: 4 clients, 32 documents a
request to `POST /ingest/markdown/batch`, served by `nexusbrain serve` as the bench serves
it), for comparing backends, or source trees, on a machine whose speed drifts.

    python scripts/measure_ingest.py --documents 20000 --rounds 3 \\
        --target pg,'postgresql://…?schema=mi_pg',/work/wt-pg/src \\
        --target sqlite,/tmp/mi/sqlite.db,/work/wt-pg/src \\
        --target pg-main,'postgresql://…?schema=mi_main',/work/wt-main/src [--json]

A target is NAME,DB,SRC: the brain (a postgresql:// URL, whose schema is dropped before
each run and at the end, or a SQLite file, removed before each run) and the source tree
whose `nexusbrain serve` serves it (its PYTHONPATH). Each round runs every target once, in
the order given in odd rounds and reversed in even ones, so that neither runs first every
time. The report gives each run's chunks/s and the load average (1 min) at its start and
end, each target's median over the rounds, and the ratio of every pair of targets, of the
medians and round by round.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexusbrain.bench.corpus import Corpus, CorpusSpec, write_doc
from nexusbrain.bench.runner import BenchConfig, http_ingest
from nexusbrain.bench.server import child_env
from nexusbrain.envelopes import DEFAULT_ENVELOPE
from nexusbrain.storage import postgres


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    db: str
    src: Path

    @classmethod
    def parse(cls, text: str) -> Target:
        name, db, src = text.split(",", 2)
        return cls(name, db, Path(src).resolve())

    def reset(self) -> None:
        """A fresh brain: the schema dropped, or the file and its companions removed."""
        if postgres.is_postgres(self.db):
            postgres.drop(self.db)
            return
        for path in Path(self.db).parent.glob(Path(self.db).name + "*"):
            path.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--target", action="append", required=True, type=Target.parse)
    parser.add_argument("--workers", type=int, default=BenchConfig().workers)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="measure-ingest-"))
    folder = work / f"corpus-{args.documents}"
    shutil.rmtree(folder, ignore_errors=True)
    for doc in Corpus(CorpusSpec()).documents(args.documents):
        write_doc(folder, doc)
    config = BenchConfig(workers=args.workers, workdir=work)
    runs: list[dict[str, Any]] = []
    try:
        for round_number in range(args.rounds):
            order = args.target if round_number % 2 == 0 else args.target[::-1]
            for target in order:
                run = _run(target, folder, args.documents, work, config, round_number)
                runs.append(run)
                print(
                    f"round {round_number + 1} {target.name}: {run['chunks_per_second']:.1f}"
                    f" chunks/s in {run['seconds']:.1f} s, load {run['load'][0]:.2f}"
                    f" -> {run['load'][1]:.2f}",
                    file=sys.stderr,
                )
    finally:
        for target in args.target:
            if postgres.is_postgres(target.db):
                postgres.drop(target.db)
        shutil.rmtree(folder, ignore_errors=True)
    report = summary([t.name for t in args.target], runs, args.documents)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)


def _run(
    target: Target, folder: Path, documents: int, work: Path, config: BenchConfig, number: int
) -> dict[str, Any]:
    target.reset()
    env = child_env(DEFAULT_ENVELOPE, {"PYTHONPATH": str(target.src)})
    logs = work / f"{target.name}-{number}"
    logs.mkdir(parents=True, exist_ok=True)
    before = os.getloadavg()[0]
    rates, _ = http_ingest(folder, documents, target.db, 1, logs, env, config, target.name, _quiet)
    return {
        "round": number + 1,
        "target": target.name,
        "chunks": rates["chunks"],
        "seconds": rates["seconds"],
        "chunks_per_second": rates["chunks_per_second"],
        "load": [round(before, 2), round(os.getloadavg()[0], 2)],
    }


def summary(names: list[str], runs: list[dict[str, Any]], documents: int) -> dict[str, Any]:
    """Each target's median chunks/s, and the ratio of every pair of targets ("a/b"): of the
    medians, and in each round."""
    rates = {n: [r["chunks_per_second"] for r in runs if r["target"] == n] for n in names}
    medians = {n: statistics.median(v) for n, v in rates.items()}
    pairs = [(a, b) for a in names for b in names if a != b]
    return {
        "documents": documents,
        "runs": runs,
        "median_chunks_per_second": medians,
        "ratios": {f"{a}/{b}": round(medians[a] / medians[b], 3) for a, b in pairs},
        "ratios_by_round": {
            f"{a}/{b}": [round(x / y, 3) for x, y in zip(rates[a], rates[b], strict=True)]
            for a, b in pairs
        },
    }


def _print(report: dict[str, Any]) -> None:
    print(f"{report['documents']:,} documents, HTTP batch ingest, chunks/s:")
    for name, median in report["median_chunks_per_second"].items():
        each = [r["chunks_per_second"] for r in report["runs"] if r["target"] == name]
        print(f"  {name}: median {median:.1f} (runs {', '.join(f'{v:.1f}' for v in each)})")
    for pair, ratio in report["ratios"].items():
        rounds = ", ".join(f"{v:.3f}" for v in report["ratios_by_round"][pair])
        print(f"  {pair}: {ratio:.3f} of the medians (by round: {rounds})")


def _quiet(what: str, done: int, total: int) -> None:
    """No progress display."""


if __name__ == "__main__":
    main()
