"""The cost of compacting a PostgreSQL brain's postings after a bulk load, for one source tree
or several, interleaved in one session.

    python scripts/measure_compaction.py --db 'postgresql://…?schema=S' [--documents 8000] \
        [--rounds 2] [--tree /path/to/checkout/src ...]

Each round, for each tree in turn: the schema is dropped, the bench's corpus of --documents
is written into it by `ingest-dir` (the installed package; a load this short ends before its
compactor's first pass, so the postings stay as the writes left them, one segment per token
per batch), then a child process of that tree opens the brain, stops its background
compactor and times one whole `compact()`: wall seconds, and the CPU seconds of the child
(the Python side, which shares the GIL with a server's requests; PostgreSQL's work is its
own process), and a digest of the postings it leaves, which trees that merge alike share.
The report gives each tree's median over the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nexusbrain.bench.corpus import Corpus, CorpusSpec
from nexusbrain.bench.server import child_env, run_cli
from nexusbrain.envelopes import DEFAULT_ENVELOPE
from nexusbrain.storage import postgres

CHILD = """
import json, sys, time
from nexusbrain import storage
backend = storage.open(sys.argv[1])
backend.compactor.close()
with backend.db.connection() as conn:
    before = conn.execute("SELECT count(*) FROM postings").fetchone()[0]
wall, cpu = time.perf_counter(), time.process_time()
done = backend.compactor.compact()
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
with backend.db.connection() as conn:
    after = conn.execute("SELECT count(*) FROM postings").fetchone()[0]
    digest = conn.execute(  # what a search reads, whatever the segments are numbered
        "SELECT md5(string_agg(term || ':' || encode(pids, 'hex') || ':' || encode(tfs, 'hex'),"
        " ',' ORDER BY term, segment)) FROM postings"
    ).fetchone()[0]
backend.close()
print(json.dumps({"wall": wall, "cpu": cpu, "rows_before": before, "rows_after": after,
                  "merged": done.merged, "read": done.read, "written": done.written,
                  "digest": digest}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True, help="a postgresql:// URL naming a scratch schema")
    parser.add_argument("--documents", type=int, default=8_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tree", action="append", default=[], help="a src folder to time")
    args = parser.parse_args()
    if "://" not in args.db:
        raise SystemExit("--db must be a postgresql:// URL: only PostgreSQL compacts postings")
    figures: dict[str, list[dict[str, Any]]] = {tree: [] for tree in args.tree or [""]}
    with tempfile.TemporaryDirectory(prefix="nexusbrain-compaction-") as scratch:
        folder = Path(scratch) / "corpus"
        Corpus(CorpusSpec()).write(folder, args.documents)
        for round_ in range(args.rounds):
            for tree, rows in figures.items():
                postgres.drop(args.db)
                report, seconds = run_cli(
                    args.db, child_env(DEFAULT_ENVELOPE), "ingest-dir", str(folder)
                )
                time.sleep(2)  # the load's last commits settle
                rows.append(_compact(args.db, tree))
                print(
                    f"round {round_ + 1} {tree or 'installed'}: {report['chunks']:,} chunks"
                    f" loaded in {seconds:.0f} s; {_line(rows[-1])}; digest {rows[-1]['digest']}",
                    flush=True,
                )
    postgres.drop(args.db)
    print(f"median of {args.rounds} rounds, {args.documents} documents:")
    for tree, rows in figures.items():
        median = {k: statistics.median(r[k] for r in rows) for k in rows[0] if k != "digest"}
        print(f"  {tree or 'installed'}: {_line(median)}")


def _compact(db: str, tree: str) -> dict[str, Any]:
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = tree
    else:
        env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, db], env=env, capture_output=True, check=False, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"the compaction child failed: {done.stderr.strip()[-2000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def _line(row: dict[str, Any]) -> str:
    return (
        f"compaction {row['wall']:.2f} s wall, {row['cpu']:.2f} s CPU in process;"
        f" {row['rows_before']:,.0f} → {row['rows_after']:,.0f} postings rows,"
        f" {row['read']:,.0f} postings read"
    )


if __name__ == "__main__":
    main()
