"""SQLite's side of an import (storage/sql/transfer.py): chunk rows a few hundred per statement,
as FTS5 wants them (writes._PendingChunks), whose triggers index and log them."""

from __future__ import annotations

import sqlite3
from typing import Any

from nexusbrain.errors import InvalidInput
from nexusbrain.storage.sqlite import multirow

_CHUNK_IMPORT = (
    "INSERT INTO chunks (id, document_id, ordinal, char_start, char_end, line_start,"
    " line_end, heading, text, unit, meta, context) VALUES "
)


class SQLiteChunkImport:
    """A `ChunkImport` on a connection inside the import's write transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.pending: list[tuple[int, tuple[Any, ...]]] = []  # (record line, row)

    def delete_chunks(self, document_id: int) -> None:
        self.conn.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))

    def add(self, line: int, values: tuple[Any, ...]) -> None:
        self.pending.append((line, values))
        if len(self.pending) >= multirow.MAX_ROWS:
            self.finish()

    def finish(self) -> None:
        """Insert the pending chunk rows. A statement that fails is undone alone and its rows
        are tried one at a time, so that the error names the record's line."""
        pending, self.pending = self.pending, []
        for part in multirow.parts(self.conn, pending, 12):
            try:
                self.conn.execute(*multirow.statement(_CHUNK_IMPORT, [row for _, row in part]))
            except (sqlite3.IntegrityError, sqlite3.InterfaceError):
                for line, row in part:
                    try:
                        self.conn.execute(*multirow.statement(_CHUNK_IMPORT, [row]))
                    except (sqlite3.IntegrityError, sqlite3.InterfaceError) as exc:
                        raise InvalidInput(f"import record {line} is invalid: {exc}") from exc
                raise
