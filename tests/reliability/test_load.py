"""Load: 8 writers and 32 readers against a real server on loopback, with exports streaming and
a CLI process writing to the same file meanwhile: 0 errors, 0 lost writes, every acknowledged
write searchable. 10 s by default, 60 s marked slow."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import orjson
import pytest

from ..conftest import free_port
from .checks import file_checks, logical_checks
from .test_crash import _wait_for, nexusbrain

ENV = {**os.environ, "BRAIN_EMBEDDER": "hashing"}
WRITERS, READERS = 8, 32


def run_load(tmp_path: Path, seconds: float) -> None:
    db = tmp_path / "brain.db"
    port = free_port()
    server = subprocess.Popen(
        nexusbrain(db, "serve", "--port", str(port)),
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(url)
        errors, written, counts = _drive(db, url, seconds)
        print(f"load {seconds:g} s: {len(written)} writes, {counts}, {len(errors)} errors")
        assert errors == []
        assert counts["searches"] > 100 and counts["exports"] >= 1 and counts["cli"] >= 1
        with httpx.Client(base_url=url, timeout=60) as http:
            exported = [orjson.loads(line) for line in http.get("/export").content.splitlines()]
            texts = {r["content"] for r in exported if r["type"] == "document"}
            assert [w for w in written if w not in texts] == []  # nothing acknowledged is lost
            for text in random.Random(3).sample(written, min(60, len(written))):
                token = text.split()[-1]
                params = {"q": token, "k": 3, "mode": "conservative"}
                hits = http.get("/search", params=params).json()["hits"]
                assert hits and hits[0]["text"] == text, token
    finally:
        server.terminate()
        server.wait(timeout=60)
    file_checks(db)
    logical_checks(db)


def _drive(db: Path, url: str, seconds: float) -> tuple[list[str], list[str], dict[str, int]]:
    errors: list[str] = []
    written: list[str] = []
    counts = {"searches": 0, "exports": 0, "cli": 0}
    stop = threading.Event()
    lock = threading.Lock()

    def writer(n: int) -> None:
        with httpx.Client(base_url=url, timeout=60) as http:
            i = 0
            while not stop.is_set():
                i += 1
                text = f"writer {n} says the lantern number is zq{n}x{i}"
                answer = http.post("/add", json={"text": text})
                with lock:
                    if answer.status_code == 200:
                        written.append(text)
                    else:
                        errors.append(f"/add {answer.status_code} {answer.text[:200]}")

    def reader(n: int) -> None:
        words = ["lantern", "number", "writer says", "zq1x1", "harbor"]
        with httpx.Client(base_url=url, timeout=60) as http:
            while not stop.is_set():
                answer = http.get("/search", params={"q": words[n % len(words)], "k": 5})
                with lock:
                    counts["searches"] += 1
                    if answer.status_code != 200:
                        errors.append(f"/search {answer.status_code} {answer.text[:200]}")

    def exporter() -> None:
        with httpx.Client(base_url=url, timeout=120) as http:
            while not stop.is_set():
                answer = http.get("/export")
                with lock:
                    counts["exports"] += 1
                    if answer.status_code != 200:
                        errors.append(f"/export {answer.status_code}")

    def cli_writer() -> None:
        while not stop.is_set():
            text = f"the cli wrote lantern note zqcli{counts['cli']}"
            done = subprocess.run(
                # --local: a second process writing the same file, not a client of the server
                [sys.executable, "-m", "nexusbrain", "--local", "--db", str(db), "add", text],
                env=ENV,
                capture_output=True,
                timeout=120,
            )
            with lock:
                counts["cli"] += 1
                if done.returncode == 0:
                    written.append(text)
                else:
                    errors.append(f"cli add: {done.stderr.decode()[-300:]}")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    threads += [threading.Thread(target=reader, args=(n,)) for n in range(READERS)]
    threads += [threading.Thread(target=exporter), threading.Thread(target=cli_writer)]
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join(timeout=180)
    return errors, written, counts


@pytest.mark.long
def test_writers_readers_exports_and_the_cli_for_10_seconds(tmp_path: Path) -> None:
    run_load(tmp_path, 10)


@pytest.mark.slow
def test_writers_readers_exports_and_the_cli_for_60_seconds(tmp_path: Path) -> None:
    run_load(tmp_path, 60)
