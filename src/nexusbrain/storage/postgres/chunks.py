"""Chunk rows, their postings, vectors and the chunk change log, written inside a write
transaction (database.py).

Chunks and postings go in by COPY. Every chunk added, removed or re-hashed is noted, and the
notes are logged in `chunk_changes` at the end of the transaction (`ChangeLog.flush`), after
`change_head` hands out their seqs: its row lock is held to COMMIT, so seqs are given in
commit order and a reader that sees head S has every change up to S.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from nexusbrain.records import (
    ChunkDraft,
    VectorBatch,
)
from nexusbrain.storage.exchange import HEADING_SEP, chunk_values
from nexusbrain.storage.postgres.hnsw import centred_rows, writer_centre
from nexusbrain.storage.postgres.postings import POSTINGS_COPY, Segment, copy_stream

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


def chunk_row(document_id: int, c: ChunkDraft) -> ChunkRow:
    return ChunkRow(None, document_id, *chunk_values(c))


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


def stage_chunks(conn: psycopg.Connection[Any], columns: Sequence[tuple[str, str, str]]) -> Staged:
    """Analyse chunks (text, heading path, context, in the order they will be inserted) into
    one postings segment."""
    if not columns:
        return Staged([], [], 0, None)
    numbers = conn.execute(
        "SELECT nextval('chunk_pids'), CASE WHEN n = 1 THEN nextval('postings_segments') END"
        " FROM generate_series(1, %s) AS n",
        (len(columns),),
    ).fetchall()
    pids = [int(r[0]) for r in numbers]
    segment = Segment()
    lengths = [
        segment.add(pid, text, heading, context)
        for pid, (text, heading, context) in zip(pids, columns, strict=True)
    ]
    number = int(numbers[0][1])
    return Staged(pids, lengths, number, segment.copy_payload(number) if segment else None)


def draft_columns(c: ChunkDraft) -> tuple[str, str, str]:
    """A chunk draft's analysed columns as stored: text, heading path, context."""
    return c.text, HEADING_SEP.join(c.heading_path), c.context


def insert_chunks(
    conn: psycopg.Connection[Any],
    rows: Sequence[ChunkRow],
    log: ChangeLog,
    staged: Staged | None = None,
) -> None:
    """Insert chunk rows with their postings (`staged` for these rows, in order, perhaps
    stored already, or made here): one COPY for the chunks, one for the postings."""
    if not rows:
        return
    if staged is None:
        staged = stage_chunks(conn, [(r.text, r.heading, r.context) for r in rows])
    assert len(staged.pids) == len(rows)
    fresh = sum(1 for r in rows if r.id is None)
    new_ids = iter(
        int(r[0])
        for r in conn.execute(
            "SELECT nextval(pg_get_serial_sequence('chunks', 'id')) FROM generate_series(1, %s)",
            (fresh,),
        ).fetchall()
    )
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
    for chunk_id, pid, length in conn.execute(
        "DELETE FROM chunks WHERE document_id = %s RETURNING id, pid, length", (document_id,)
    ).fetchall():
        log.removed(chunk_id, pid, length)


def put_vectors(conn: psycopg.Connection[Any], batch: VectorBatch) -> None:
    """Store new vectors as halfvec (what the dense index reads: it keeps float16 rows), once
    per (model, text hash): one already stored by a concurrent writer is left as it is. Once
    the model has an HNSW index, each also gets its centred form (hnsw.py)."""
    if not batch.vectors:
        return
    model = batch.model.encode("utf-8")
    half = np.stack([np.frombuffer(b, np.float32) for b in batch.vectors.values()]).astype(
        np.float16
    )
    centre = writer_centre(conn, batch.model)
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
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS incoming_vectors (model text, text_hash text,"
        " dim integer, embedding halfvec, centred halfvec) ON COMMIT DELETE ROWS"
    )
    with (
        conn.cursor() as cursor,
        cursor.copy("COPY incoming_vectors FROM STDIN (FORMAT BINARY)") as copy,
    ):
        copy.write(copy_stream([b"".join(parts)]))
    # in text hash order: writers storing the same vectors at once (one of them before its
    # write lock, another under it) wait for each other's rows in one order, never in a cycle
    columns = "model, text_hash, dim, embedding" + ("" if centred is None else ", centred")
    conn.execute(
        f"INSERT INTO vectors ({columns}) SELECT {columns} FROM incoming_vectors"
        " ORDER BY text_hash ON CONFLICT DO NOTHING"
    )
    conn.execute("DELETE FROM incoming_vectors")
