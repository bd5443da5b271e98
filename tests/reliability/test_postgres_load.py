"""Load on PostgreSQL: 2 replicas over one schema, 8 writers and 32 readers spread over both,
each writer's notes read back through the other replica: 0 errors, 0 lost writes, every
acknowledged write searchable on either replica, and the database's checks after. 5 s by
default, 60 s marked slow (issue 16's load goal)."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import httpx
import pytest

from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings

from ..pgserver import Server, fresh_schema
from ..postgres_checks import database_checks
from .replicas import Replica

WRITERS, READERS = 8, 32


class _Counts:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.errors: list[str] = []
        self.written: list[str] = []
        self.searches = 0


def _writer(url: str, n: int, stop: threading.Event, counts: _Counts) -> None:
    with httpx.Client(base_url=url, timeout=60) as http:
        i = 0
        while not stop.is_set():
            i += 1
            text = f"writer {n} says the lantern number is zq{n}x{i}"
            answer = http.post("/add", json={"text": text})
            with counts.lock:
                if answer.status_code == 200:
                    counts.written.append(text)
                else:
                    counts.errors.append(f"/add {answer.status_code} {answer.text[:200]}")


def _reader(url: str, n: int, stop: threading.Event, counts: _Counts) -> None:
    words = ["lantern", "number", "writer says", "zq1x1", "harbor"]
    with httpx.Client(base_url=url, timeout=60) as http:
        while not stop.is_set():
            answer = http.get("/search", params={"q": words[n % len(words)], "k": 5})
            with counts.lock:
                counts.searches += 1
                if answer.status_code != 200:
                    counts.errors.append(f"/search {answer.status_code} {answer.text[:200]}")


def _drive(urls: list[str], seconds: float) -> _Counts:
    counts, stop = _Counts(), threading.Event()
    threads = [
        threading.Thread(target=_writer, args=(urls[n % len(urls)], n, stop, counts))
        for n in range(WRITERS)
    ]
    threads += [
        threading.Thread(target=_reader, args=(urls[n % len(urls)], n, stop, counts))
        for n in range(READERS)
    ]
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join(timeout=180)
    return counts


def run_load(postgres: Server, tmp_path: Path, seconds: float) -> None:
    schema = fresh_schema()
    url = postgres.url(schema)
    with Replica(url, tmp_path / "a.log") as a, Replica(url, tmp_path / "b.log") as b:
        counts = _drive([a.url, b.url], seconds)
        rate = (len(counts.written) + counts.searches) / seconds
        print(
            f"load {seconds:g} s on 2 replicas: {len(counts.written)} writes,"
            f" {counts.searches} searches, {rate:.0f} req/s, {len(counts.errors)} errors"
        )
        assert counts.errors == []
        # how many is the machine's business (a loaded one did 96 searches in 5 s): that both
        # kinds ran, and what follows, is the test's
        assert counts.searches > 0 and counts.written
        for text in random.Random(3).sample(counts.written, min(60, len(counts.written))):
            writer = int(text.split()[1])
            other = (b if writer % 2 == 0 else a).url  # the replica that did not take the write
            params = {"q": text.split()[-1], "k": 3, "mode": "conservative"}
            hits = httpx.get(f"{other}/search", params=params, timeout=60).json()["hits"]
            assert hits and hits[0]["text"] == text, text
    with Brain.open(settings=Settings(db=url, embedder=Profile.HASHING)) as brain:
        texts = {r["content"] for r in brain.admin.export() if r["type"] == "document"}
    assert [w for w in counts.written if w not in texts] == []  # nothing acknowledged is lost
    with postgres.connect() as conn:
        database_checks(conn, schema)


@pytest.mark.long
def test_two_replicas_8_writers_32_readers_for_5_seconds(postgres: Server, tmp_path: Path) -> None:
    run_load(postgres, tmp_path, 5)


@pytest.mark.slow
def test_two_replicas_8_writers_32_readers_for_60_seconds(postgres: Server, tmp_path: Path) -> None:
    run_load(postgres, tmp_path, 60)
