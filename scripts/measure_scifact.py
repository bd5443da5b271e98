"""Ingest and search figures on the SciFact corpus, one markdown file per document.

Usage: python scripts/measure_scifact.py [--datasets ../shared/datasets] [--runs 3] [--queries 809]

1. Writes the 5,183 SciFact abstracts as `<id>.md` files ("# title" + abstract) to a temp dir.
2. Ingests them with `nexusbrain ingest-dir` into a fresh database, `--runs` times, and reports
   the median time, docs/s and chunks/s.
3. Ingests the same folder again: every file must be unchanged and the database bytes identical.
4. Measures search latency (k=10, default mode) in process and over HTTP against a real
   `nexusbrain serve` child process, p50 and p95 over the SciFact queries.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from nexusbrain.brain import Brain


def write_corpus(corpus: Path, out: Path) -> int:
    count = 0
    with corpus.open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            text = f"# {doc['title'].strip()}\n\n{doc['text'].strip()}\n"
            (out / f"{doc['_id']}.md").write_text(text, encoding="utf-8")
            count += 1
    return count


def fingerprint(db: Path) -> str:
    digest = hashlib.sha256()
    for suffix in ("", "-wal"):
        part = Path(f"{db}{suffix}")
        if part.exists():
            digest.update(part.read_bytes())
    return digest.hexdigest()


def ingest(folder: Path, db: Path) -> dict[str, float]:
    started = time.perf_counter()
    out = subprocess.run(
        ["nexusbrain", "--db", str(db), "ingest-dir", str(folder), "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    report = json.loads(out.stdout)
    return {**report, "wall_seconds": seconds}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_latencies(db: Path, queries: list[str]) -> list[float]:
    port = free_port()
    env = {**os.environ, "BIND_PORT": str(port)}
    server = subprocess.Popen(
        ["nexusbrain", "--db", str(db), "serve", "--log-level", "warning"], env=env
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            deadline = time.monotonic() + 30
            while True:
                try:
                    http.get("/health")
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            for query in queries[:20]:  # warm-up
                http.get("/search", params={"q": query, "k": 10})
            times = []
            for query in queries:
                started = time.perf_counter()
                response = http.get("/search", params={"q": query, "k": 10})
                times.append((time.perf_counter() - started) * 1000)
                response.raise_for_status()
            return times
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, default=Path("../shared/datasets"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queries", type=int, default=809)
    args = parser.parse_args()
    scifact = args.datasets / "scifact"
    queries = [
        json.loads(line)["text"]
        for line in (scifact / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    ][: args.queries]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "scifact"
        folder.mkdir()
        docs = write_corpus(scifact / "corpus.jsonl", folder)
        runs = []
        for run in range(args.runs):
            db = Path(tmp) / f"run{run}.db"
            runs.append(ingest(folder, db))
            print(f"run {run + 1}: {runs[-1]['wall_seconds']:.2f}s", file=sys.stderr)
        median = statistics.median(r["wall_seconds"] for r in runs)
        chunks = runs[-1]["chunks"]
        before = fingerprint(db)
        again = ingest(folder, db)
        unchanged_no_writes = fingerprint(db) == before
        with Brain.open(db) as brain:
            for query in queries[:20]:
                brain.search(query, k=10)
            in_process = []
            for query in queries:
                started = time.perf_counter()
                brain.search(query, k=10)
                in_process.append((time.perf_counter() - started) * 1000)
        over_http = http_latencies(db, queries)
    result = {
        "docs": docs,
        "chunks": chunks,
        "ingest_runs_seconds": [round(r["wall_seconds"], 3) for r in runs],
        "ingest_median_seconds": round(median, 3),
        "docs_per_second": round(docs / median, 1),
        "chunks_per_second": round(chunks / median, 1),
        "second_run": {k: again[k] for k in ("added", "updated", "unchanged", "deleted")},
        "second_run_wall_seconds": round(again["wall_seconds"], 3),
        "second_run_no_writes": unchanged_no_writes,
        "queries": len(queries),
        "search_in_process_ms": {
            "p50": round(percentile(in_process, 50), 3),
            "p95": round(percentile(in_process, 95), 3),
        },
        "search_http_ms": {
            "p50": round(percentile(over_http, 50), 3),
            "p95": round(percentile(over_http, 95), 3),
        },
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
