"""The PostgreSQL backend's document store: documents, chunks, revisions, the change log,
vectors, captures, stats, export and import, over one brain's schema (database.py)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import orjson
from numpy.typing import NDArray

from nexusbrain.clock import format_time
from nexusbrain.errors import NotFound
from nexusbrain.records import (
    Capture,
    Chunk,
    Document,
    DocumentHead,
    DocumentKind,
    ImportResult,
    SearchFilters,
    StoreStats,
    VectorBatch,
)
from nexusbrain.storage.base import WritesInOwnUnit
from nexusbrain.storage.exchange import HEADING_SEP
from nexusbrain.storage.postgres import copyout, transfer
from nexusbrain.storage.postgres import vectors as vector_sql
from nexusbrain.storage.postgres.database import Database
from nexusbrain.storage.postgres.dialect import POSTGRES
from nexusbrain.storage.postgres.migrations import LATEST
from nexusbrain.storage.postgres.writes import PostgresWork, edges_revision
from nexusbrain.storage.sql.filters import filter_sql

_DOC_COLUMNS = (
    "id, uri, title, domain, kind, revision, content, metadata, created_at, updated_at, deleted_at"
)
_CHUNK_COLUMNS = (
    "c.id, c.document_id, c.ordinal, c.char_start, c.char_end, c.line_start, c.line_end,"
    " c.heading, c.text, c.unit, c.meta, c.context"
)


def _document(row: Sequence[Any]) -> Document:
    return Document(
        id=row[0],
        uri=row[1],
        title=row[2],
        domain=row[3],
        kind=DocumentKind(row[4]),
        revision=row[5],
        content=row[6],
        metadata=orjson.loads(row[7]),
        created_at=row[8],
        updated_at=row[9],
        deleted_at=row[10],
    )


def _chunk(row: Sequence[Any]) -> Chunk:
    heading: str = row[7]
    return Chunk(
        id=row[0],
        document_id=row[1],
        ordinal=row[2],
        char_start=row[3],
        char_end=row[4],
        line_start=row[5],
        line_end=row[6],
        heading_path=tuple(heading.split(HEADING_SEP)) if heading else (),
        text=row[8],
        unit=row[9],
        meta=orjson.loads(row[10]),
        context=row[11],
    )


class PostgresStore(WritesInOwnUnit):
    """A `DocumentStore` (and the dense index's `VectorSource`) over one brain's schema."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # transactions

    @contextmanager
    def unit_of_work(self) -> Iterator[PostgresWork]:
        with self.db.write(deferred=True) as conn:
            work = PostgresWork(conn, self.db.begin)
            yield work
            work.finish()

    def schema_version(self) -> int:
        with self.db.read() as conn:
            row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
        return int(row[0]) if row and row[0] else LATEST

    def identity(self) -> str:
        with self.db.read() as conn:
            row = conn.execute("SELECT id FROM store_identity").fetchone()
        assert row is not None
        return str(row[0])

    # documents

    def get_document(self, document_id: int) -> Document:
        with self.db.read() as conn:
            row = conn.execute(
                f"SELECT {_DOC_COLUMNS} FROM documents WHERE id = %s", (document_id,)
            ).fetchone()
        if row is None:
            raise NotFound(f"no document with id {document_id}")
        return _document(row)

    def find_document(self, uri: str) -> Document | None:
        with self.db.read() as conn:
            row = conn.execute(
                f"SELECT {_DOC_COLUMNS} FROM documents WHERE uri = %s", (uri,)
            ).fetchone()
        return _document(row) if row else None

    def revisions_under(self, uri_prefix: str) -> Mapping[str, str]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT uri, revision FROM documents"
                " WHERE starts_with(uri, %s) AND deleted_at IS NULL",
                (uri_prefix,),
            ).fetchall()
        return {row[0]: row[1] for row in rows}

    def edges_revision(self, document_id: int) -> str | None:
        with self.db.read() as conn:
            return edges_revision(conn, document_id)

    def retired_with_edges(self) -> list[int]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT DISTINCT d.id FROM documents d JOIN relationships r"
                " ON r.source = 'document:' || d.id AND r.superseded_at IS NULL"
                " WHERE d.deleted_at IS NOT NULL ORDER BY d.id"
            ).fetchall()
        return [int(row[0]) for row in rows]

    def edges_behind(self, uri_prefix: str) -> set[str]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT d.uri FROM documents d LEFT JOIN note_edges e ON e.document_id = d.id"
                " WHERE starts_with(d.uri, %s) AND d.deleted_at IS NULL AND d.kind = %s"
                " AND (e.revision IS NULL OR e.revision != d.revision)",
                (uri_prefix, DocumentKind.MARKDOWN.value),
            ).fetchall()
        return {row[0] for row in rows}

    def document_history(self, document_id: int) -> list[Mapping[str, Any]]:
        self.get_document(document_id)
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT revision, title, event, recorded_at FROM document_revisions"
                " WHERE document_id = %s ORDER BY id",
                (document_id,),
            ).fetchall()
        return [
            {"revision": r[0], "title": r[1], "event": r[2], "recorded_at": format_time(r[3])}
            for r in rows
        ]

    # chunks

    def chunks_of(self, document_id: int) -> list[Chunk]:
        with self.db.read() as conn:
            rows = conn.execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks c WHERE c.document_id = %s"
                " ORDER BY c.ordinal",
                (document_id,),
            ).fetchall()
        return [_chunk(row) for row in rows]

    def fetch_chunks(self, chunk_ids: Sequence[int]) -> dict[int, tuple[Chunk, DocumentHead]]:
        if not chunk_ids:
            return {}
        with self.db.read() as conn:
            rows = conn.execute(
                f"SELECT {_CHUNK_COLUMNS}, d.uri, d.title, d.domain, d.kind, d.revision"
                " FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id = ANY(%s)",
                (list(chunk_ids),),
            ).fetchall()
        found: dict[int, tuple[Chunk, DocumentHead]] = {}
        for row in rows:
            head = DocumentHead(row[1], row[12], row[13], row[14], DocumentKind(row[15]), row[16])
            found[row[0]] = (_chunk(row), head)
        return found

    def chunk_ids_matching(self, filters: SearchFilters) -> set[int]:
        where, params = filter_sql(filters, POSTGRES)
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id"
                + (f" WHERE {where}" if where else ""),
                params,
            ).fetchall()
        return {row[0] for row in rows}

    # the chunk change log

    def latest_chunk_change(self) -> int:
        with self.db.read() as conn:
            row = conn.execute("SELECT seq FROM change_head").fetchone()
        return int(row[0]) if row else 0

    def chunk_changes_since(self, seq: int) -> tuple[int, list[int], list[int]]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT seq, chunk_id, added FROM chunk_changes WHERE seq > %s ORDER BY seq",
                (seq,),
            ).fetchall()
        if not rows:
            return seq, [], []
        state: dict[int, bool] = {}
        for _, chunk_id, added in rows:
            state[chunk_id] = added
        added_ids = [c for c, live in state.items() if live]
        gone = [c for c, live in state.items() if not live]
        return int(rows[-1][0]), added_ids, gone

    # vectors

    def known_vector_hashes(self, model: str, hashes: Sequence[str]) -> set[str]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT text_hash FROM vectors WHERE model = %s AND text_hash = ANY(%s)",
                (model, list(hashes)),
            ).fetchall()
        return {row[0] for row in rows}

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

    def chunks_missing_vectors(
        self, model: str, limit: int
    ) -> list[tuple[int, str, Sequence[str], str]]:
        with self.db.read() as conn:
            latest, since = vector_sql.latest_and_covered(conn, model)
            rows = vector_sql.missing_vectors(conn, model, limit, since)
        if not rows:
            self._mark_covered(model, latest, since)
        return rows

    def count_missing_vectors(self, model: str) -> int:
        """Only chunks changed since the model's vectors were last found complete are looked
        at (every chunk, the first time), so that the check after each ingest stays cheap."""
        with self.db.read() as conn:
            latest, since = vector_sql.latest_and_covered(conn, model)
            missing = vector_sql.count_missing(conn, model, since)
        if not missing:
            self._mark_covered(model, latest, since)
        return missing

    def _mark_covered(self, model: str, latest: int, since: int | None) -> None:
        if since is None or latest > since:
            with self.db.read("database write failed") as conn:
                vector_sql.mark_covered(conn, model, latest)

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

    # everything else

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

    def record_capture(self, capture: Capture, max_rows: int) -> None:
        with self.db.read("recording a capture failed") as conn, conn.transaction():
            conn.execute(
                "INSERT INTO captures (at, operation, query, mode, filters, results, latency_ms)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (
                    capture.at,
                    capture.operation,
                    capture.query,
                    capture.mode,
                    orjson.dumps(dict(capture.filters)).decode(),
                    orjson.dumps(list(capture.results)).decode(),
                    capture.latency_ms,
                ),
            )
            conn.execute(
                "DELETE FROM captures WHERE id <= (SELECT max(id) FROM captures) - %s",
                (max_rows,),
            )

    def captures(self) -> Iterator[Capture]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT at, operation, query, mode, filters, results, latency_ms FROM captures"
                " ORDER BY id"
            ).fetchall()
        for row in rows:
            yield Capture(
                at=row[0],
                operation=row[1],
                query=row[2],
                mode=row[3],
                filters=orjson.loads(row[4]),
                results=tuple(orjson.loads(row[5])),
                latency_ms=row[6],
            )

    def export_records(self) -> Iterator[dict[str, Any]]:
        """Every record, read in one REPEATABLE READ snapshot on a connection of its own:
        writers go on meanwhile, and it may be iterated from any thread."""
        with self.db.errors("export failed"), self.db.connection() as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                schema = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
                yield from transfer.export_records(conn, int(schema[0]) if schema else LATEST)
            finally:
                conn.execute("ROLLBACK")

    def import_records(
        self, records: Iterable[Mapping[str, Any]], functional: frozenset[str] = frozenset()
    ) -> ImportResult:
        with self.unit_of_work() as work:
            return transfer.import_records(work.conn, records, work.log, functional)
