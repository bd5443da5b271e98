"""The real server and CLI as child processes, on a free loopback port with their own database."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import psutil

from nexusbrain.config import child_environment
from nexusbrain.errors import BrainError

HOST = "127.0.0.1"
# Settings of the user's own server that must not leak into the bench's children.
_DROPPED = (
    "BRAIN_API_TOKEN",
    "BRAIN_CAPTURE",
    "BRAIN_DB_PATH",
    "BRAIN_DB_URL",
    "BIND_PORT",
    "BRAIN_BIND_HOST",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def child_env(envelope: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every child: the caller's, minus its server's settings, with the
    loopback exempt from rate limiting so that the bench never trips it."""
    fixed = {"BRAIN_RATE_LIMIT_LOOPBACK": "0", "BRAIN_ENVELOPE": envelope, **(extra or {})}
    return child_environment(_DROPPED, fixed)


def nexusbrain(db: Path | str, *args: str) -> list[str]:
    return [sys.executable, "-m", "nexusbrain", "--db", str(db), *args]


def run_cli(db: Path | str, env: Mapping[str, str], *args: str) -> tuple[dict[str, Any], float]:
    """Run `nexusbrain --db DB ARGS --json`; (its JSON answer, wall seconds)."""
    started = time.perf_counter()
    done = subprocess.run(
        [*nexusbrain(db, *args), "--json"], env=dict(env), capture_output=True, check=False
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-5:]
        raise BrainError(f"nexusbrain {' '.join(args)} failed: {' | '.join(tail)}")
    answer: dict[str, Any] = orjson.loads(done.stdout)
    return answer, seconds


class ChildServer:
    """`nexusbrain serve` in a child process. Use as a context manager; it stops on exit."""

    def __init__(
        self, db: Path | str, env: Mapping[str, str], log_path: Path, workers: int
    ) -> None:
        self.db = db
        self.env = dict(env)
        self.log_path = log_path
        self.workers = workers
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.started_at = 0.0
        self._process: subprocess.Popen[bytes] | None = None
        self._ps: psutil.Process | None = None

    def __enter__(self) -> ChildServer:
        args: tuple[str, ...] = ("serve", "--host", HOST, "--port", str(self.port))
        args += ("--log-level", "warning")
        args += ("--workers", str(self.workers))
        with self.log_path.open("ab") as log:
            self.started_at = time.perf_counter()
            self._process = subprocess.Popen(
                nexusbrain(self.db, *args), env=self.env, stdout=log, stderr=log
            )
        self._ps = psutil.Process(self._process.pid)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def rss(self) -> int:
        """The server's RSS: its workers' too, when it has them. Pages the processes share
        (the forked workers' model, libraries and vector cache) count once per process."""
        return sum(int(p.memory_info().rss) for p in self._processes())

    def pss(self) -> int:
        """The server's proportional set size, summed over its processes: each shared page
        counts once in all, so this is the memory the server holds. Reading it walks each
        process's page tables, so it is read between phases, not sampled under load."""
        return sum(int(p.memory_full_info().pss) for p in self._processes())

    def _processes(self) -> list[psutil.Process]:
        assert self._ps is not None
        return [self._ps, *self._ps.children()]

    def answering(self) -> int:
        """How many processes answer requests: the workers, or the server itself."""
        assert self._ps is not None
        return len(self._ps.children()) or 1

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def check_alive(self) -> None:
        if not self.alive():
            raise BrainError(f"the server exited early; its log: {self.log_tail()}")

    def log_tail(self, lines: int = 8) -> str:
        if not self.log_path.exists():
            return "(no log)"
        text = self.log_path.read_text(encoding="utf-8", errors="replace").strip()
        return " | ".join(text.splitlines()[-lines:]) or "(empty log)"

    def stop(self) -> None:
        process = self._process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
