"""The backend conformance suite's fixtures: every test in tests/backend runs once per storage
backend, through the protocols of storage/base.py only. A backend is added by adding it to
BACKENDS (and to `backend_url` and `new_backend`). PostgreSQL tests get a fresh schema of the
session's server each (tests/pgserver.py), and skip only where its packages are missing."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nexusbrain import storage
from nexusbrain.config import LexicalConfig
from nexusbrain.records import (
    ChunkDraft,
    DocumentDraft,
    DocumentKind,
    VectorBatch,
    WriteResult,
)
from nexusbrain.storage.base import Backend

NOW = datetime(2026, 1, 1, tzinfo=UTC)
BACKENDS = ["sqlite", "postgres"]

OpenBackend = Callable[..., Backend]


@pytest.fixture(params=BACKENDS)
def backend_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database for this test."""
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    assert request.param == "sqlite"
    return str(tmp_path / "brain.db")


@pytest.fixture
def open_backend(backend_url: str) -> Iterator[OpenBackend]:
    """Opens the test's database (as often as a test likes: each is closed at the end)."""
    opened: list[Backend] = []

    def opener(lexical: LexicalConfig | None = None) -> Backend:
        backend = storage.open(backend_url, lexical)
        opened.append(backend)
        return backend

    yield opener
    for backend in opened:
        backend.close()


@pytest.fixture
def backend(open_backend: OpenBackend) -> Backend:
    return open_backend()


@pytest.fixture
def new_backend(
    request: pytest.FixtureRequest, backend_url: str, tmp_path: Path
) -> Iterator[Callable[[], Backend]]:
    """Opens another empty database of the same kind (a copy's target, say)."""
    opened: list[Backend] = []
    postgres = request.getfixturevalue("postgres") if "://" in backend_url else None

    def opener() -> Backend:
        target = postgres.url() if postgres else tmp_path / f"other-{len(opened)}.db"
        backend = storage.open(target)
        opened.append(backend)
        return backend

    yield opener
    for backend in opened:
        backend.close()


def draft(
    uri: str = "a.md",
    revision: str = "r1",
    text: str = "alpha beta",
    domain: str = "notes",
    kind: DocumentKind = DocumentKind.MARKDOWN,
) -> DocumentDraft:
    return DocumentDraft(uri, "Title", domain, kind, revision, text, {"x": 1})


def chunk(
    text: str = "alpha beta",
    ordinal: int = 0,
    heading: tuple[str, ...] = ("H",),
    context: str = "",
    text_hash: str | None = None,
) -> ChunkDraft:
    return ChunkDraft(
        ordinal, 0, len(text), 1, 1, heading, text, context=context, text_hash=text_hash
    )


def write(
    backend: Backend,
    document: DocumentDraft,
    chunks: Sequence[ChunkDraft],
    vectors: VectorBatch | None = None,
) -> WriteResult:
    return backend.documents.write_documents([(document, chunks)], NOW, vectors)[0]
