"""Vector rows and the chunk change log, for the SQLite store (SQL only).

Its migration also gives chunks a `context` column (text that helps find a chunk but is not
part of its span, such as the neighbouring turns of a conversation turn), indexed by FTS5 as a
third column."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from nexusbrain.records import VectorBatch

MIGRATION = """
ALTER TABLE chunks ADD COLUMN text_hash TEXT;
ALTER TABLE chunks ADD COLUMN context TEXT NOT NULL DEFAULT '';
DROP TRIGGER chunks_fts_insert;
DROP TRIGGER chunks_fts_delete;
DROP TABLE chunks_fts;
CREATE VIRTUAL TABLE chunks_fts USING fts5 (
    text, heading, context,
    content = 'chunks', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild');
CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts (rowid, text, heading, context)
    VALUES (new.id, new.text, new.heading, new.context);
END;
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, text, heading, context)
    VALUES ('delete', old.id, old.text, old.heading, old.context);
END;
CREATE INDEX chunks_text_hash ON chunks (text_hash);
CREATE TABLE vectors (
    model TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)
) WITHOUT ROWID;
CREATE TABLE chunk_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    chunk_id INTEGER NOT NULL,
    added INTEGER NOT NULL
);
CREATE TRIGGER chunk_changes_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunk_changes (chunk_id, added) VALUES (new.id, 1);
END;
CREATE TRIGGER chunk_changes_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunk_changes (chunk_id, added) VALUES (old.id, 0);
END;
CREATE TRIGGER chunk_changes_hash AFTER UPDATE OF text_hash ON chunks BEGIN
    INSERT INTO chunk_changes (chunk_id, added) VALUES (new.id, 1);
END;
"""


# Migration 4: one 1 KB blob per row is over a WITHOUT ROWID (index) page's inline limit, so
# each vector spilled to its own overflow page (docs/design/bench.md). A rowid table keeps
# about three rows per page, and the unique index stays small.
ROWID_MIGRATION = """
CREATE TABLE vectors_rowid (
    model TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    UNIQUE (model, text_hash)
);
INSERT INTO vectors_rowid (model, text_hash, dim, vector)
    SELECT model, text_hash, dim, vector FROM vectors ORDER BY model, text_hash;
DROP TABLE vectors;
ALTER TABLE vectors_rowid RENAME TO vectors;
"""
FETCH = 4096  # rows per fetchmany when loading vectors


def put_vectors(conn: sqlite3.Connection, batch: VectorBatch) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO vectors (model, text_hash, dim, vector) VALUES (?, ?, ?, ?)",
        [(batch.model, h, batch.dim, blob) for h, blob in batch.vectors.items()],
    )


LATEST_CHANGE = "SELECT coalesce(max(seq), 0) FROM chunk_changes"


def latest_change(conn: sqlite3.Connection) -> int:
    return int(conn.execute(LATEST_CHANGE).fetchone()[0])


def load_vectors(
    conn: sqlite3.Connection, model: str, dim: int, chunk_ids: Sequence[int] | None
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]:
    """(chunk ids, document ids, vectors) of live chunks that have a vector for `model`.

    The arrays are allocated once and filled from batches of rows, so the rows' blobs are
    never all held at once."""
    # CROSS JOIN keeps chunks as the outer loop: left to choose (no statistics), SQLite
    # walks every vector of the model and looks its chunk up by hash, even for a few ids.
    sql = (
        "SELECT c.id, c.document_id, v.vector FROM chunks c"
        " CROSS JOIN vectors v ON v.model = ? AND v.text_hash = c.text_hash"
    )
    if chunk_ids is None:
        expected = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
        return _fill(conn, [(sql + " ORDER BY c.id", (model,))], expected, dim)
    parts = [chunk_ids[start : start + 500] for start in range(0, len(chunk_ids), 500)]
    queries = [
        (sql + f" WHERE c.id IN ({','.join('?' * len(part))})", (model, *part)) for part in parts
    ]
    return _fill(conn, queries, len(chunk_ids), dim)


def _fill(
    conn: sqlite3.Connection,
    queries: Sequence[tuple[str, Sequence[object]]],
    expected: int,
    dim: int,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]:
    ids = np.empty(expected, dtype=np.int64)
    docs = np.empty(expected, dtype=np.int64)
    matrix = np.empty((expected, dim), dtype=np.float32)
    cursor = conn.cursor()
    cursor.row_factory = None  # plain tuples
    count = 0
    for sql, params in queries:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(FETCH):
            end = count + len(rows)
            if end > len(ids):  # chunks written since the count
                ids, docs, matrix = (_grown(a, 2 * end) for a in (ids, docs, matrix))
            ids[count:end] = [r[0] for r in rows]
            docs[count:end] = [r[1] for r in rows]
            matrix[count:end] = np.frombuffer(b"".join(r[2] for r in rows), np.float32).reshape(
                -1, dim
            )
            count = end
    if count == len(ids):
        return ids, docs, matrix
    return ids[:count].copy(), docs[:count].copy(), matrix[:count].copy()


def _grown(array: NDArray[Any], size: int) -> NDArray[Any]:
    out = np.empty((size, *array.shape[1:]), dtype=array.dtype)
    out[: len(array)] = array
    return out


# Migration 6: `seq` is a chunk change seq up to which every live chunk had a vector for
# `model`. Chunks changed after it are the only ones that can lack one, because every insert
# and re-hash of a chunk is logged in chunk_changes and vectors are never deleted.
COVERAGE_MIGRATION = """
CREATE TABLE vector_coverage (
    model TEXT PRIMARY KEY,
    seq INTEGER NOT NULL
);
"""


def set_hashes(conn: sqlite3.Connection, hashes: Mapping[int, str], as_of: int | None) -> None:
    """Set chunks' text hashes; with `as_of`, not for chunks changed after that seq (inside
    the caller's write transaction, so no change can come between the check and the update)."""
    changed: set[int] = set()
    if as_of is not None:
        rows = conn.execute("SELECT chunk_id FROM chunk_changes WHERE seq > ?", (as_of,))
        changed = {row[0] for row in rows}
    conn.executemany(
        "UPDATE chunks SET text_hash = ? WHERE id = ?",
        [(h, c) for c, h in hashes.items() if c not in changed],
    )
