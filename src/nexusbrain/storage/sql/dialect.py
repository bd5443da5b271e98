"""What differs between the SQL engines, for the code they share (storage/sql/).

Shared statements are written once, with `?` placeholders, in the SQL both engines speak. A
`Dialect` turns them into an engine's (`sql`) and gives the few forms that truly differ:

| what | SQLite | PostgreSQL |
| --- | --- | --- |
| placeholders | `?` | `%s` |
| a list of values | `c IN (?, ?, …)`, 500 at most | `c = ANY(?)`, one array |
| the values of a subquery as a column | none: a second query | `array(SELECT …)` |
| an inserted row, joined | read by `last_insert_rowid()` | `INSERT … RETURNING` in a CTE |
| a prefix test | `substr(c, 1, ?) = ?` | `starts_with(c, ?)` |
| the larger of two values | `max` | `greatest` |
| a time | `format_time` text (it sorts as the time) | `timestamptz` |
| a batch of statements | one after another | a pipeline (one round trip) |
| a long read | the cursor | a server-side cursor |

and two facts of the schemas: the column that keeps entity aliases in insertion order, and how
ORDER BY compares text bytewise (as SQLite does). `Connections` is how shared code gets a
connection from a backend.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Cursor(Protocol):
    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """A connection as both drivers give it (sqlite3's, psycopg's); rows are read by position."""

    def execute(self, query: str, params: Sequence[Any] = ..., /) -> Cursor: ...


class Dialect(Protocol):
    """How one engine writes what the shared statements need (the table above). Methods that
    take SQL take it with `?` placeholders."""

    integrity_errors: tuple[type[Exception], ...]  # a stored row refused: an import's bad record
    alias_order: str  # the column of entity_aliases in insertion order
    text_order: str  # appended to a text column in ORDER BY: compare it bytewise
    greatest: str  # the function of the larger of two values

    def sql(self, text: str) -> str:
        """`text` with this engine's placeholders."""
        ...

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """A condition that `column` is one of `values` (at most `parts` gives), and its
        parameters."""
        ...

    def parts(self, values: Sequence[T]) -> Iterator[Sequence[T]]:
        """`values` in parts small enough for one `any_of` each (none for no values)."""
        ...

    def array_of(self, subquery: str) -> str | None:
        """A column holding the values of `subquery` as a list, or None where the engine has
        no arrays (the values are then read by a query of their own)."""
        ...

    def prefix(self, column: str, value: str) -> tuple[str, list[Any]]:
        """A condition that the text `column` starts with `value`, and its parameters."""
        ...

    def time_param(self, value: datetime | None) -> Any:
        """A time as a statement's parameter."""
        ...

    def text_param(self, value: str | None) -> Any:
        """A time in the export format (`format_time` text) as a statement's parameter."""
        ...

    def time_value(self, value: Any) -> datetime:
        """A (non-NULL) time column's value as a time."""
        ...

    def time_text(self, value: Any) -> str | None:
        """A time column's value as the export writes it (`format_time` text)."""
        ...

    def inserted(
        self, conn: Connection, table: str, insert: str, params: Sequence[Any], select: str
    ) -> Any:
        """Run `insert` (one row into `table`), then `select`, which reads that row as `new`
        (e.g. joined to other tables); its one row."""
        ...

    def executemany(self, conn: Connection, query: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run `query` once per row."""
        ...

    def batch(self, conn: Connection) -> AbstractContextManager[object]:
        """A block whose statements, none of them read, go to the database together."""
        ...

    def stream(self, conn: Connection, query: str) -> Iterator[Sequence[Any]]:
        """The rows of a long read, without holding them all at once."""
        ...


class Connections(Protocol):
    """A backend's connections, as the shared code uses them. Inside `write` or `snapshot`,
    this thread's `read` is on the same connection, and sees what they see."""

    @property
    def dialect(self) -> Dialect: ...

    def read(self) -> AbstractContextManager[Connection]:
        """A connection for reads (outside a transaction, each sees the latest commit)."""
        ...

    def write(self, what: str) -> AbstractContextManager[Connection]:
        """The brain's write transaction, committed when the block ends without an error;
        errors are the storage errors, `what` naming what failed."""
        ...

    def own_write(self, what: str) -> AbstractContextManager[Connection]:
        """A short write transaction that writers of the brain's content need not wait for
        (a capture, a note of vector coverage)."""
        ...

    def snapshot(self) -> AbstractContextManager[object]:
        """Reads on this thread inside the block all see one state."""
        ...
