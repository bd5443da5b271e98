"""Connections to one SQLite file in WAL mode: one per thread, its schema migrated when it opens,
and what each failure means.

Writes are serialised by a lock in this process and by SQLite's own write lock across
processes (`write`, BEGIN IMMEDIATE). A read on a thread inside `write` or `snapshot` is on
that thread's connection, and so sees what they see. Export and backup read on connections of
their own (`reader`), so that writers go on meanwhile.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from nexusbrain.config import StorageConfig
from nexusbrain.errors import Busy, Full, StorageError
from nexusbrain.storage.sqlite import lexical
from nexusbrain.storage.sqlite.dialect import SQLITE, SQLiteDialect
from nexusbrain.storage.sqlite.migrations import MIGRATIONS

log = logging.getLogger(__name__)


class SQLiteDatabase:
    """The connections to one SQLite file (the `Connections` of storage/sql/dialect.py).
    Thread-safe: each thread gets its own connection."""

    def __init__(self, path: Path | str, config: StorageConfig | None = None) -> None:
        self.path = Path(path)
        self.config = config or StorageConfig()
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._migrate()
        except (sqlite3.DatabaseError, OSError) as exc:
            self.close()
            raise StorageError(
                f"cannot open the database at {self.path}: {_why_not(self.path, exc)}"
            ) from exc

    @property
    def dialect(self) -> SQLiteDialect:
        return SQLITE

    def connection(self) -> sqlite3.Connection:
        """This thread's connection."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            _configured(conn, self.config)
            lexical.register(conn)
            self._local.conn = conn
            with self._connections_lock:
                self._connections.append(conn)
        return conn

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        yield self.connection()

    @contextmanager
    def write(self, what: str = "database write failed") -> Iterator[sqlite3.Connection]:
        """One write transaction on this thread's connection. Raises Busy when another
        process held the database past the busy timeout, Full when the disk is full, and
        StorageError for any other failure; in every case nothing was changed."""
        conn = self.connection()
        with self._write_lock:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as exc:
                raise storage_error(exc, "could not start a write") from exc
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.DatabaseError):
                    raise storage_error(exc, what) from exc
                raise

    def own_write(self, what: str) -> AbstractContextManager[sqlite3.Connection]:
        """A write of its own: SQLite has the one writer at a time."""
        return self.write(what)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        conn = self.connection()
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN")
        try:
            yield
        finally:
            conn.execute("COMMIT")  # read-only: nothing to keep or undo

    def reader(self) -> sqlite3.Connection:
        """A connection of the caller's own (it closes it), for a long read."""
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        _configured(conn, self.config)
        return conn

    def close(self) -> None:
        with self._connections_lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    def _migrate(self) -> None:
        conn = self.connection()
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations"
            " (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        for version, sql in sorted(MIGRATIONS):
            if version in done:
                continue
            log.info("applying schema migration %d to %s", version, self.path)
            with self._write_lock:
                try:
                    conn.executescript(
                        f"BEGIN IMMEDIATE;\n{sql}\n"
                        f"INSERT INTO schema_migrations VALUES ({version}, datetime('now'));\n"
                        "COMMIT;"
                    )
                except sqlite3.DatabaseError:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise

    def ping(self) -> None:
        try:
            self.connection().execute("SELECT count(*) FROM schema_migrations").fetchone()
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"cannot read the database at {self.path}: {exc}") from exc

    def schema_version(self) -> int:
        row = self.connection().execute("SELECT max(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    def disk_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            part = Path(f"{self.path}{suffix}")
            if part.exists():
                total += part.stat().st_size
        return total

    def backup(self, target: Path) -> None:
        """A consistent copy of the whole database at `target` (which must not exist), taken
        while writers go on."""
        conn = self.reader()
        try:
            conn.execute("VACUUM INTO ?", (str(target),))
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"cannot back up {self.path} to {target}: {exc}") from exc
        finally:
            conn.close()


def _why_not(path: Path, exc: BaseException) -> str:
    """What stops a database file from opening, in words, with the fix."""
    folder = path.parent
    if folder.exists() and os.statvfs(folder).f_flag & os.ST_RDONLY:
        return (
            "its file system is read-only, and SQLite writes a log beside the file even to"
            " read: copy the file somewhere writable, or mount it read-write"
        )
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        return f"this user may not read and write the file ({exc}): check its permissions"
    if isinstance(exc, sqlite3.DatabaseError) and "not a database" in str(exc):
        return f"the file is not a SQLite database ({exc}): check the path"
    return str(exc)


def storage_error(exc: sqlite3.DatabaseError, what: str) -> StorageError:
    """The error to raise for a failed write, by SQLite's error code."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return Busy(
            f"{what}: another writer held the database too long ({exc}); nothing was"
            " changed, try again"
        )
    if code == sqlite3.SQLITE_FULL:
        return Full(f"{what}: the disk is full ({exc}); nothing was changed: free some space")
    if code == sqlite3.SQLITE_READONLY:
        return StorageError(
            f"{what}: the database is read-only ({exc}); nothing was changed:"
            " check the file's permissions and its file system"
        )
    return StorageError(f"{what}, nothing was changed: {exc}")


def _configured(conn: sqlite3.Connection, config: StorageConfig) -> None:
    conn.execute(f"PRAGMA busy_timeout = {int(config.busy_timeout_ms)}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {config.durability.value.upper()}")
    conn.execute("PRAGMA foreign_keys = ON")
