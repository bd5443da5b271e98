"""Which chunks lack a vector for a model, for the PostgreSQL store (SQL only).

`vector_coverage.seq` is a change seq up to which every live chunk had a vector for the
model: chunks changed after it are the only ones that can lack one, because every insert and
re-hash of a chunk is logged in `chunk_changes` and vectors are never deleted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from nexusbrain.storage.exchange import HEADING_SEP

Conn = psycopg.Connection[Any]


def latest_and_covered(conn: Conn, model: str) -> tuple[int, int | None]:
    """(the newest change seq, the seq up to which the model's vectors are complete)."""
    row = conn.execute(
        "SELECT (SELECT seq FROM change_head), (SELECT seq FROM vector_coverage WHERE model = %s)",
        (model,),
    ).fetchone()
    assert row is not None
    return int(row[0]), None if row[1] is None else int(row[1])


def mark_covered(conn: Conn, model: str, seq: int) -> None:
    """Record that no chunk changed up to `seq` lacks a vector for `model`. Read `seq` before
    looking for missing vectors, so that changes made meanwhile stay after it."""
    conn.execute(
        "INSERT INTO vector_coverage (model, seq) VALUES (%s, %s) ON CONFLICT (model)"
        " DO UPDATE SET seq = greatest(vector_coverage.seq, excluded.seq)",
        (model, seq),
    )


def _missing_sql(since: int | None) -> str:
    """Chunks without a vector for the model; with `since`, only among the chunks changed
    after that seq (the parameters: since, if given, then the model)."""
    changed = (
        "" if since is None else "c.id IN (SELECT chunk_id FROM chunk_changes WHERE seq > %s) AND "
    )
    return (
        f" FROM chunks c WHERE {changed}(c.text_hash IS NULL OR NOT EXISTS"
        " (SELECT 1 FROM vectors v WHERE v.model = %s AND v.text_hash = c.text_hash))"
    )


def missing_vectors(
    conn: Conn, model: str, limit: int, since: int | None = None
) -> list[tuple[int, str, Sequence[str], str]]:
    """Live chunks without a vector for `model`: (chunk id, text, heading path, context)."""
    params: tuple[Any, ...] = (model,) if since is None else (since, model)
    rows = conn.execute(
        "SELECT c.id, c.text, c.heading, c.context"
        + _missing_sql(since)
        + " ORDER BY c.id LIMIT %s",
        (*params, limit),
    ).fetchall()
    return [(r[0], r[1], r[2].split(HEADING_SEP) if r[2] else [], r[3]) for r in rows]


def count_missing(conn: Conn, model: str, since: int | None = None) -> int:
    params: tuple[Any, ...] = (model,) if since is None else (since, model)
    row = conn.execute("SELECT count(*)" + _missing_sql(since), params).fetchone()
    return int(row[0]) if row else 0
