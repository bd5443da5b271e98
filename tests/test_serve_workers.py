"""`serve --workers N`: N forked processes answer on one socket, each with a brain of its own on
the same database; the first process supervises them (real processes, a real socket)."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import psutil

from nexusbrain import discovery

from .test_cli_client import PYTHON, cli_process, environment, start, stop


def workers_of(process: subprocess.Popen[bytes]) -> list[psutil.Process]:
    deadline = time.monotonic() + 30
    while len(found := psutil.Process(process.pid).children()) < 2:
        assert time.monotonic() < deadline, "the workers did not start"
        time.sleep(0.05)
    return found


def test_two_workers_answer_alike_and_stop_with_the_server(tmp_path: Path) -> None:
    db = tmp_path / "brain.db"
    process = start(db, "--workers", "2")
    try:
        workers = workers_of(process)
        assert len(workers) == 2
        added = cli_process("add", "the signing key is in the vault", db=db)
        assert added.code == 0, added.stderr
        for _ in range(12):  # a new connection each: either worker may answer
            found = cli_process("search", "signing key", "--json", db=db)
            assert found.code == 0 and b"the signing key is in the vault" in found.stdout
    finally:
        out = stop(process).decode()
    assert process.returncode == 0
    assert out.startswith("nexusbrain ") and discovery.find(db) is None
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)


def test_a_worker_that_dies_stops_the_server(tmp_path: Path) -> None:
    db = tmp_path / "brain.db"
    process = start(db, "--workers", "2")
    first, second = workers_of(process)
    first.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    assert discovery.find(db) is None
    second.wait(timeout=10)


def test_workers_and_mcp_together_are_a_one_line_error(tmp_path: Path) -> None:
    command = ["-m", "nexusbrain", "--db", str(tmp_path / "b.db"), "serve", "--port", "0"]
    done = subprocess.run(
        [PYTHON, *command, "--workers", "2", "--mcp"],
        env=environment(),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.decode().startswith("error: --workers 2 with --mcp: an MCP session")
