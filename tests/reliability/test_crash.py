"""Crash: `kill -9` of `ingest-dir` and of the server at random moments, then the file and
logical checks (checks.py), every acknowledged write present, and a re-run that converges.
3 trials each by default, 25 marked slow."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from ..conftest import free_port
from .checks import file_checks, logical_checks, matches_folder, open_brain, vectors_complete

ENV = {**os.environ, "BRAIN_EMBEDDER": "hashing"}
NOTES = 120


def note(i: int, edition: int) -> str:
    links = " ".join(f"[[Note {(i * 7 + j + edition) % NOTES}]]" for j in range(3))
    body = " ".join(f"word{(i * 13 + j * edition) % 97}" for j in range(60))
    return f"# Note {i}\n\nEdition {edition}. See {links}.\n\n{body}\n"


def mutate(vault: Path, rng: random.Random, edition: int) -> None:
    """Edit, delete and add some notes, as a working day would."""
    for i in rng.sample(range(NOTES), 30):
        path = vault / f"note-{i}.md"
        if rng.random() < 0.2 and path.exists():
            path.unlink()
        else:
            path.write_text(note(i, edition), encoding="utf-8")


def nexusbrain(db: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "nexusbrain", "--db", str(db), *args]


# Runs `ingest-dir` with every SQLite connection counting its virtual-machine steps (in
# thousands); with a limit, the process kills itself with SIGKILL when the count reaches it:
# a crash at a random point of the database work, inside a transaction or between two.
CHILD = """
import os, signal, sqlite3, sys
limit = int(sys.argv[1])
steps = [0]
def tick():
    steps[0] += 1
    if limit and steps[0] >= limit:
        os.kill(os.getpid(), signal.SIGKILL)
    return 0
connect = sqlite3.connect
def counted(*args, **kwargs):
    conn = connect(*args, **kwargs)
    conn.set_progress_handler(tick, 1000)
    return conn
sqlite3.connect = counted
from nexusbrain.cli.main import cli
try:
    cli(["--db", sys.argv[2], "ingest-dir", sys.argv[3]], prog_name="nexusbrain")
finally:
    print(steps[0], file=sys.stderr)
"""


def run_ingest(db: Path, vault: Path, limit: int) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(limit), str(db), str(vault)],
        env=ENV,
        capture_output=True,
        timeout=120,
    )


def ingest_dir_trials(tmp_path: Path, trials: int, seed: int) -> None:
    rng = random.Random(seed)
    db, vault = tmp_path / "brain.db", tmp_path / "vault"
    vault.mkdir()
    for i in range(NOTES):
        (vault / f"note-{i}.md").write_text(note(i, 0), encoding="utf-8")
    kills = 0
    for trial in range(1, trials + 1):
        mutate(vault, rng, trial)
        probe = tmp_path / "probe.db"
        if db.exists():
            for part in tmp_path.glob("brain.db*"):
                shutil.copy(part, tmp_path / part.name.replace("brain", "probe"))
        steps = int(run_ingest(probe, vault, 0).stderr.split()[-1])  # the whole run's work
        for part in tmp_path.glob("probe.db*"):
            part.unlink()
        killed = run_ingest(db, vault, rng.randint(1, max(1, steps)))
        assert killed.returncode in (0, -signal.SIGKILL), killed.stderr.decode()
        kills += killed.returncode == -signal.SIGKILL
        file_checks(db)
        logical_checks(db)
        rerun = run_ingest(db, vault, 0)
        assert rerun.returncode == 0, rerun.stderr.decode()
        file_checks(db)
        logical_checks(db)
        matches_folder(db, vault)
        with open_brain(db) as brain:
            vectors_complete(brain)
    print(f"ingest-dir kills: {trials} trials, {kills} killed mid-run, all checks held")
    assert kills >= trials - 1  # a limit past the run's own work lets it finish


def server_trials(tmp_path: Path, trials: int, seed: int) -> None:
    rng = random.Random(seed)
    db = tmp_path / "brain.db"
    acknowledged: list[tuple[str, str]] = []  # (kind, uri or text) of every 200
    for trial in range(trials):
        port = free_port()
        server = subprocess.Popen(
            nexusbrain(db, "serve", "--port", str(port)),
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        _wait_for(url)
        stop = threading.Event()

        def write(
            worker: int, trial: int = trial, url: str = url, stop: threading.Event = stop
        ) -> None:
            with httpx.Client(base_url=url, timeout=30) as http:
                i = 0
                while not stop.is_set():
                    i += 1
                    try:
                        if i % 2:
                            text = f"trial {trial} worker {worker} memory {i}"
                            if http.post("/add", json={"text": text}).status_code == 200:
                                acknowledged.append(("memory", text))
                        else:
                            uri = f"notes/t{trial}-w{worker}-{i}.md"
                            body = {
                                "title": f"T{trial} W{worker} {i}",
                                "uri": uri,
                                "content": f"# T\n\nLinks [[Hub {i % 5}]] here.",
                            }
                            if http.post("/ingest/markdown", json=body).status_code == 200:
                                acknowledged.append(("note", uri))
                    except httpx.HTTPError:
                        return  # the server is gone

        writers = [threading.Thread(target=write, args=(w,)) for w in range(3)]
        for writer in writers:
            writer.start()
        time.sleep(rng.uniform(0.5, 2.0))
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=60)
        stop.set()
        for writer in writers:
            writer.join(timeout=60)
        file_checks(db)
        logical_checks(db)
    with open_brain(db) as brain:
        records = list(brain.admin.export())
        vectors_complete(brain)
    uris = {r["uri"] for r in records if r["type"] == "document"}
    texts = {r["content"] for r in records if r["type"] == "document"}
    notes = [u for kind, u in acknowledged if kind == "note"]
    memories = [t for kind, t in acknowledged if kind == "memory"]
    assert notes and memories
    lost = [u for u in notes if u not in uris] + [t for t in memories if t not in texts]
    print(
        f"server kills: {trials} trials, {len(acknowledged)} acknowledged writes, {len(lost)} lost"
    )
    assert lost == []


def _wait_for(url: str) -> None:
    """Until the server at `url` answers /health. Generous: on a loaded machine a server can
    take a minute to start and seconds to answer (a 1 s timeout a try failed every try)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=15).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise AssertionError(f"no server at {url}")


@pytest.mark.long
def test_kill_9_of_ingest_dir(tmp_path: Path) -> None:
    ingest_dir_trials(tmp_path, trials=3, seed=1)


@pytest.mark.long
def test_kill_9_of_the_server(tmp_path: Path) -> None:
    server_trials(tmp_path, trials=3, seed=2)


@pytest.mark.slow
def test_kill_9_of_ingest_dir_25_times(tmp_path: Path) -> None:
    ingest_dir_trials(tmp_path, trials=25, seed=11)


@pytest.mark.slow
def test_kill_9_of_the_server_25_times(tmp_path: Path) -> None:
    server_trials(tmp_path, trials=25, seed=12)
