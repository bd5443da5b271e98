"""Real `nexusbrain serve` processes over one PostgreSQL schema (replicas), and the checks that
read a brain through its export, whatever its backend."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import httpx

from ..conftest import free_port
from .checks import Triple, note_triples


class Replica:
    """One `nexusbrain serve` child process on a free loopback port."""

    def __init__(self, db: str, log: Path, env: Mapping[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        environment = {**os.environ, "BRAIN_EMBEDDER": "hashing", **(env or {})}
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "nexusbrain", "--db", db, "serve", "--port", str(self.port)],
                env=environment,
                stdout=out,
                stderr=out,
            )
        self.log = log
        self.wait_until_up()

    def wait_until_up(self, seconds: float = 90) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the replica exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code in (200, 401):
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"no replica at {self.url}: {self.log.read_text()[-2000:]}")

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60, **kwargs)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=60)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def __enter__(self) -> Replica:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def edge_checks(records: Iterable[Mapping[str, Any]]) -> None:
    """Every live note's current edges are what its revision states; no current edge belongs
    to a retired note (read from an export, so for either backend)."""
    stated: dict[int, set[Triple]] = {}
    retired: set[int] = set()
    entities: dict[int, str] = {}
    current: list[Mapping[str, Any]] = []
    for r in records:
        if r["type"] == "document" and r["kind"] == "markdown":
            if r["deleted_at"]:
                retired.add(r["id"])
                continue
            stated[r["id"]] = note_triples(r)
        elif r["type"] == "entity":
            entities[r["id"]] = r["key"]
        elif r["type"] == "relationship" and r["superseded_at"] is None:
            current.append(r)
    held: dict[int, set[Triple]] = {}
    for r in current:
        if (r["source"] or "").startswith("document:"):
            owner = int(r["source"].split(":", 1)[1])
            triple = (entities[r["from_id"]], r["relation"], entities[r["to_id"]])
            held.setdefault(owner, set()).add(triple)
    for document, triples in stated.items():
        assert held.get(document, set()) == triples, document
    assert not set(held) & retired
