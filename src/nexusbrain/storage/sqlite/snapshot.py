"""A consistent copy of a database, read through a read-only connection: the source file is
never written (evaluation sweeps replay against the copy, never the user's brain)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from nexusbrain.errors import InvalidInput, StorageError


def copy_database(source: Path, target: Path) -> None:
    """Copy the SQLite database at `source` (WAL included) to `target` with the backup API."""
    if not source.is_file():
        raise InvalidInput(f"no database at {str(source)!r}")
    try:
        reader = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
        try:
            writer = sqlite3.connect(target)
            try:
                reader.backup(writer)
            finally:
                writer.close()
        finally:
            reader.close()
    except sqlite3.Error as exc:
        raise StorageError(f"cannot copy the database {source}: {exc}") from None
