"""PostgreSQL's `Dialect` (storage/sql/dialect.py): `%s` placeholders, lists as one array
parameter, times as `timestamptz`, an insert's row by RETURNING, batches in a pipeline."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from functools import lru_cache
from typing import Any, cast

import psycopg

from nexusbrain.clock import format_time, parse_time
from nexusbrain.storage.sql.dialect import Connection, Dialect, T

STREAM_ROWS = 2_000  # rows a server-side cursor fetches at a time


class PostgresDialect(Dialect):
    integrity_errors = (psycopg.IntegrityError, psycopg.DataError)
    alias_order = "seq"
    text_order = ' COLLATE "C"'  # by its bytes, as SQLite compares text
    greatest = "greatest"

    def sql(self, text: str) -> str:
        return _placeholders(text)

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(?)", [list(values)]

    def parts(self, values: Sequence[T]) -> Iterator[Sequence[T]]:
        if values:
            yield values

    def array_of(self, subquery: str) -> str | None:
        return f"array({subquery})"

    def prefix(self, column: str, value: str) -> tuple[str, list[Any]]:
        return f"starts_with({column}, ?)", [value]

    def time_param(self, value: datetime | None) -> Any:
        return value

    def text_param(self, value: str | None) -> Any:
        return None if value is None else parse_time(value)

    def time_value(self, value: Any) -> datetime:
        return cast(datetime, value)

    def time_text(self, value: Any) -> str | None:
        return None if value is None else format_time(value)

    def inserted(
        self, conn: Connection, table: str, insert: str, params: Sequence[Any], select: str
    ) -> Any:
        query = self.sql(f"WITH new AS ({insert} RETURNING *) {select}")
        return conn.execute(query, params).fetchone()

    def executemany(self, conn: Connection, query: str, rows: Sequence[Sequence[Any]]) -> None:
        with _psycopg(conn).cursor() as cursor:
            cursor.executemany(self.sql(query), rows)

    def batch(self, conn: Connection) -> AbstractContextManager[object]:
        return _psycopg(conn).pipeline()

    def stream(self, conn: Connection, query: str) -> Iterator[Sequence[Any]]:
        """Rows by a server-side cursor, inside the caller's transaction."""
        with _psycopg(conn).cursor(name="nexusbrain_export") as cursor:
            cursor.itersize = STREAM_ROWS
            cursor.execute(self.sql(query))
            yield from cursor


def _psycopg(conn: Connection) -> psycopg.Connection[Any]:
    return cast(psycopg.Connection[Any], conn)


@lru_cache(maxsize=1024)
def _placeholders(text: str) -> str:
    """`?` as `%s`. A shared statement holds no `%`, which psycopg would read as a placeholder."""
    if "%" in text:
        raise ValueError(f"a shared SQL statement holds a %: {text[:80]!r}")
    return text.replace("?", "%s")


POSTGRES = PostgresDialect()
