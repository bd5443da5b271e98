"""The SQLite backend: one file in WAL mode holds everything; the dense index lives in memory,
with a cache file beside the database."""

from __future__ import annotations

import hashlib
from contextlib import AbstractContextManager
from pathlib import Path

from nexusbrain.config import LexicalConfig, StorageConfig
from nexusbrain.errors import NotFound
from nexusbrain.storage.base import Vector
from nexusbrain.storage.sql.graph import SQLGraphStore
from nexusbrain.storage.sql.sources import SQLSourceStore
from nexusbrain.storage.sqlite.lexical import SQLiteLexicalIndex
from nexusbrain.storage.sqlite.store import SQLiteStore
from nexusbrain.storage.sqlite.writes import SQLiteWork
from nexusbrain.storage.vector_index import IndexConfig, VectorIndex

PREFIX = "sqlite:///"


def open_url(
    url: str, lexical: LexicalConfig, config: StorageConfig, *, create: bool
) -> SQLiteBackend:
    """The brain in the file at `url`, a path or `sqlite:///path` (`storage.open`'s opener
    for the scheme, and for a URL without one)."""
    if "://" in url:
        if not url.startswith(PREFIX):
            from nexusbrain.storage import unknown_scheme

            raise unknown_scheme(url.split("://", 1)[0])
        url = url.removeprefix(PREFIX)
    path = Path(url).expanduser()
    if not create and not path.exists():
        raise NotFound(f"no brain at {path}: the file does not exist")
    return SQLiteBackend(path, lexical, config)


class SQLiteBackend:
    """A `Backend` over one SQLite file."""

    def __init__(self, path: Path, lexical: LexicalConfig, config: StorageConfig) -> None:
        self.path = path
        self.documents = SQLiteStore(path, config)
        self.graph = SQLGraphStore(self.documents.db)
        self.sources = SQLSourceStore(self.documents.db)
        self.lexical = SQLiteLexicalIndex(self.documents.db.connection, lexical)

    def dense_index(
        self, model: str, dim: int, *, centre: bool, reference: Vector | None = None
    ) -> VectorIndex:
        cache = index_cache_path(self.path, model)
        config = IndexConfig(centre=centre)
        return VectorIndex(
            self.documents, model, dim, cache=cache, config=config, reference=reference
        )

    def unit_of_work(self) -> AbstractContextManager[SQLiteWork]:
        return self.documents.unit_of_work()

    def drop_vectors(self, model: str) -> int:
        dropped = self.documents.drop_vectors(model)
        cache = index_cache_path(self.path, model)
        if cache is not None:
            cache.unlink(missing_ok=True)
        return dropped

    def describe(self) -> str:
        return str(self.path)

    def ping(self) -> None:
        self.documents.db.ping()

    def backup(self, target: Path) -> None:
        self.documents.db.backup(target)

    def close(self) -> None:
        self.documents.close()


def index_cache_path(db_path: Path, model: str) -> Path | None:
    """The vector index's cache file for a model: beside the database, one per model."""
    if str(db_path) == ":memory:":
        return None
    digest = hashlib.sha256(model.encode("utf-8")).hexdigest()[:12]
    return db_path.with_name(f"{db_path.name}.vectors-{digest}.npz")
