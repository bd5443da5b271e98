"""One server for a SQLite brain at a time, and a discovery file that names a live server
(issue 35.9): real `nexusbrain serve` processes on loopback. A second server on the same
database refuses in one line naming the first; a server killed with SIGKILL leaves a file
that no reader trusts and the next server replaces."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from nexusbrain import discovery
from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings

from .conftest import free_port
from .test_cli_client import PYTHON, cli_process, environment, heavy, start, stop


def brain_file(tmp_path: Path) -> Path:
    db = tmp_path / "brain.db"
    with Brain.open(settings=Settings(db=db, embedder=Profile.HASHING)) as brain:
        brain.add_memory("the staging database moved to db-2")
    return db


def serve(db: Path, port: int) -> subprocess.CompletedProcess[bytes]:
    """`serve` that is expected to refuse: it must end by itself, and soon."""
    return subprocess.run(
        [PYTHON, "-m", "nexusbrain", "--db", str(db), "serve", "--port", str(port)],
        env=environment(),
        capture_output=True,
        timeout=60,
    )


def test_a_second_server_on_the_same_database_refuses_and_names_the_first(
    tmp_path: Path,
) -> None:
    db = brain_file(tmp_path)
    first = start(db)
    try:
        url = discovery.find(db).url  # type: ignore[union-attr]
        second = serve(db, free_port())
        assert second.returncode == 1
        assert second.stderr.decode().splitlines() == [
            f"error: a server for {db} is already running at {url} (pid {first.pid}): use it "
            "(commands find it by themselves), or stop it before serving this database again"
        ]
        info = discovery.find(db)
        assert info is not None and (info.pid, info.url) == (first.pid, url)
        found = cli_process("search", "staging", db=db)  # still through the first server
        assert found.code == 0 and b"db-2" in found.stdout and heavy(found.modules) == []
        same_port = serve(db, int(url.rsplit(":", 1)[1]))  # the same port: the same answer
        assert same_port.returncode == 1 and f"(pid {first.pid})" in same_port.stderr.decode()
    finally:
        stop(first)
    assert not discovery.discovery_path(db).exists()  # type: ignore[union-attr]


def test_a_server_killed_with_sigkill_is_replaced_by_the_next(tmp_path: Path) -> None:
    db = brain_file(tmp_path)
    path = discovery.discovery_path(db)
    assert path is not None
    first = start(db)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    assert json.loads(path.read_text())["pid"] == first.pid  # left behind...
    assert discovery.find(db) is None  # ...and trusted by no reader
    second = start(db)
    try:
        info = discovery.find(db)
        assert info is not None and info.pid == second.pid
        assert json.loads(path.read_text())["pid"] == second.pid
    finally:
        stop(second)
    assert not path.exists()


def test_a_stale_file_naming_a_live_pid_is_not_trusted(tmp_path: Path) -> None:
    # A pid reused by another process (here: this test's) after its server was killed: no
    # process holds the database's claim, so the file names no server.
    db = brain_file(tmp_path)
    first = start(db)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    path = discovery.discovery_path(db)
    assert path is not None
    record = json.loads(path.read_text()) | {"pid": os.getpid()}
    path.write_text(json.dumps(record))
    assert discovery.find(db) is None
    found = cli_process("search", "staging", db=db, BRAIN_EMBEDDER="hashing")
    assert found.code == 0 and b"db-2" in found.stdout and "numpy" in found.modules


def test_two_servers_started_at_once_one_serves_and_the_other_refuses(tmp_path: Path) -> None:
    db = brain_file(tmp_path)
    command = [PYTHON, "-m", "nexusbrain", "--db", str(db), "serve", "--port", "0"]
    both = [
        subprocess.Popen(command, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    try:
        deadline = time.monotonic() + 60
        while all(p.poll() is None for p in both):
            assert time.monotonic() < deadline, "neither server refused"
            time.sleep(0.05)
        refused = next(p for p in both if p.poll() is not None)
        serving = next(p for p in both if p is not refused)
        assert refused.returncode == 1
        message = refused.communicate()[1].decode()
        assert message.startswith(f"error: a server for {db} is ")
        assert f"(pid {serving.pid})" in message
        while (info := discovery.find(db)) is None:
            assert serving.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        assert info.pid == serving.pid
    finally:
        for process in both:
            if process.poll() is None:
                stop(process)


def test_sigterm_stops_a_server_at_any_moment_of_its_start(tmp_path: Path) -> None:
    # SIGTERM was an exception raised from its handler, wherever the process was: raised in a
    # weakref callback of the collector, it was printed and dropped ("Exception ignored"),
    # and the server never stopped. From before it is announced to after, it must stop.
    db = brain_file(tmp_path)
    for delay in (None, 0.0, 0.05, 0.2):
        process = subprocess.Popen(
            [PYTHON, "-m", "nexusbrain", "--db", str(db), "serve", "--port", "0"],
            env=environment(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while delay is not None and discovery.find(db) is None and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(delay or 0.0)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) is not None, delay
        assert discovery.find(db) is None
