"""Document writes in PostgreSQL, inside a write transaction (database.py): documents, their
revision history, chunks with their postings, vectors, and the chunk change log.

Chunks and postings go in by COPY. Every chunk added, removed or re-hashed is noted, and the
notes are logged in `chunk_changes` at the end of the transaction (`ChangeLog.flush`), after
`change_head` hands out their seqs: its row lock is held to COMMIT, so seqs are given in
commit order and a reader that sees head S has every change up to S.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import orjson
import psycopg

from nexusbrain.records import (
    ChunkDraft,
    DocumentDraft,
    VectorBatch,
    WriteResult,
    WriteStatus,
)
from nexusbrain.storage.base import DocumentItems
from nexusbrain.storage.exchange import HEADING_SEP
from nexusbrain.storage.graph_base import GraphSession
from nexusbrain.storage.postgres.graph import GraphWrites
from nexusbrain.storage.postgres.postings import POSTINGS_COPY, Segment, copy_stream

CHUNK_COLUMNS = (
    "id, pid, length, document_id, ordinal, char_start, char_end, line_start, line_end,"
    " heading, text, unit, meta, text_hash, context"
)


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A chunk as stored (`id` None: the next from the table's sequence)."""

    id: int | None
    document_id: int
    ordinal: int
    char_start: int
    char_end: int
    line_start: int
    line_end: int
    heading: str
    text: str
    unit: str | None
    meta: str
    text_hash: str | None
    context: str


def chunk_row(document_id: int, c: ChunkDraft) -> ChunkRow:
    return ChunkRow(
        None,
        document_id,
        c.ordinal,
        c.char_start,
        c.char_end,
        c.line_start,
        c.line_end,
        HEADING_SEP.join(c.heading_path),
        c.text,
        c.unit,
        orjson.dumps(dict(c.meta)).decode(),
        c.text_hash,
        c.context,
    )


class ChangeLog:
    """The chunk changes of one transaction, in order, logged when it ends."""

    def __init__(self) -> None:
        self.events: list[tuple[int, int, bool]] = []  # (chunk id, pid, added)
        self.chunks = 0  # live chunks gained
        self.tokens = 0  # tokens gained

    def added(self, chunk_id: int, pid: int, length: int) -> None:
        self.events.append((chunk_id, pid, True))
        self.chunks += 1
        self.tokens += length

    def removed(self, chunk_id: int, pid: int, length: int) -> None:
        self.events.append((chunk_id, pid, False))
        self.chunks -= 1
        self.tokens -= length

    def rehashed(self, chunk_id: int, pid: int) -> None:
        self.events.append((chunk_id, pid, True))

    def flush(self, conn: psycopg.Connection[Any]) -> None:
        if not self.events:
            return
        n = len(self.events)
        row = conn.execute(
            "UPDATE change_head SET seq = seq + %s, chunks = chunks + %s, tokens = tokens + %s"
            " RETURNING seq",
            (n, self.chunks, self.tokens),
        ).fetchone()
        assert row is not None
        first = int(row[0]) - n + 1
        with (
            conn.cursor() as cursor,
            cursor.copy("COPY chunk_changes (seq, chunk_id, pid, added) FROM STDIN") as copy,
        ):
            for offset, (chunk_id, pid, added) in enumerate(self.events):
                copy.write_row((first + offset, chunk_id, pid, added))
        self.events.clear()
        self.chunks = self.tokens = 0


def insert_chunks(conn: psycopg.Connection[Any], rows: Sequence[ChunkRow], log: ChangeLog) -> None:
    """Insert chunk rows (with their postings): one COPY for the chunks, one for the postings."""
    if not rows:
        return
    fresh = sum(1 for r in rows if r.id is None)
    numbers = conn.execute(
        "SELECT nextval('chunk_pids'),"
        " CASE WHEN n <= %s THEN nextval(pg_get_serial_sequence('chunks', 'id')) END"
        " FROM generate_series(1, %s) AS n",
        (fresh, len(rows)),
    ).fetchall()
    segment_row = conn.execute("SELECT nextval('postings_segments')").fetchone()
    assert segment_row is not None
    segment = Segment()
    new_ids = iter(r[1] for r in numbers if r[1] is not None)
    with conn.cursor() as cursor, cursor.copy(f"COPY chunks ({CHUNK_COLUMNS}) FROM STDIN") as copy:
        for row, (pid, _) in zip(rows, numbers, strict=True):
            chunk_id = row.id if row.id is not None else next(new_ids)
            length = segment.add(pid, row.text, row.heading, row.context)
            copy.write_row(
                (
                    chunk_id,
                    pid,
                    length,
                    row.document_id,
                    row.ordinal,
                    row.char_start,
                    row.char_end,
                    row.line_start,
                    row.line_end,
                    row.heading,
                    row.text,
                    row.unit,
                    row.meta,
                    row.text_hash,
                    row.context,
                )
            )
            log.added(chunk_id, pid, length)
    if segment:
        with conn.cursor() as cursor, cursor.copy(POSTINGS_COPY) as copy:
            copy.write(segment.copy_payload(int(segment_row[0])))


def delete_chunks(conn: psycopg.Connection[Any], document_id: int, log: ChangeLog) -> None:
    for chunk_id, pid, length in conn.execute(
        "DELETE FROM chunks WHERE document_id = %s RETURNING id, pid, length", (document_id,)
    ).fetchall():
        log.removed(chunk_id, pid, length)


def put_vectors(conn: psycopg.Connection[Any], batch: VectorBatch) -> None:
    """Store new vectors as halfvec (what the dense index reads: it keeps float16 rows), once
    per (model, text hash): one already stored by a concurrent writer is left as it is."""
    if not batch.vectors:
        return
    model = batch.model.encode("utf-8")
    parts: list[bytes] = []
    for text_hash, blob in batch.vectors.items():
        values = np.frombuffer(blob, np.float32).astype(">f2").tobytes()
        digest = text_hash.encode("utf-8")
        parts += (
            struct.pack(">hi", 4, len(model)),
            model,
            struct.pack(">i", len(digest)),
            digest,
            struct.pack(">iii", 4, batch.dim, 4 + 2 * batch.dim),
            struct.pack(">hh", batch.dim, 0),
            values,
        )
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS incoming_vectors (model text, text_hash text,"
        " dim integer, embedding halfvec) ON COMMIT DELETE ROWS"
    )
    with (
        conn.cursor() as cursor,
        cursor.copy("COPY incoming_vectors FROM STDIN (FORMAT BINARY)") as copy,
    ):
        copy.write(copy_stream([b"".join(parts)]))
    conn.execute(
        "INSERT INTO vectors (model, text_hash, dim, embedding)"
        " SELECT model, text_hash, dim, embedding FROM incoming_vectors ON CONFLICT DO NOTHING"
    )
    conn.execute("DELETE FROM incoming_vectors")


class PostgresWork:
    """A `UnitOfWork` on a connection inside a write transaction that its caller commits,
    after `finish` has logged the chunk changes."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self.log = ChangeLog()

    @property
    def graph(self) -> GraphSession:
        return GraphWrites(self.conn)

    def finish(self) -> None:
        self.log.flush(self.conn)

    def write_documents(
        self, items: DocumentItems, now: datetime, vectors: VectorBatch | None = None
    ) -> list[WriteResult]:
        if vectors is not None:
            put_vectors(self.conn, vectors)
        results = []
        pending: list[ChunkRow] = []
        for draft, chunks in items:
            result, rows = self._write_one(draft, chunks, now, pending)
            results.append(result)
            pending += rows
        insert_chunks(self.conn, pending, self.log)
        return results

    def _write_one(
        self,
        draft: DocumentDraft,
        chunks: Sequence[ChunkDraft],
        now: datetime,
        pending: list[ChunkRow],
    ) -> tuple[WriteResult, list[ChunkRow]]:
        conn = self.conn
        row = conn.execute(
            "SELECT id, revision, deleted_at FROM documents WHERE uri = %s", (draft.uri,)
        ).fetchone()
        if row is not None and any(p.document_id == row[0] for p in pending):
            insert_chunks(conn, pending, self.log)  # the same uri twice in one batch
            pending.clear()
        if row is not None and row[1] == draft.revision and row[2] is None:
            count = conn.execute(
                "SELECT count(*) FROM chunks WHERE document_id = %s", (row[0],)
            ).fetchone()
            held = int(count[0]) if count else 0
            return WriteResult(WriteStatus.DUPLICATE, row[0], draft.revision, held), []
        if row is None:
            document_id = self._insert_document(draft, now)
            status = WriteStatus.CREATED
        else:
            document_id = int(row[0])
            self._replace_document(document_id, draft, now)
            status = WriteStatus.UPDATED
        self._record_revision(document_id, draft.revision, draft.title, status, now)
        rows = [chunk_row(document_id, c) for c in chunks]
        return WriteResult(status, document_id, draft.revision, len(chunks)), rows

    def _insert_document(self, draft: DocumentDraft, now: datetime) -> int:
        row = self.conn.execute(
            "INSERT INTO documents (uri, title, domain, kind, revision, content, metadata,"
            " created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (
                draft.uri,
                draft.title,
                draft.domain,
                draft.kind.value,
                draft.revision,
                draft.content,
                orjson.dumps(dict(draft.metadata)).decode(),
                now,
                now,
            ),
        ).fetchone()
        assert row is not None
        return int(row[0])

    def _replace_document(self, document_id: int, draft: DocumentDraft, now: datetime) -> None:
        delete_chunks(self.conn, document_id, self.log)
        self.conn.execute(
            "UPDATE documents SET title = %s, domain = %s, kind = %s, revision = %s,"
            " content = %s, metadata = %s, updated_at = %s, deleted_at = NULL WHERE id = %s",
            (
                draft.title,
                draft.domain,
                draft.kind.value,
                draft.revision,
                draft.content,
                orjson.dumps(dict(draft.metadata)).decode(),
                now,
                document_id,
            ),
        )

    def _record_revision(
        self, document_id: int, revision: str, title: str, event: str, now: datetime
    ) -> None:
        self.conn.execute(
            "INSERT INTO document_revisions (document_id, revision, title, event, recorded_at)"
            " VALUES (%s, %s, %s, %s, %s)",
            (document_id, revision, title, event, now),
        )

    def retire_documents(self, document_ids: Sequence[int], now: datetime) -> int:
        retired = 0
        for document_id in document_ids:
            row = self.conn.execute(
                "SELECT revision, title FROM documents WHERE id = %s AND deleted_at IS NULL",
                (document_id,),
            ).fetchone()
            if row is None:
                continue
            delete_chunks(self.conn, document_id, self.log)
            self.conn.execute(
                "UPDATE documents SET deleted_at = %s WHERE id = %s", (now, document_id)
            )
            self._record_revision(document_id, row[0], row[1], "retired", now)
            retired += 1
        return retired

    def edges_revision(self, document_id: int) -> str | None:
        return edges_revision(self.conn, document_id)

    def mark_edges_synced(self, document_id: int, revision: str) -> None:
        self.conn.execute(
            "INSERT INTO note_edges (document_id, revision) VALUES (%s, %s)"
            " ON CONFLICT (document_id) DO UPDATE SET revision = excluded.revision",
            (document_id, revision),
        )

    def store_vectors(self, vectors: VectorBatch, hashes: dict[int, str]) -> None:
        put_vectors(self.conn, vectors)
        for chunk_id, text_hash in hashes.items():
            for found, pid in self.conn.execute(
                "UPDATE chunks SET text_hash = %s WHERE id = %s RETURNING id, pid",
                (text_hash, chunk_id),
            ).fetchall():
                self.log.rehashed(found, pid)


def edges_revision(conn: psycopg.Connection[Any], document_id: int) -> str | None:
    row = conn.execute(
        "SELECT revision FROM note_edges WHERE document_id = %s", (document_id,)
    ).fetchone()
    return None if row is None else str(row[0])
