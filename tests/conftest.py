"""Shared fixtures: a real SQLite brain on disk, a frozen clock, a real server on loopback, and
a real PostgreSQL server (one per session; each test takes a schema of its own)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
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
