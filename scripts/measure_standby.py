"""Read replicas, measured (docs/design/postgres.md, "Read replicas"): write-then-search pairs
through a brain whose reads go to a hot standby, each write looked for by the next search; then
search throughput from client threads with the standby serving reads, against the primary
alone, interleaved.

Usage:
  python scripts/measure_standby.py --db 'postgresql://…&schema=sb' \\
      --read 'postgresql://…standby…' --pairs 1000 --seconds 20 --rounds 2

The brain at --db is made fresh (its schema dropped first) with the hashing embedder, so that
the figures are the storage's and the database's, not the model's.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from datetime import UTC, datetime
from typing import Any

from nexusbrain import Brain, storage
from nexusbrain.clock import FrozenClock
from nexusbrain.config import Profile, Settings, StorageConfig
from nexusbrain.embeddings import load_embedder
from nexusbrain.storage import postgres


def open_brain(url: str, read: tuple[str, ...]) -> Brain:
    settings = Settings(db=url, embedder=Profile.HASHING, storage=StorageConfig(read_urls=read))
    backend = storage.open(url, settings.lexical, settings.storage)
    clock = FrozenClock(datetime(2026, 1, 2, tzinfo=UTC))
    return Brain(backend, load_embedder(Profile.HASHING), settings, clock=clock)


def pairs(brain: Brain, count: int) -> dict[str, Any]:
    found, took = 0, []
    for n in range(count):
        text = f"pair {n}: the standby keeps ledger{n} for the team"
        started = time.perf_counter()
        brain.add_memory(text)
        hits = brain.search(f"ledger{n}", k=3)
        took.append(time.perf_counter() - started)
        found += any(hit.text == text for hit in hits)
    standbys: Any = brain._backend.db.standbys  # type: ignore[attr-defined]
    return {
        "pairs": count,
        "found": found,
        "reads_on_standby": sum(standbys.served),
        "gave_up_waiting": standbys.gave_up,
        "pair_ms_p50": round(statistics.median(took) * 1e3, 2),
        "pair_ms_p95": round(sorted(took)[int(len(took) * 0.95)] * 1e3, 2),
    }


def throughput(brain: Brain, seconds: float, clients: int) -> float:
    words = [f"ledger{n}" for n in range(0, 1000, 7)]
    done = [0] * clients
    stop = time.monotonic() + seconds

    def client(i: int) -> None:
        n = i
        while time.monotonic() < stop:
            brain.search(words[n % len(words)], k=10)
            done[i] += 1
            n += clients

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(done) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--read", required=True, action="append")
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    postgres.drop(args.db)
    with open_brain(args.db, tuple(args.read)) as brain:
        print("write-then-search:", pairs(brain, args.pairs), flush=True)
    for r in range(args.rounds):
        for label, read in (("standby", tuple(args.read)), ("primary", ())):
            with open_brain(args.db, read) as brain:
                brain.search("warm the caches", k=10)
                rate = throughput(brain, args.seconds, args.clients)
                standbys: Any = brain._backend.db.standbys  # type: ignore[attr-defined]
                where = (
                    f" ({sum(standbys.served)} reads on the standby, {standbys.gave_up} waits"
                    " given up)"
                    if standbys is not None
                    else ""
                )
            print(f"round {r + 1}, reads on the {label}: {rate:.1f} searches/s{where}", flush=True)


if __name__ == "__main__":
    main()
