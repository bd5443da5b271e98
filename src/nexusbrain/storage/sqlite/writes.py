"""Document writes in SQLite, inside a write transaction (database.py): a `UnitOfWork`.

Documents are written one by one (a read of the one held under the uri, then its insert or
update and its revision); their chunks a few hundred rows per statement, as FTS5 wants them
(`_PendingChunks`), and so are an import's (`SQLiteChunkImport`, storage/sql/transfer.py's
engine side). Triggers index the chunks and log them in the chunk change log."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson

from nexusbrain.errors import InvalidInput
from nexusbrain.records import ChunkDraft, DocumentDraft, VectorBatch, WriteResult, WriteStatus
from nexusbrain.storage.base import DocumentItems
from nexusbrain.storage.exchange import chunk_values
from nexusbrain.storage.sql.documents import REVISION, edges_revision, retire
from nexusbrain.storage.sql.graph import GraphWrites
from nexusbrain.storage.sqlite import multirow
from nexusbrain.storage.sqlite import vectors as vector_sql
from nexusbrain.storage.sqlite.dialect import SQLITE

# a row per chunk: its id (NULL: the next), then chunk_values' columns (exchange.py)
_CHUNK_INSERT = (
    "INSERT INTO chunks (id, document_id, ordinal, char_start, char_end, line_start, line_end,"
    " heading, text, unit, meta, text_hash, context, signature) VALUES "
)


class SQLiteWork:
    """A `UnitOfWork` on a connection inside a write transaction that its caller commits."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._graph: GraphWrites | None = None

    @property
    def graph(self) -> GraphWrites:
        if self._graph is None:
            self._graph = GraphWrites(self.conn, SQLITE)
        return self._graph

    def write_documents(
        self, items: DocumentItems, now: datetime, vectors: VectorBatch | None = None
    ) -> list[WriteResult]:
        if vectors is not None and vectors.vectors:
            vector_sql.put_vectors(self.conn, vectors)
        pending = _PendingChunks()
        results = [self._write_one(draft, chunks, now, pending) for draft, chunks in items]
        pending.insert(self.conn)
        return results

    def _write_one(
        self,
        draft: DocumentDraft,
        chunks: Sequence[ChunkDraft],
        now: datetime,
        pending: _PendingChunks,
    ) -> WriteResult:
        conn = self.conn
        row = conn.execute(
            "SELECT id, revision, deleted_at FROM documents WHERE uri = ?", (draft.uri,)
        ).fetchone()
        if row is not None and row["id"] in pending.documents:  # the same uri twice
            pending.insert(conn)
        if row is not None and row["revision"] == draft.revision and not row["deleted_at"]:
            count = conn.execute(
                "SELECT count(*) FROM chunks WHERE document_id = ?", (row["id"],)
            ).fetchone()[0]
            return WriteResult(WriteStatus.DUPLICATE, row["id"], draft.revision, count)
        if row is None:
            document_id = self._insert_document(draft, now)
            status = WriteStatus.CREATED
        else:
            document_id = row["id"]
            self._replace_document(document_id, draft, now)
            status = WriteStatus.UPDATED
        pending.add(document_id, chunks)
        stamp = SQLITE.time_param(now)
        conn.execute(REVISION, (document_id, draft.revision, draft.title, status.value, stamp))
        return WriteResult(status, document_id, draft.revision, len(chunks))

    def _insert_document(self, draft: DocumentDraft, now: datetime) -> int:
        stamp = SQLITE.time_param(now)
        cursor = self.conn.execute(
            "INSERT INTO documents (uri, title, domain, kind, revision, content, metadata,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (draft.uri, *_content(draft), stamp, stamp),
        )
        return int(cursor.lastrowid or 0)

    def _replace_document(self, document_id: int, draft: DocumentDraft, now: datetime) -> None:
        self._delete_chunks(document_id)
        self.conn.execute(
            "UPDATE documents SET title = ?, domain = ?, kind = ?, revision = ?, content = ?,"
            " metadata = ?, updated_at = ?, deleted_at = NULL WHERE id = ?",
            (*_content(draft), SQLITE.time_param(now), document_id),
        )

    def _delete_chunks(self, document_id: int) -> None:
        _delete_chunks(self.conn, document_id)

    def retire_documents(self, document_ids: Sequence[int], now: datetime) -> int:
        return retire(self.conn, SQLITE, document_ids, now, self._delete_chunks)

    def edges_revision(self, document_id: int) -> str | None:
        return edges_revision(self.conn, SQLITE, document_id)

    def mark_edges_synced(self, document_id: int, revision: str) -> None:
        self.conn.execute(
            "INSERT INTO note_edges (document_id, revision) VALUES (?, ?)"
            " ON CONFLICT (document_id) DO UPDATE SET revision = excluded.revision",
            (document_id, revision),
        )


def _content(draft: DocumentDraft) -> tuple[Any, ...]:
    """A draft's title, domain, kind, revision, content and metadata (JSON), as stored."""
    metadata = orjson.dumps(dict(draft.metadata)).decode()
    return draft.title, draft.domain, draft.kind.value, draft.revision, draft.content, metadata


class _PendingChunks:
    """The chunk rows of a batch, inserted a few hundred per statement.

    Each statement that writes to FTS5 runs in a statement savepoint, and FTS5 (SQLite 3.40)
    flushes its pending terms into a new segment at every savepoint: inserted one row per
    statement, every chunk made its own tiny segment, and merging them was most of the cost
    of a write."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.documents: set[int] = set()

    def add(self, document_id: int, chunks: Sequence[ChunkDraft]) -> None:
        self.documents.add(document_id)
        self.rows += [(None, document_id, *chunk_values(c)) for c in chunks]

    def insert(self, conn: sqlite3.Connection) -> None:
        for part in multirow.parts(conn, self.rows, 14):
            conn.execute(*multirow.statement(_CHUNK_INSERT, part))
        self.rows.clear()
        self.documents.clear()


def _delete_chunks(conn: sqlite3.Connection, document_id: int) -> None:
    conn.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))


class SQLiteChunkImport:
    """A `ChunkImport` on a connection inside the import's write transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.pending: list[tuple[int, tuple[Any, ...]]] = []  # (record line, row)

    def delete_chunks(self, document_id: int) -> None:
        _delete_chunks(self.conn, document_id)

    def add(self, line: int, values: tuple[Any, ...]) -> None:
        self.pending.append((line, values))
        if len(self.pending) >= multirow.MAX_ROWS:
            self.finish()

    def finish(self) -> None:
        """Insert the pending chunk rows. A statement that fails is undone alone and its rows
        are tried one at a time, so that the error names the record's line."""
        pending, self.pending = self.pending, []
        for part in multirow.parts(self.conn, pending, 14):
            try:
                self.conn.execute(*multirow.statement(_CHUNK_INSERT, [row for _, row in part]))
            except (sqlite3.IntegrityError, sqlite3.InterfaceError):
                for line, row in part:
                    try:
                        self.conn.execute(*multirow.statement(_CHUNK_INSERT, [row]))
                    except (sqlite3.IntegrityError, sqlite3.InterfaceError) as exc:
                        raise InvalidInput(f"import record {line} is invalid: {exc}") from exc
                raise
