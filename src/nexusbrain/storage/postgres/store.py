"""The PostgreSQL backend's document store over one brain's schema (database.py). Its reads are
every engine's (storage/sql/documents.py); its writes are writes.py; here are its vector rows,
its stats, and the snapshot it exports from."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from numpy.typing import NDArray

from nexusbrain.records import StoreStats, VectorBatch
from nexusbrain.storage.base import WritesInOwnUnit
from nexusbrain.storage.postgres import copyout
from nexusbrain.storage.postgres.database import Database
from nexusbrain.storage.postgres.dialect import POSTGRES
from nexusbrain.storage.postgres.migrations import LATEST
from nexusbrain.storage.postgres.transfer import Conn, PostgresChunkImport
from nexusbrain.storage.postgres.writes import PostgresWork
from nexusbrain.storage.sql import transfer
from nexusbrain.storage.sql.documents import DocumentReads


class PostgresStore(DocumentReads, WritesInOwnUnit):
    """A `DocumentStore` (and the dense index's `VectorSource`) over one brain's schema."""

    db: Database
    latest_change = "SELECT seq FROM change_head"

    def __init__(self, db: Database) -> None:
        super().__init__(db)

    @contextmanager
    def unit_of_work(self) -> Iterator[PostgresWork]:
        with self.db.write(deferred=True) as conn:
            work = PostgresWork(conn, self.db.begin)
            yield work
            self.db.at_commit(work.finish())

    def load_vectors(
        self, model: str, dim: int, chunk_ids: Sequence[int] | None = None
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]:
        query = (
            "SELECT c.id, c.document_id, v.embedding FROM chunks c"
            " JOIN vectors v ON v.model = %s AND v.text_hash = c.text_hash"
        )
        params: list[Any] = [model]
        if chunk_ids is not None:
            query += " WHERE c.id = ANY(%s)"
            params.append(list(chunk_ids))
        with self.db.read() as conn:
            ids, docs, half = copyout.ids_and_halfvecs(conn, query + " ORDER BY c.id", params, dim)
        return ids, docs, half.astype(np.float32)

    def store_vectors(
        self, vectors: VectorBatch, hashes: Mapping[int, str], *, as_of: int | None = None
    ) -> None:
        """With `as_of` (a change seq read before the chunks were), a chunk changed since keeps
        its hash: its id may now be another text's (the background embedder's case)."""
        with self.unit_of_work() as work:
            kept = dict(hashes)
            if as_of is not None and kept:
                changed = work.conn.execute(
                    "SELECT DISTINCT chunk_id FROM chunk_changes WHERE seq > %s"
                    " AND chunk_id = ANY(%s)",
                    (as_of, list(kept)),
                ).fetchall()
                for (chunk_id,) in changed:
                    kept.pop(int(chunk_id), None)
            work.store_vectors(vectors, kept)

    def stats(self) -> StoreStats:
        with self.db.read() as conn:
            row = conn.execute(
                "SELECT count(*) FILTER (WHERE deleted_at IS NULL),"
                " count(*) FILTER (WHERE deleted_at IS NOT NULL),"
                " (SELECT chunks FROM change_head),"
                " (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
                "  WHERE c.relnamespace = %s::regnamespace AND c.relkind IN ('r', 'm')),"
                " (SELECT max(version) FROM schema_migrations)"
                " FROM documents",
                (self.db.url.schema,),
            ).fetchone()
        assert row is not None
        return StoreStats(
            documents=int(row[0]),
            retired_documents=int(row[1]),
            chunks=int(row[2]),
            db_bytes=int(row[3]),
            schema_version=int(row[4]),
        )

    def export_records(self) -> Iterator[dict[str, Any]]:
        """Every record, read in one REPEATABLE READ snapshot on a connection of its own:
        writers go on meanwhile, and it may be iterated from any thread."""
        with self.db.errors("export failed"), self.db.connection() as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
                schema = int(row[0]) if row and row[0] else LATEST
                yield from transfer.export_records(conn, POSTGRES, schema)
            finally:
                conn.execute("ROLLBACK")

    @contextmanager
    def importing(self) -> Iterator[tuple[Conn, PostgresChunkImport]]:
        with self.unit_of_work() as work:
            yield work.conn, PostgresChunkImport(work.conn, work.log)
