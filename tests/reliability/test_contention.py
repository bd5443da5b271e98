"""Contention is never a 500: a write that waits out SQLite's busy timeout behind another
process's writer is answered 503 with Retry-After, and goes through once the lock is gone."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from nexusbrain.api.errors import status_of
from nexusbrain.brain import Brain
from nexusbrain.config import Profile, ServerSettings, Settings, StorageConfig
from nexusbrain.errors import Busy, StorageError
from nexusbrain.storage.sqlite.store import SQLiteStore

from ..conftest import _serve, free_port
from ..test_api import assert_error


@contextmanager
def another_writer(db: Path) -> Iterator[sqlite3.Connection]:
    """A second connection, as another process's, holding the database's write lock."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    finally:
        conn.execute("ROLLBACK")
        conn.close()


@pytest.fixture
def impatient_brain(tmp_path: Path) -> Iterator[Brain]:
    db = tmp_path / "brain.db"
    impatient = StorageConfig(busy_timeout_ms=50)
    settings = Settings(db=db, embedder=Profile.HASHING, storage=impatient)
    with Brain.open(settings=settings) as brain:
        yield brain


def test_a_write_behind_another_writer_is_a_503_with_retry_after(
    impatient_brain: Brain, tmp_path: Path
) -> None:
    for server in _serve(impatient_brain, ServerSettings(port=free_port())):
        with server.client() as http:
            with another_writer(tmp_path / "brain.db"):
                busy = http.post("/add", json={"text": "written while locked"})
                assert_error(busy, 503, "busy")
                assert busy.headers["retry-after"] == "1"
                assert http.get("/health").status_code == 200  # reads still answer
            assert http.post("/add", json={"text": "written while locked"}).status_code == 200
            assert http.get("/stats").json()["documents"] == 1


def test_the_store_names_a_lock_it_waited_out_as_busy(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    store = SQLiteStore(db, StorageConfig(busy_timeout_ms=20))
    busy = pytest.raises(Busy, match="another writer held the database")
    with another_writer(db), busy, store.db.write():
        pass
    store.close()
    assert status_of(Busy("the database is busy")) == 503
    assert status_of(StorageError("disk I/O error")) == 500
