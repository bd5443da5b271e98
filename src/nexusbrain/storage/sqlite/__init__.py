"""The SQLite backend: one file in WAL mode holds everything; the dense index lives in memory,
with a cache file beside the database."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nexusbrain.config import LexicalConfig, StorageConfig
from nexusbrain.errors import InvalidInput
from nexusbrain.storage.base import Vector
from nexusbrain.storage.sql.graph import SQLGraphStore
from nexusbrain.storage.sqlite.lexical import SQLiteLexicalIndex
from nexusbrain.storage.sqlite.store import SQLiteStore
from nexusbrain.storage.sqlite.writes import SQLiteWork
from nexusbrain.storage.vector_index import IndexConfig, VectorIndex

_IN_PROCESS = (
    "a database-side dense index (pgvector HNSW) is for PostgreSQL brains: a SQLite brain's"
    " dense index is in process (exact up to 20,000 vectors, quantized past that)"
)


class SQLiteBackend:
    """A `Backend` over one SQLite file."""

    def __init__(self, path: Path, lexical: LexicalConfig, config: StorageConfig) -> None:
        self.path = path
        self.store = SQLiteStore(path, config)
        self._graph = SQLGraphStore(self.store.db)
        self._lexical = SQLiteLexicalIndex(self.store.db.connection, lexical)

    @property
    def documents(self) -> SQLiteStore:
        return self.store

    @property
    def graph(self) -> SQLGraphStore:
        return self._graph

    @property
    def lexical(self) -> SQLiteLexicalIndex:
        return self._lexical

    def dense_index(
        self, model: str, dim: int, *, centre: bool, reference: Vector | None = None
    ) -> VectorIndex:
        cache = index_cache_path(self.path, model)
        config = IndexConfig(centre=centre)
        return VectorIndex(self.store, model, dim, cache=cache, config=config, reference=reference)

    def dense_status(self, model: str) -> dict[str, Any]:
        return {"model": model, "kind": "in-process", "built": False}

    def build_dense(
        self,
        model: str,
        dim: int,
        *,
        centre: bool,
        m: int,
        ef_construction: int,
        memory: str,
        progress: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        raise InvalidInput(_IN_PROCESS)

    def drop_dense(self, model: str) -> dict[str, Any]:
        raise InvalidInput(_IN_PROCESS)

    @contextmanager
    def unit_of_work(self) -> Iterator[SQLiteWork]:
        with self.store.unit_of_work() as work:
            yield work

    def describe(self) -> str:
        return str(self.path)

    def ping(self) -> None:
        self.store.db.ping()

    def backup(self, target: Path) -> None:
        self.store.db.backup(target)

    def close(self) -> None:
        self.store.close()


def index_cache_path(db_path: Path, model: str) -> Path | None:
    """The vector index's cache file for a model: beside the database, one per model."""
    if str(db_path) == ":memory:":
        return None
    digest = hashlib.sha256(model.encode("utf-8")).hexdigest()[:12]
    return db_path.with_name(f"{db_path.name}.vectors-{digest}.npz")
