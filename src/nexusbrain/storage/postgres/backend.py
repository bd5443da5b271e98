"""The PostgreSQL backend's parts over one schema (`open_url` in __init__.py builds it)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from numpy.typing import NDArray
from psycopg import errors as pg
from psycopg import sql

from nexusbrain.config import LexicalConfig, StorageConfig, cache_dir
from nexusbrain.errors import NotFound, StorageError
from nexusbrain.storage.base import DenseIndex, Vector
from nexusbrain.storage.postgres import hnsw
from nexusbrain.storage.postgres.compaction import Compactor
from nexusbrain.storage.postgres.database import Database, connect, ensure_vector
from nexusbrain.storage.postgres.lexical import PostgresLexicalIndex
from nexusbrain.storage.postgres.migrations import holds_brain, migrate
from nexusbrain.storage.postgres.standby import primary_wal, standby_urls
from nexusbrain.storage.postgres.store import PostgresStore
from nexusbrain.storage.postgres.url import PostgresUrl
from nexusbrain.storage.postgres.writes import PostgresWork
from nexusbrain.storage.sql.graph import SQLGraphStore
from nexusbrain.storage.sql.sources import SQLSourceStore
from nexusbrain.storage.vector_index import IndexConfig, VectorIndex

CACHE_FROM = 10_000  # vectors: a smaller brain's replica keeps no dense index on disk


class PostgresBackend:
    """A `Backend` over one schema of a PostgreSQL database."""

    def __init__(
        self,
        url: PostgresUrl,
        lexical: LexicalConfig,
        config: StorageConfig,
        *,
        create: bool = True,
    ) -> None:
        self.url = url
        self.config = config
        with connect(url) as conn, _refused(url):
            if not create and not holds_brain(conn, url.schema):
                raise NotFound(
                    f"no brain at {url.shown}: schema {url.schema!r} holds none (a command"
                    " that stores, such as add or ingest-dir, makes one)"
                )
            vector = ensure_vector(conn, url)
            migrate(conn, url.schema, vector[1])
            standbys = standby_urls(config.read_urls, url)
            wal = primary_wal(conn) if standbys else (0, 0)
        self.db = Database(url, config, vector, standbys, wal)
        self.documents = PostgresStore(self.db)
        self.graph = SQLGraphStore(self.db)
        self.sources = SQLSourceStore(self.db)
        self.lexical = PostgresLexicalIndex(self.db, lexical)
        self.compactor = Compactor(self.db, self.lexical.live)
        self.compactor.start()

    def dense_index(
        self, model: str, dim: int, *, centre: bool, reference: Vector | None = None
    ) -> DenseIndex:
        """pgvector's HNSW index once one is built for the model (`dense-index build`),
        else the in-process index that every replica keeps."""
        if hnsw.valid_index(self.db, model, dim):
            return hnsw.PgvectorIndex(self.db, model, dim)
        config = IndexConfig(centre=centre, cache_from=CACHE_FROM)
        cache = self._cache_file(model)
        return VectorIndex(
            self.documents, model, dim, cache=cache, config=config, reference=reference
        )

    def _cache_file(self, model: str) -> Path | None:
        """Where this replica keeps the model's dense index between starts, as SQLite keeps
        it beside its file: stamped with the brain's identity and change seq, so that a start
        reads it and the changes since, not every vector. Written only for CACHE_FROM
        vectors or more: below that, reading the vectors takes a moment anyway."""
        folder = self.config.cache_dir
        if folder is None:
            return None
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None
        digest = hashlib.sha256(model.encode("utf-8")).hexdigest()[:12]
        return folder / f"postgres-{self.documents.identity()}-vectors-{digest}.npz"

    # a dense index in the database (base.DenseIndexAdmin)

    def dense_status(self, model: str) -> dict[str, Any]:
        return hnsw.status(self.db, model).as_json()

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
        def live_rows() -> NDArray[np.float16]:
            return self.documents.load_vectors(model, dim)[2].astype(np.float16)

        config = IndexConfig(centre=centre)
        built = hnsw.build(
            self.db,
            live_rows,
            model,
            dim,
            config,
            m=m,
            ef_construction=ef_construction,
            memory=memory,
            progress=progress,
        )
        return built.as_json()

    def drop_dense(self, model: str) -> dict[str, Any]:
        return hnsw.drop(self.db, model).as_json()

    def unit_of_work(self) -> AbstractContextManager[PostgresWork]:
        return self.documents.unit_of_work()

    def drop_vectors(self, model: str) -> int:
        return self.documents.drop_vectors(model)

    def describe(self) -> str:
        shown = self.url.shown
        return shown if "schema=" in shown else f"{shown} (schema {self.url.schema})"

    def ping(self) -> None:
        self.db.ping()

    def backup(self, target: Path) -> None:
        """The brain's export (JSON lines, one snapshot) in `target`: `nexusbrain import`
        restores it into any backend. (A copy of the whole database is pg_dump's job.)"""
        with target.open("xb") as out:
            for record in self.documents.export_records():
                out.write(orjson.dumps(record) + b"\n")

    def close(self) -> None:
        self.compactor.close()
        self.db.close()


@contextmanager
def _refused(url: PostgresUrl) -> Iterator[None]:
    """A role that may not use the schema (another brain's, made by `brains create`) as a
    StorageError naming the fix."""
    try:
        yield
    except pg.InsufficientPrivilege as exc:
        raise StorageError(
            f"the user of {url.shown} lacks a privilege on schema {url.schema!r}"
            f" ({' '.join(str(exc).split())}): connect as the brain's own role, or its owner"
        ) from None


def drop_brain(url: PostgresUrl, cache: Path | None = None) -> None:
    """DROP SCHEMA ... CASCADE of the brain's schema (the caller closed its backends), and
    this machine's dense index files of it in `cache` (default: the user's cache folder)."""
    with connect(url) as conn:
        identity = None
        if holds_brain(conn, url.schema):
            row = conn.execute(
                sql.SQL("SELECT id FROM {}.store_identity").format(sql.Identifier(url.schema))
            ).fetchone()
            identity = row[0] if row else None
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(url.schema)))
    if identity is not None:
        for file in (cache or cache_dir()).glob(f"postgres-{identity}-vectors-*.npz"):
            file.unlink(missing_ok=True)
