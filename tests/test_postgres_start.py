"""A PostgreSQL replica's start: the dense index kept on disk between starts, stamped with the
brain's identity and change seq, so that a start reads the file and the changes since instead
of every vector (storage/postgres/backend.py)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nexusbrain import Brain, storage
from nexusbrain.clock import FrozenClock
from nexusbrain.config import Profile, Settings, StorageConfig
from nexusbrain.embeddings import load_embedder
from nexusbrain.storage.postgres import backend as postgres_backend
from nexusbrain.storage.postgres.backend import drop_brain
from nexusbrain.storage.postgres.url import parse_url

from .pgserver import Server


def _brain(url: str, cache: Path | None) -> Brain:
    settings = Settings(db=url, embedder=Profile.HASHING, storage=StorageConfig(cache_dir=cache))
    opened = storage.open(url, settings.lexical, settings.storage)
    clock = FrozenClock(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    return Brain(opened, load_embedder(Profile.HASHING), settings, clock=clock)


def _texts(brain: Brain, query: str) -> list[str]:
    return [hit.text for hit in brain.search(query, k=3, mode="balanced")]


def test_a_restart_reads_the_dense_index_from_its_file_and_the_changes_since(
    postgres: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(postgres_backend, "CACHE_FROM", 3)  # a brain of 3 chunks is large here
    url = postgres.url()
    with _brain(url, tmp_path) as first:
        for word in ("heron", "marmot", "walrus"):
            first.add_memory(f"the {word} keeps the ledger")
        assert _texts(first, "heron")[0] == "the heron keeps the ledger"
    files = list(tmp_path.glob("postgres-*-vectors-*.npz"))
    assert len(files) == 1
    with _brain(url, None) as other:  # a replica without the file writes meanwhile
        other.add_memory("the okapi keeps the ledger")
    caplog.set_level(logging.INFO, logger="nexusbrain.storage.vector_index")
    with _brain(url, tmp_path) as again:
        assert _texts(again, "okapi")[0] == "the okapi keeps the ledger"
        assert any("from " + str(files[0]) in r.getMessage() for r in caplog.records)
        assert not any("from the store" in r.getMessage() for r in caplog.records)
    drop_brain(parse_url(url), tmp_path)  # as the bench drops its scratch brains
    assert list(tmp_path.iterdir()) == []


def test_a_small_brain_keeps_no_file(postgres: Server, tmp_path: Path) -> None:
    with _brain(postgres.url(), tmp_path) as brain:
        brain.add_memory("the tapir keeps the ledger")
        assert _texts(brain, "tapir") == ["the tapir keeps the ledger"]
    assert list(tmp_path.iterdir()) == []
