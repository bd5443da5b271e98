"""The SQLite backend's document store: one file in WAL mode, FTS5 kept in step by triggers."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from numpy.typing import NDArray

from nexusbrain.clock import format_time, parse_time
from nexusbrain.config import StorageConfig
from nexusbrain.errors import Busy, Full, NotFound, StorageError
from nexusbrain.records import (
    Capture,
    Chunk,
    ChunkDraft,
    Document,
    DocumentDraft,
    DocumentHead,
    DocumentKind,
    ImportResult,
    SearchFilters,
    StoreStats,
    VectorBatch,
    WriteResult,
    WriteStatus,
)
from nexusbrain.storage.base import DocumentItems, WritesInOwnUnit
from nexusbrain.storage.exchange import chunk_values
from nexusbrain.storage.graph_base import GraphSession
from nexusbrain.storage.sql.filters import filter_sql
from nexusbrain.storage.sqlite import lexical, multirow, transfer
from nexusbrain.storage.sqlite import vectors as vector_sql
from nexusbrain.storage.sqlite.dialect import SQLITE
from nexusbrain.storage.sqlite.graph import GraphWrites
from nexusbrain.storage.sqlite.migrations import MIGRATIONS

log = logging.getLogger(__name__)

HEADING_SEP = transfer.HEADING_SEP
_CHUNK_INSERT = (
    "INSERT INTO chunks (document_id, ordinal, char_start, char_end, line_start, line_end,"
    " heading, text, unit, meta, text_hash, context) VALUES "
)
_DOC_COLUMNS = (
    "id, uri, title, domain, kind, revision, content, metadata, created_at, updated_at, deleted_at"
)
_CHUNK_COLUMNS = (
    "c.id, c.document_id, c.ordinal, c.char_start, c.char_end, c.line_start, c.line_end,"
    " c.heading, c.text, c.unit, c.meta, c.context"
)


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def _document(row: sqlite3.Row) -> Document:
    return Document(
        id=row["id"],
        uri=row["uri"],
        title=row["title"],
        domain=row["domain"],
        kind=DocumentKind(row["kind"]),
        revision=row["revision"],
        content=row["content"],
        metadata=orjson.loads(row["metadata"]),
        created_at=parse_time(row["created_at"]),
        updated_at=parse_time(row["updated_at"]),
        deleted_at=parse_time(row["deleted_at"]) if row["deleted_at"] else None,
    )


def _chunk(row: sqlite3.Row) -> Chunk:
    heading: str = row["heading"]
    return Chunk(
        id=row["id"],
        document_id=row["document_id"],
        ordinal=row["ordinal"],
        char_start=row["char_start"],
        char_end=row["char_end"],
        line_start=row["line_start"],
        line_end=row["line_end"],
        heading_path=tuple(heading.split(HEADING_SEP)) if heading else (),
        text=row["text"],
        unit=row["unit"],
        meta=orjson.loads(row["meta"]),
        context=row["context"],
    )


class SQLiteStore(WritesInOwnUnit):
    """A `Store` over one SQLite file. Safe to share between threads: each thread gets its
    own connection, and writes are serialised by a lock plus SQLite's own write lock."""

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

    # connections and transactions

    def connection(self) -> sqlite3.Connection:
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
    def transaction(self) -> Iterator[sqlite3.Connection]:
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
                    raise storage_error(exc, "database write failed") from exc
                raise

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

    def identity(self) -> str:
        return str(self.connection().execute("SELECT id FROM store_identity").fetchone()[0])

    # documents

    def get_document(self, document_id: int) -> Document:
        row = (
            self.connection()
            .execute(f"SELECT {_DOC_COLUMNS} FROM documents WHERE id = ?", (document_id,))
            .fetchone()
        )
        if row is None:
            raise NotFound(f"no document with id {document_id}")
        return _document(row)

    def find_document(self, uri: str) -> Document | None:
        row = (
            self.connection()
            .execute(f"SELECT {_DOC_COLUMNS} FROM documents WHERE uri = ?", (uri,))
            .fetchone()
        )
        return _document(row) if row else None

    def revisions_under(self, uri_prefix: str) -> Mapping[str, str]:
        rows = self.connection().execute(
            "SELECT uri, revision FROM documents"
            " WHERE substr(uri, 1, length(?)) = ? AND deleted_at IS NULL",
            (uri_prefix, uri_prefix),
        )
        return {row["uri"]: row["revision"] for row in rows}

    @contextmanager
    def unit_of_work(self) -> Iterator[SQLiteWork]:
        with self.transaction() as conn:
            yield SQLiteWork(conn)

    def edges_revision(self, document_id: int) -> str | None:
        return _edges_revision(self.connection(), document_id)

    def retired_with_edges(self) -> list[int]:
        rows = self.connection().execute(
            "SELECT DISTINCT d.id FROM documents d JOIN relationships r"
            " ON r.source = 'document:' || d.id AND r.superseded_at IS NULL"
            " WHERE d.deleted_at IS NOT NULL ORDER BY d.id"
        )
        return [int(row[0]) for row in rows]

    def edges_behind(self, uri_prefix: str) -> set[str]:
        rows = self.connection().execute(
            "SELECT d.uri FROM documents d LEFT JOIN note_edges e ON e.document_id = d.id"
            " WHERE substr(d.uri, 1, length(?)) = ? AND d.deleted_at IS NULL AND d.kind = ?"
            " AND (e.revision IS NULL OR e.revision != d.revision)",
            (uri_prefix, uri_prefix, DocumentKind.MARKDOWN.value),
        )
        return {row[0] for row in rows}

    def document_history(self, document_id: int) -> list[Mapping[str, Any]]:
        self.get_document(document_id)
        rows = self.connection().execute(
            "SELECT revision, title, event, recorded_at FROM document_revisions"
            " WHERE document_id = ? ORDER BY id",
            (document_id,),
        )
        return [dict(row) for row in rows]

    # chunks and search

    def chunks_of(self, document_id: int) -> list[Chunk]:
        rows = self.connection().execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks c WHERE c.document_id = ? ORDER BY c.ordinal",
            (document_id,),
        )
        return [_chunk(row) for row in rows]

    def fetch_chunks(self, chunk_ids: Sequence[int]) -> dict[int, tuple[Chunk, DocumentHead]]:
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self.connection().execute(
            f"SELECT {_CHUNK_COLUMNS}, d.uri, d.title, d.domain, d.kind, d.revision"
            f" FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id IN ({marks})",
            tuple(chunk_ids),
        )
        found: dict[int, tuple[Chunk, DocumentHead]] = {}
        for row in rows:
            head = DocumentHead(
                id=row["document_id"],
                uri=row["uri"],
                title=row["title"],
                domain=row["domain"],
                kind=DocumentKind(row["kind"]),
                revision=row["revision"],
            )
            found[row["id"]] = (_chunk(row), head)
        return found

    # everything else

    def stats(self) -> StoreStats:
        conn = self.connection()
        live, retired = conn.execute(
            "SELECT count(*) FILTER (WHERE deleted_at IS NULL),"
            " count(*) FILTER (WHERE deleted_at IS NOT NULL) FROM documents"
        ).fetchone()
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return StoreStats(
            documents=live,
            retired_documents=retired,
            chunks=chunks,
            db_bytes=self.disk_bytes(),
            schema_version=self.schema_version(),
        )

    def disk_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            part = Path(f"{self.path}{suffix}")
            if part.exists():
                total += part.stat().st_size
        return total

    def record_capture(self, capture: Capture, max_rows: int) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO captures (at, operation, query, mode, filters, results, latency_ms)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    format_time(capture.at),
                    capture.operation,
                    capture.query,
                    capture.mode,
                    _dumps(dict(capture.filters)),
                    _dumps(list(capture.results)),
                    capture.latency_ms,
                ),
            )
            conn.execute(
                "DELETE FROM captures WHERE id <= (SELECT max(id) FROM captures) - ?", (max_rows,)
            )

    def captures(self) -> Iterator[Capture]:
        rows = self.connection().execute(
            "SELECT at, operation, query, mode, filters, results, latency_ms FROM captures"
            " ORDER BY id"
        )
        for row in rows:
            yield Capture(
                at=parse_time(row["at"]),
                operation=row["operation"],
                query=row["query"],
                mode=row["mode"],
                filters=orjson.loads(row["filters"]),
                results=tuple(orjson.loads(row["results"])),
                latency_ms=row["latency_ms"],
            )

    def export_records(self) -> Iterator[dict[str, Any]]:
        """Every record, read in one read transaction on a connection of its own: one
        snapshot, whatever writers do meanwhile (WAL lets them go on), and safe to iterate from
        any thread."""
        schema = self.schema_version()
        conn = self._reader()
        try:
            conn.execute("BEGIN")
            yield from transfer.export_records(conn, schema)
            conn.execute("COMMIT")
        finally:
            conn.close()

    def backup(self, target: Path) -> None:
        """A consistent copy of the whole database at `target` (which must not exist), taken
        while writers go on."""
        conn = self._reader()
        try:
            conn.execute("VACUUM INTO ?", (str(target),))
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"cannot back up {self.path} to {target}: {exc}") from exc
        finally:
            conn.close()

    def _reader(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        _configured(conn, self.config)
        return conn

    def import_records(
        self, records: Iterable[Mapping[str, Any]], functional: frozenset[str] = frozenset()
    ) -> ImportResult:
        with self.transaction() as conn:
            return transfer.import_records(conn, records, functional)

    # vectors

    def known_vector_hashes(self, model: str, hashes: Sequence[str]) -> set[str]:
        return vector_sql.known_hashes(self.connection(), model, hashes)

    def latest_chunk_change(self) -> int:
        return vector_sql.latest_change(self.connection())

    def chunk_changes_since(self, seq: int) -> tuple[int, list[int], list[int]]:
        return vector_sql.changes_since(self.connection(), seq)

    def load_vectors(
        self, model: str, dim: int, chunk_ids: Sequence[int] | None = None
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]:
        return vector_sql.load_vectors(self.connection(), model, dim, chunk_ids)

    def chunks_missing_vectors(
        self, model: str, limit: int
    ) -> list[tuple[int, str, Sequence[str], str]]:
        conn = self.connection()
        latest, since = vector_sql.latest_change(conn), vector_sql.covered_until(conn, model)
        rows = vector_sql.missing_vectors(conn, model, limit, since)
        if not rows:
            self._mark_covered(model, latest, since)
        return rows

    def count_missing_vectors(self, model: str) -> int:
        """Only chunks changed since the model's vectors were last found complete are looked
        at (every chunk, the first time), so that the check after each ingest stays cheap."""
        conn = self.connection()
        latest, since = vector_sql.latest_change(conn), vector_sql.covered_until(conn, model)
        missing = vector_sql.count_missing(conn, model, since)
        if not missing:
            self._mark_covered(model, latest, since)
        return missing

    def _mark_covered(self, model: str, latest: int, since: int | None) -> None:
        if since is None or latest > since:
            with self.transaction() as conn:
                vector_sql.mark_covered(conn, model, latest)

    def store_vectors(
        self, vectors: VectorBatch, hashes: Mapping[int, str], *, as_of: int | None = None
    ) -> None:
        with self.transaction() as conn:
            vector_sql.put_vectors(conn, vectors)
            vector_sql.set_hashes(conn, hashes, as_of)

    def chunk_ids_matching(self, filters: SearchFilters) -> set[int]:
        where, params = filter_sql(filters, SQLITE)
        rows = self.connection().execute(
            "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id"
            + (f" WHERE {where}" if where else ""),
            params,
        )
        return {row[0] for row in rows}


class SQLiteWork:
    """A `UnitOfWork` on a connection inside a write transaction that its caller commits."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @property
    def graph(self) -> GraphSession:
        return GraphWrites(self.conn)

    def write_documents(
        self, items: DocumentItems, now: datetime, vectors: VectorBatch | None = None
    ) -> list[WriteResult]:
        if vectors is not None and vectors.vectors:
            vector_sql.put_vectors(self.conn, vectors)
        pending = _PendingChunks()
        results = [self._write_one(draft, chunks, now, pending) for draft, chunks in items]
        pending.insert(self.conn)
        return results

    def _write_one(
        self,
        draft: DocumentDraft,
        chunks: Sequence[ChunkDraft],
        now: datetime,
        pending: _PendingChunks,
    ) -> WriteResult:
        conn = self.conn
        row = conn.execute(
            "SELECT id, revision, deleted_at FROM documents WHERE uri = ?", (draft.uri,)
        ).fetchone()
        if row is not None and row["id"] in pending.documents:  # the same uri twice
            pending.insert(conn)
        if row is not None and row["revision"] == draft.revision and not row["deleted_at"]:
            count = conn.execute(
                "SELECT count(*) FROM chunks WHERE document_id = ?", (row["id"],)
            ).fetchone()[0]
            return WriteResult(WriteStatus.DUPLICATE, row["id"], draft.revision, count)
        if row is None:
            document_id = self._insert_document(draft, now)
            status = WriteStatus.CREATED
        else:
            document_id = row["id"]
            self._replace_document(document_id, draft, now)
            status = WriteStatus.UPDATED
        pending.add(document_id, chunks)
        self._record_revision(document_id, draft.revision, draft.title, status, now)
        return WriteResult(status, document_id, draft.revision, len(chunks))

    def _insert_document(self, draft: DocumentDraft, now: datetime) -> int:
        stamp = format_time(now)
        cursor = self.conn.execute(
            "INSERT INTO documents (uri, title, domain, kind, revision, content, metadata,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                draft.uri,
                draft.title,
                draft.domain,
                draft.kind.value,
                draft.revision,
                draft.content,
                _dumps(dict(draft.metadata)),
                stamp,
                stamp,
            ),
        )
        return int(cursor.lastrowid or 0)

    def _replace_document(self, document_id: int, draft: DocumentDraft, now: datetime) -> None:
        self.conn.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))
        self.conn.execute(
            "UPDATE documents SET title = ?, domain = ?, kind = ?, revision = ?, content = ?,"
            " metadata = ?, updated_at = ?, deleted_at = NULL WHERE id = ?",
            (
                draft.title,
                draft.domain,
                draft.kind.value,
                draft.revision,
                draft.content,
                _dumps(dict(draft.metadata)),
                format_time(now),
                document_id,
            ),
        )

    def _record_revision(
        self, document_id: int, revision: str, title: str, event: str, now: datetime
    ) -> None:
        self.conn.execute(
            "INSERT INTO document_revisions (document_id, revision, title, event, recorded_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (document_id, revision, title, event, format_time(now)),
        )

    def retire_documents(self, document_ids: Sequence[int], now: datetime) -> int:
        retired = 0
        for document_id in document_ids:
            row = self.conn.execute(
                "SELECT revision, title FROM documents WHERE id = ? AND deleted_at IS NULL",
                (document_id,),
            ).fetchone()
            if row is None:
                continue
            self.conn.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))
            self.conn.execute(
                "UPDATE documents SET deleted_at = ? WHERE id = ?",
                (format_time(now), document_id),
            )
            self._record_revision(document_id, row["revision"], row["title"], "retired", now)
            retired += 1
        return retired

    def edges_revision(self, document_id: int) -> str | None:
        return _edges_revision(self.conn, document_id)

    def mark_edges_synced(self, document_id: int, revision: str) -> None:
        self.conn.execute(
            "INSERT INTO note_edges (document_id, revision) VALUES (?, ?)"
            " ON CONFLICT (document_id) DO UPDATE SET revision = excluded.revision",
            (document_id, revision),
        )


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


def _edges_revision(conn: sqlite3.Connection, document_id: int) -> str | None:
    row = conn.execute(
        "SELECT revision FROM note_edges WHERE document_id = ?", (document_id,)
    ).fetchone()
    return None if row is None else str(row[0])


class _PendingChunks:
    """The chunk rows of a batch, inserted a few hundred per statement.

    Each statement that writes to FTS5 runs in a statement savepoint, and FTS5 (SQLite 3.40)
    flushes its pending terms into a new segment at every savepoint: inserted one row per
    statement, every chunk made its own tiny segment, and merging them was most of the cost
    of a write."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.documents: set[int] = set()

    def add(self, document_id: int, chunks: Sequence[ChunkDraft]) -> None:
        self.documents.add(document_id)
        self.rows += [(document_id, *chunk_values(c)) for c in chunks]

    def insert(self, conn: sqlite3.Connection) -> None:
        for part in multirow.parts(conn, self.rows, 12):
            conn.execute(*multirow.statement(_CHUNK_INSERT, part))
        self.rows.clear()
        self.documents.clear()
