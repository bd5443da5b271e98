"""PostgreSQL's side of an import (storage/sql/transfer.py): chunk rows by COPY with their
postings (chunks.py), a few hundred at a time; then each table's id sequence moved past the
highest id, so that the brain's next writes take fresh ids."""

from __future__ import annotations

from typing import Any

import psycopg

from nexusbrain.errors import InvalidInput
from nexusbrain.storage.postgres.chunks import ChangeLog, ChunkRow, delete_chunks, insert_chunks
from nexusbrain.storage.sql.transfer import first_line

Conn = psycopg.Connection[Any]
_BATCH = 500  # chunk rows per COPY on import
_SEQUENCED = ("documents", "chunks", "entities", "relationships")


class PostgresChunkImport:
    """A `ChunkImport` inside the import's write transaction, whose change log `log` takes
    the chunk changes."""

    def __init__(self, conn: Conn, log: ChangeLog) -> None:
        self.conn = conn
        self.log = log
        self.pending: list[tuple[int, ChunkRow]] = []  # (record line, row)

    def delete_chunks(self, document_id: int) -> None:
        delete_chunks(self.conn, document_id, self.log)

    def add(self, line: int, values: tuple[Any, ...]) -> None:
        self.pending.append((line, ChunkRow(*values)))
        if len(self.pending) >= _BATCH:
            self._flush()

    def _flush(self) -> None:
        """Insert the pending chunks; if a batch breaks a constraint, find its record by
        trying the rows one at a time (each in a savepoint), so the error names the line."""
        pending, self.pending = self.pending, []
        if not pending:
            return
        try:
            with self.conn.transaction():
                insert_chunks(self.conn, [row for _, row in pending], self.log)
            return
        except psycopg.IntegrityError:
            pass
        for line, row in pending:
            try:
                with self.conn.transaction():
                    insert_chunks(self.conn, [row], ChangeLog())
            except psycopg.IntegrityError as exc:
                raise InvalidInput(f"import record {line} is invalid: {first_line(exc)}") from exc
        raise AssertionError("a batch of chunks failed that no single row fails")

    def finish(self) -> None:
        self._flush()
        for table in _SEQUENCED:  # next ids past the imported ones
            self.conn.execute(
                "SELECT setval(s, greatest(top, coalesce(pg_sequence_last_value(s::regclass), 0)))"
                " FROM pg_get_serial_sequence(%s, 'id') AS s,"
                f" (SELECT max(id) AS top FROM {table}) AS t WHERE top IS NOT NULL",
                (table,),
            )
