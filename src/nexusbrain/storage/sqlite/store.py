"""The SQLite backend's document store: one file in WAL mode (database.py), FTS5 kept in step by
triggers. Its reads are every engine's (storage/sql/documents.py); its writes are writes.py."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from nexusbrain.config import StorageConfig
from nexusbrain.records import StoreStats, VectorBatch
from nexusbrain.storage.base import WritesInOwnUnit
from nexusbrain.storage.sql import transfer
from nexusbrain.storage.sql.documents import DocumentReads
from nexusbrain.storage.sqlite import vectors as vector_sql
from nexusbrain.storage.sqlite.database import SQLiteDatabase
from nexusbrain.storage.sqlite.dialect import SQLITE
from nexusbrain.storage.sqlite.writes import SQLiteChunkImport, SQLiteWork


class SQLiteStore(DocumentReads, WritesInOwnUnit):
    """A `DocumentStore` (and the dense index's `VectorSource`) over one SQLite file. Safe to
    share between threads: each thread gets its own connection."""

    db: SQLiteDatabase
    latest_change = vector_sql.LATEST_CHANGE

    def __init__(self, path: Path | str, config: StorageConfig | None = None) -> None:
        super().__init__(SQLiteDatabase(path, config))

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def unit_of_work(self) -> Iterator[SQLiteWork]:
        with self.db.write() as conn:
            yield SQLiteWork(conn)

    def stats(self) -> StoreStats:
        conn = self.db.connection()
        live, retired = conn.execute(
            "SELECT count(*) FILTER (WHERE deleted_at IS NULL),"
            " count(*) FILTER (WHERE deleted_at IS NOT NULL) FROM documents"
        ).fetchone()
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return StoreStats(
            documents=live,
            retired_documents=retired,
            chunks=chunks,
            db_bytes=self.db.disk_bytes(),
            schema_version=self.db.schema_version(),
        )

    def export_records(self) -> Iterator[dict[str, Any]]:
        """Every record, read in one read transaction on a connection of its own: one
        snapshot, whatever writers do meanwhile (WAL lets them go on), and safe to iterate from
        any thread."""
        schema = self.db.schema_version()
        conn = self.db.reader()
        try:
            conn.execute("BEGIN")
            yield from transfer.export_records(conn, SQLITE, schema)
            conn.execute("COMMIT")
        finally:
            conn.close()

    @contextmanager
    def importing(self) -> Iterator[tuple[sqlite3.Connection, SQLiteChunkImport]]:
        with self.db.write() as conn:
            yield conn, SQLiteChunkImport(conn)

    def load_vectors(
        self, model: str, dim: int, chunk_ids: Sequence[int] | None = None
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]:
        return vector_sql.load_vectors(self.db.connection(), model, dim, chunk_ids)

    def store_vectors(
        self, vectors: VectorBatch, hashes: Mapping[int, str], *, as_of: int | None = None
    ) -> None:
        with self.db.write() as conn:
            vector_sql.put_vectors(conn, vectors)
            vector_sql.set_hashes(conn, hashes, as_of)
