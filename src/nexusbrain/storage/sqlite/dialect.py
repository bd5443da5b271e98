"""SQLite's `Dialect` (storage/sql/dialect.py): `?` placeholders, lists as `IN (…)` of at most
500 values, times as `format_time` text."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from typing import Any, cast

from nexusbrain.clock import format_time, parse_time
from nexusbrain.storage.sql.dialect import Connection, Dialect, T

LIST_MAX = 500  # values in one IN list: well inside SQLite's limit on parameters


class SQLiteDialect(Dialect):
    integrity_errors = (sqlite3.IntegrityError, sqlite3.InterfaceError)
    alias_order = "rowid"
    text_order = ""  # SQLite compares text by its bytes
    greatest = "max"

    def sql(self, text: str) -> str:
        return text

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} IN ({','.join('?' * len(values))})", list(values)

    def parts(self, values: Sequence[T]) -> Iterator[Sequence[T]]:
        for start in range(0, len(values), LIST_MAX):
            yield values[start : start + LIST_MAX]

    def array_of(self, subquery: str) -> str | None:
        return None

    def prefix(self, column: str, value: str) -> tuple[str, list[Any]]:
        return f"substr({column}, 1, ?) = ?", [len(value), value]

    def time_param(self, value: datetime | None) -> Any:
        return None if value is None else format_time(value)

    def text_param(self, value: str | None) -> Any:
        return value

    def time_value(self, value: Any) -> datetime:
        return parse_time(value)

    def time_text(self, value: Any) -> str | None:
        return cast(str | None, value)

    def inserted(
        self, conn: Connection, table: str, insert: str, params: Sequence[Any], select: str
    ) -> Any:
        conn.execute(insert, params)
        return conn.execute(
            f"WITH new AS (SELECT * FROM {table} WHERE rowid = last_insert_rowid()) {select}"
        ).fetchone()

    def executemany(self, conn: Connection, query: str, rows: Sequence[Sequence[Any]]) -> None:
        cast(sqlite3.Connection, conn).executemany(query, rows)

    def batch(self, conn: Connection) -> AbstractContextManager[object]:
        return nullcontext()

    def stream(self, conn: Connection, query: str) -> Iterator[Sequence[Any]]:
        return iter(conn.execute(query))


SQLITE = SQLiteDialect()
