"""Multi-row INSERTs: FTS5 flushes a segment at every statement, so rows go a few hundred at a
time (see sqlite._PendingChunks)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

Row = TypeVar("Row")

MAX_ROWS = 500  # rows per statement, at most


def parts(conn: sqlite3.Connection, rows: Sequence[Row], width: int) -> Iterator[Sequence[Row]]:
    """`rows` cut into parts that fit one statement: at most MAX_ROWS, and within SQLite's
    limit on parameters for rows of `width` values."""
    limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width
    size = max(1, min(MAX_ROWS, limit))
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def statement(prefix: str, rows: Sequence[Sequence[Any]]) -> tuple[str, list[Any]]:
    """`prefix` (an `INSERT … VALUES `) with one `(?, …)` per row, and the rows' values."""
    marks = "(" + ", ".join("?" * len(rows[0])) + ")"
    return prefix + ",".join([marks] * len(rows)), [value for row in rows for value in row]
