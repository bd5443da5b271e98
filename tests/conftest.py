"""Shared fixtures: a real SQLite brain on disk, a frozen clock, a real server on loopback, and
a real PostgreSQL server (one per session; each test takes a schema of its own)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import psutil
import pytest
import uvicorn
from fastapi import FastAPI

from nexusbrain.api import create_app
from nexusbrain.api.server import uvicorn_config
from nexusbrain.brain import Brain
from nexusbrain.clock import FrozenClock
from nexusbrain.config import Profile, ServerSettings, Settings
from nexusbrain.storage.base import Backend

from .pgserver import Server

DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"

# A command line that reads and finds no server starts one in the background (cli/autoserve.py).
# The suite's commands, and the processes they start, answer in process as before; the tests
# of the background server (tests/test_autoserve.py) turn it on for their own commands.
os.environ["BRAIN_AUTOSERVE"] = "0"


def background_servers(under: Path) -> list[psutil.Process]:
    """The servers started in the background (cli/autoserve.py) for a brain under `under`."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        command = process.info["cmdline"] or []
        if "nexusbrain.cli.autoserve" in command and any(
            arg.startswith(str(under)) for arg in command
        ):
            found.append(process)
    return found


def no_background_server(under: Path) -> None:
    """Fail if a background server for a brain under `under` is still running (killed first,
    so that none outlives the run)."""
    stray = background_servers(under)
    for process in stray:
        process.kill()
    assert not stray, f"background servers left running: {[p.pid for p in stray]}"


@pytest.fixture(scope="session", autouse=True)
def no_stray_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No background server that a test started outlives the run."""
    yield
    no_background_server(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="session")
def postgres() -> Iterator[Server]:
    """The session's PostgreSQL server (skips without the postgres and test extras). Its
    folder is not under pytest's: the server runs as another user, who must reach it. It is
    stopped however the run ends (tests/pgserver.py)."""
    server = Server()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def postgres_url(postgres: Server) -> str:
    """A brain URL on a fresh schema of the session's server."""
    return postgres.url()


@pytest.fixture
def opened(postgres: Server) -> Iterator[list[Backend]]:
    """Backends a test opens (pgserver.open_url), closed when it ends."""
    backends: list[Backend] = []
    yield backends
    for backend in backends:
        backend.close()


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))


@pytest.fixture
def brain(tmp_path: Path, clock: FrozenClock) -> Iterator[Brain]:
    with Brain.open(
        settings=Settings(db=tmp_path / "brain.db", embedder=Profile.HASHING), clock=clock
    ) as b:
        yield b


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LiveServer:
    url: str
    brain: Brain

    def client(self, **kwargs: object) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30, **kwargs)  # type: ignore[arg-type]


def start_server(
    brain: Brain, settings: ServerSettings, app: FastAPI | None = None
) -> tuple[uvicorn.Server, threading.Thread]:
    server = uvicorn.Server(uvicorn_config(app or create_app(brain, settings), settings, "warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("test server did not start")
        time.sleep(0.01)
    return server, thread


@pytest.fixture
def live_server(brain: Brain) -> Iterator[LiveServer]:
    yield from _serve(brain, ServerSettings(port=free_port()))


@pytest.fixture
def token_server(brain: Brain) -> Iterator[LiveServer]:
    yield from _serve(brain, ServerSettings(port=free_port(), token="s3cret-token"))


def _serve(brain: Brain, settings: ServerSettings) -> Iterator[LiveServer]:
    server, thread = start_server(brain, settings)
    try:
        yield LiveServer(f"http://{settings.host}:{settings.port}", brain)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
