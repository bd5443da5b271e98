"""Vector rows and the chunk change log, for the SQLite store (SQL only).

Its migration also gives chunks a `context` column (text that helps find a chunk but is not
part of its span, such as the neighbouring turns of a conversation turn), indexed by FTS5 as a
third column."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence

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


def put_vectors(conn: sqlite3.Connection, batch: VectorBatch) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO vectors (model, text_hash, dim, vector) VALUES (?, ?, ?, ?)",
        [(batch.model, h, batch.dim, blob) for h, blob in batch.vectors.items()],
    )


def known_hashes(conn: sqlite3.Connection, model: str, hashes: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(hashes), 500):
        part = hashes[start : start + 500]
        rows = conn.execute(
            f"SELECT text_hash FROM vectors WHERE model = ? AND text_hash IN"
            f" ({','.join('?' * len(part))})",
            (model, *part),
        )
        found.update(row[0] for row in rows)
    return found


def latest_change(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT coalesce(max(seq), 0) FROM chunk_changes").fetchone()[0])


def changes_since(conn: sqlite3.Connection, seq: int) -> tuple[int, list[int], list[int]]:
    """(newest seq, chunk ids now live with a vector-able hash, chunk ids gone)."""
    rows = conn.execute(
        "SELECT seq, chunk_id, added FROM chunk_changes WHERE seq > ? ORDER BY seq", (seq,)
    ).fetchall()
    if not rows:
        return seq, [], []
    state: dict[int, bool] = {}
    for _, chunk_id, added in rows:
        state[chunk_id] = bool(added)
    added_ids = [c for c, live in state.items() if live]
    gone = [c for c, live in state.items() if not live]
    return int(rows[-1][0]), added_ids, gone


def load_vectors(
    conn: sqlite3.Connection, model: str, dim: int, chunk_ids: Sequence[int] | None
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]:
    """(chunk ids, document ids, vectors) of live chunks that have a vector for `model`."""
    sql = (
        "SELECT c.id, c.document_id, v.vector FROM chunks c"
        " JOIN vectors v ON v.model = ? AND v.text_hash = c.text_hash"
    )
    rows: list[tuple[int, int, bytes]] = []
    if chunk_ids is None:
        rows = conn.execute(sql + " ORDER BY c.id", (model,)).fetchall()
    else:
        for start in range(0, len(chunk_ids), 500):
            part = chunk_ids[start : start + 500]
            rows += conn.execute(
                sql + f" WHERE c.id IN ({','.join('?' * len(part))})", (model, *part)
            ).fetchall()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    docs = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(-1, dim)
    return ids, docs, matrix


def missing_vectors(
    conn: sqlite3.Connection, model: str, limit: int
) -> list[tuple[int, str, Sequence[str], str]]:
    """Live chunks without a vector for `model`: (chunk id, text, heading path, context)."""
    rows = conn.execute(
        "SELECT c.id, c.text, c.heading, c.context FROM chunks c"
        " WHERE c.text_hash IS NULL OR NOT EXISTS"
        " (SELECT 1 FROM vectors v WHERE v.model = ? AND v.text_hash = c.text_hash)"
        " ORDER BY c.id LIMIT ?",
        (model, limit),
    ).fetchall()
    return [(r[0], r[1], r[2].split("\x1f") if r[2] else [], r[3]) for r in rows]


def set_hashes(conn: sqlite3.Connection, hashes: Mapping[int, str]) -> None:
    conn.executemany(
        "UPDATE chunks SET text_hash = ? WHERE id = ?", [(h, c) for c, h in hashes.items()]
    )


def count_missing(conn: sqlite3.Connection, model: str) -> int:
    return int(
        conn.execute(
            "SELECT count(*) FROM chunks c WHERE c.text_hash IS NULL OR NOT EXISTS"
            " (SELECT 1 FROM vectors v WHERE v.model = ? AND v.text_hash = c.text_hash)",
            (model,),
        ).fetchone()[0]
    )
