"""Chunk rows, their postings, vectors and the chunk change log, written inside a write
transaction (database.py).

Chunks and postings go in by COPY. Every chunk added, removed or re-hashed is noted, and the
notes are logged in `chunk_changes` at the end of the transaction by one statement
(`ChangeLog.statement`, sent with the COMMIT), after `change_head` hands out their seqs: its
row lock is held to COMMIT, so seqs are given in commit order and a reader that sees head S has
every change up to S.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg
from numpy.typing import NDArray
from psycopg.pq import TransactionStatus

from nexusbrain.records import (
    ChunkDraft,
    VectorBatch,
)
from nexusbrain.storage.exchange import HEADING_SEP
from nexusbrain.storage.postgres.hnsw import centre_check, centred_rows, writer_centre
from nexusbrain.storage.postgres.postings import POSTINGS_COPY, Segment, copy_stream

_LOG_CHANGES = (
    "WITH head AS (UPDATE change_head SET seq = seq + %s, chunks = chunks + %s,"
    " tokens = tokens + %s RETURNING seq)"
    " INSERT INTO chunk_changes (seq, chunk_id, pid, added)"
    " SELECT head.seq - %s + c.n, c.chunk_id, c.pid, c.added"
    " FROM head, unnest(%s::bigint[], %s::integer[], %s::boolean[])"
    " WITH ORDINALITY AS c(chunk_id, pid, added, n)"
)
CHUNK_COLUMNS = (
    "id, pid, length, document_id, ordinal, char_start, char_end, line_start, line_end,"
    " heading, text, unit, meta, text_hash, context, signature"
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
    signature: int


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

    def statement(self) -> tuple[str, tuple[Any, ...]] | None:
        """The one statement that logs the changes (None: there are none), to send in the
        transaction's last round trip: it takes their seqs from `change_head`, whose row lock
        is then held to COMMIT, and inserts them. The notes are cleared."""
        if not self.events:
            return None
        ids, pids, added = (list(column) for column in zip(*self.events, strict=True))
        params = (len(ids), self.chunks, self.tokens, len(ids), ids, pids, added)
        self.events = []
        self.chunks = self.tokens = 0
        return _LOG_CHANGES, params


@dataclass(slots=True)
class Staged:
    """Chunks' postings, made before the write lock is taken: each chunk's pid (handed out
    by a sequence, which needs no lock) and length in tokens, and their segment (its number
    from a sequence too) as a COPY stream, or already stored in the write's transaction."""

    pids: list[int]
    lengths: list[int]
    segment: int
    payload: bytes | None  # None: no chunk holds a token
    stored: bool = False
    ids: list[int] = field(default_factory=list)  # for the chunks inserted without an id

    def store(self, conn: psycopg.Connection[Any]) -> None:
        """Insert the segment, in the write's transaction. No writer but this one holds its
        number, and a reader sees a posting only once its chunk is live, so this needs no
        lock; an insert of many rows is most of what a write does in PostgreSQL."""
        if self.payload is not None and not self.stored:
            with conn.cursor() as cursor, cursor.copy(POSTINGS_COPY) as copy:
                copy.write(self.payload)
        self.stored = True

    def drop(self, conn: psycopg.Connection[Any]) -> None:
        """Take a stored segment back out (its chunks are not written after all)."""
        if self.stored and self.payload is not None:
            conn.execute("DELETE FROM postings WHERE segment = %s", (self.segment,))
        self.stored = False


def stage_chunks(
    conn: psycopg.Connection[Any], columns: Sequence[tuple[str, str, str]], fresh: int = 0
) -> Staged:
    """Analyse chunks (text, heading path, context, in the order they will be inserted) into
    one postings segment, and take the ids of the first `fresh` of them (those inserted
    without one) from the table's sequence, in the same round trip."""
    if not columns:
        return Staged([], [], 0, None)
    numbers = conn.execute(
        "SELECT nextval('chunk_pids'), CASE WHEN n = 1 THEN nextval('postings_segments') END,"
        " CASE WHEN n <= %s THEN nextval(pg_get_serial_sequence('chunks', 'id')) END"
        " FROM generate_series(1, %s) AS n",
        (fresh, len(columns)),
    ).fetchall()
    pids = [int(r[0]) for r in numbers]
    segment = Segment()
    lengths = [
        segment.add(pid, text, heading, context)
        for pid, (text, heading, context) in zip(pids, columns, strict=True)
    ]
    number = int(numbers[0][1])
    payload = segment.copy_payload(number) if segment else None
    return Staged(pids, lengths, number, payload, ids=[int(r[2]) for r in numbers[:fresh]])


def draft_columns(c: ChunkDraft) -> tuple[str, str, str]:
    """A chunk draft's analysed columns as stored: text, heading path, context."""
    return c.text, HEADING_SEP.join(c.heading_path), c.context


def insert_chunks(
    conn: psycopg.Connection[Any],
    rows: Sequence[ChunkRow],
    log: ChangeLog,
    staged: Staged | None = None,
) -> None:
    """Insert chunk rows with their postings (`staged` for these rows, in order, with the
    ids of those that have none, perhaps stored already, or made here): one COPY for the
    chunks, one for the postings."""
    if not rows:
        return
    fresh = sum(1 for r in rows if r.id is None)
    if staged is None:
        staged = stage_chunks(conn, [(r.text, r.heading, r.context) for r in rows], fresh)
    assert len(staged.pids) == len(rows) and len(staged.ids) == fresh
    new_ids = iter(staged.ids)
    with conn.cursor() as cursor, cursor.copy(f"COPY chunks ({CHUNK_COLUMNS}) FROM STDIN") as copy:
        for row, pid, length in zip(rows, staged.pids, staged.lengths, strict=True):
            chunk_id = row.id if row.id is not None else next(new_ids)
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
                    row.signature,
                )
            )
            log.added(chunk_id, pid, length)
    staged.store(conn)


def delete_chunks(conn: psycopg.Connection[Any], document_id: int, log: ChangeLog) -> None:
    removed(conn.execute(*delete_statement([document_id])), log)


def delete_statement(document_ids: Sequence[int]) -> tuple[str, tuple[Any, ...]]:
    """The statement that deletes these documents' chunks (their rows read by `removed`)."""
    return (
        "DELETE FROM chunks WHERE document_id = ANY(%s) RETURNING id, pid, length",
        (list(document_ids),),
    )


def removed(deleted: psycopg.Cursor[Any], log: ChangeLog) -> None:
    """Note the chunks that a `delete_statement` deleted (its cursor) as removed."""
    for chunk_id, pid, length in deleted.fetchall():
        log.removed(chunk_id, pid, length)


def put_vectors(conn: psycopg.Connection[Any], batch: VectorBatch, *, apart: bool = False) -> None:
    """Store new vectors as halfvec (what the dense index reads: it keeps float16 rows), once
    per (model, text hash): one already stored by a concurrent writer is left as it is. Once
    the model has an HNSW index, each also gets its centred form (hnsw.py). Three round
    trips: the checks, the COPY, the insert.

    With `apart`, in a transaction of its own, before the write's, whose COMMIT does not wait
    for its WAL to reach the disk (`synchronous_commit` off). The write's own COMMIT, later on
    the same connection, waits for the WAL up to it, which holds this one's: so vectors whose
    write is acknowledged are as durable as it is, and a crash in between loses only vectors
    that no committed chunk needs yet (they are embedded again when their write is retried)."""
    if not batch.vectors:
        return
    try:
        with conn.pipeline():
            if apart:
                conn.execute("BEGIN")
                conn.execute("SET LOCAL synchronous_commit TO off")
            conn.execute(_INCOMING)
            checked = conn.execute(*centre_check(batch.model))
        centre = writer_centre(conn, batch.model, checked)
        with (
            conn.cursor() as cursor,
            cursor.copy("COPY incoming_vectors FROM STDIN (FORMAT BINARY)") as copy,
        ):
            copy.write(copy_stream([_vector_rows(batch, centre)]))
        # in text hash order: writers storing the same vectors at once (one of them before its
        # write lock, another under it) wait for each other's rows in one order, never in a cycle
        columns = "model, text_hash, dim, embedding" + ("" if centre is None else ", centred")
        with conn.pipeline():
            conn.execute(
                f"INSERT INTO vectors ({columns}) SELECT {columns} FROM incoming_vectors"
                " ORDER BY text_hash ON CONFLICT DO NOTHING"
            )
            conn.execute("DELETE FROM incoming_vectors")
            if apart:
                conn.execute("COMMIT")
    except BaseException:
        if apart and conn.info.transaction_status is not TransactionStatus.IDLE:
            with suppress(psycopg.Error):  # a lost connection rolled back by itself
                conn.execute("ROLLBACK")
        raise


_INCOMING = (
    "CREATE TEMP TABLE IF NOT EXISTS incoming_vectors (model text, text_hash text,"
    " dim integer, embedding halfvec, centred halfvec) ON COMMIT DELETE ROWS"
)


def _vector_rows(batch: VectorBatch, centre: NDArray[np.float32] | None) -> bytes:
    """The batch's rows of `incoming_vectors` in COPY's binary format (no header)."""
    model = batch.model.encode("utf-8")
    half = np.stack([np.frombuffer(b, np.float32) for b in batch.vectors.values()]).astype(
        np.float16
    )
    centred = None if centre is None else centred_rows(half.astype(np.float32), centre)
    width = 4 + 2 * batch.dim
    parts: list[bytes] = []
    for row, text_hash in enumerate(batch.vectors):
        digest = text_hash.encode("utf-8")
        parts += (
            struct.pack(">hi", 5, len(model)),
            model,
            struct.pack(">i", len(digest)),
            digest,
            struct.pack(">iii", 4, batch.dim, width),
            struct.pack(">hh", batch.dim, 0),
            half[row].astype(">f2").tobytes(),
        )
        if centred is None:
            parts.append(struct.pack(">i", -1))
        else:
            parts += (
                struct.pack(">ihh", width, batch.dim, 0),
                centred[row].astype(">f2").tobytes(),
            )
    return b"".join(parts)
