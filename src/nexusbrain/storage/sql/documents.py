"""The document store's SQL that is the same on every engine (storage/base.py's DocumentStore):
documents, revisions and chunks as read, the chunk change log as a reader follows it, which
chunks lack a vector, captures; and the parts of a write that are the same, a retirement and a
note's edges revision; an import (sql/transfer.py). A backend's store adds what is its own: its
write path (a UnitOfWork), the transaction an import runs in and how it writes chunk rows, its
vector rows, its stats, and the snapshot it exports from (sql/transfer.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, ClassVar

import orjson

from nexusbrain.errors import NotFound
from nexusbrain.records import (
    Capture,
    Chunk,
    Document,
    DocumentHead,
    DocumentKind,
    ImportResult,
    ListedDocument,
    Progress,
    SearchFilters,
)
from nexusbrain.storage import exchange
from nexusbrain.storage.exchange import HEADING_SEP
from nexusbrain.storage.sql import transfer
from nexusbrain.storage.sql.dialect import Connection, Connections, Dialect
from nexusbrain.storage.sql.filters import chunk_ids

_DOCUMENT = (
    "SELECT id, uri, title, domain, kind, revision, content, metadata, created_at, updated_at,"
    " deleted_at FROM documents"
)
_CHUNK_COLUMNS = (
    "c.id, c.document_id, c.ordinal, c.char_start, c.char_end, c.line_start, c.line_end,"
    " c.heading, c.text, c.unit, c.meta, c.context, c.signature"
)
REVISION = (
    "INSERT INTO document_revisions (document_id, revision, title, event, recorded_at)"
    " VALUES (?, ?, ?, ?, ?)"
)
_CAPTURE_COLUMNS = "at, operation, query, mode, filters, results, latency_ms"


def _document(d: Dialect, row: Sequence[Any]) -> Document:
    return Document(
        id=row[0],
        uri=row[1],
        title=row[2],
        domain=row[3],
        kind=DocumentKind(row[4]),
        revision=row[5],
        content=row[6],
        metadata=orjson.loads(row[7]),
        created_at=d.time_value(row[8]),
        updated_at=d.time_value(row[9]),
        deleted_at=d.time_value(row[10]) if row[10] is not None else None,
    )


def _chunk(row: Sequence[Any]) -> Chunk:
    heading: str = row[7]
    return Chunk(
        id=row[0],
        document_id=row[1],
        ordinal=row[2],
        char_start=row[3],
        char_end=row[4],
        line_start=row[5],
        line_end=row[6],
        heading_path=tuple(heading.split(HEADING_SEP)) if heading else (),
        text=row[8],
        unit=row[9],
        meta=orjson.loads(row[10]),
        context=row[11],
        signature=row[12],
    )


class DocumentReads:
    """A DocumentStore's reads (and its small writes of its own: captures, vector coverage;
    and an import) over a backend's connections. The backend's store, a subclass, says where
    the newest chunk change seq is (`latest_change`) and how an import writes (`importing`),
    and adds the rest of the protocol."""

    latest_change: ClassVar[str]  # a query of the newest chunk change seq

    def __init__(self, db: Connections) -> None:
        self.db = db
        self.d = db.dialect

    def import_records(
        self,
        records: Iterable[Mapping[str, Any]],
        functional: frozenset[str] = frozenset(),
        progress: Progress | None = None,
    ) -> ImportResult:
        with exchange.staged(records) as stage, self.importing() as (conn, chunks):
            return transfer.import_records(conn, self.d, stage, chunks, functional, progress)

    def importing(self) -> AbstractContextManager[tuple[Connection, transfer.ChunkImport]]:
        """The write transaction an import runs in, and how it writes chunk rows (the
        engine's own)."""
        raise NotImplementedError

    def identity(self) -> str:
        """The random id the store got when it was created."""
        with self.db.read() as conn:
            return str(conn.execute("SELECT id FROM store_identity").fetchone()[0])

    # documents

    def get_document(self, document_id: int) -> Document:
        found = _document_where(self.db, "id", document_id)
        if found is None:
            raise NotFound(f"no document with id {document_id}")
        return found

    def find_document(self, uri: str) -> Document | None:
        return _document_where(self.db, "uri", uri)

    def list_documents(self, uri_prefix: str, limit: int) -> tuple[int, list[ListedDocument]]:
        prefix, params = self.d.prefix("d.uri", uri_prefix)
        live = f"FROM documents d WHERE {prefix} AND d.deleted_at IS NULL"
        query = (
            "SELECT d.id, d.uri, d.title, d.kind, d.updated_at,"
            f" (SELECT count(*) FROM chunks c WHERE c.document_id = d.id) {live}"
            f" ORDER BY d.uri{self.d.text_order} LIMIT ?"
        )
        with self.db.read() as conn:
            total = conn.execute(self.d.sql(f"SELECT count(*) {live}"), params).fetchone()[0]
            rows = conn.execute(self.d.sql(query), [*params, limit]).fetchall()
        listed = [
            ListedDocument(r[0], r[1], r[2], DocumentKind(r[3]), r[5], self.d.time_value(r[4]))
            for r in rows
        ]
        return int(total), listed

    def revisions_under(self, uri_prefix: str) -> Mapping[str, str]:
        prefix, params = self.d.prefix("uri", uri_prefix)
        query = f"SELECT uri, revision FROM documents WHERE {prefix} AND deleted_at IS NULL"
        with self.db.read() as conn:
            rows = conn.execute(self.d.sql(query), params).fetchall()
        return {row[0]: row[1] for row in rows}

    def edges_revision(self, document_id: int) -> str | None:
        with self.db.read() as conn:
            return edges_revision(conn, self.d, document_id)

    def retired_with_edges(self) -> list[int]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT DISTINCT d.id FROM documents d JOIN relationships r"
                " ON r.source = 'document:' || d.id AND r.superseded_at IS NULL"
                " WHERE d.deleted_at IS NOT NULL ORDER BY d.id"
            ).fetchall()
        return [int(row[0]) for row in rows]

    def edges_behind(self, uri_prefix: str) -> set[str]:
        prefix, params = self.d.prefix("d.uri", uri_prefix)
        query = (
            "SELECT d.uri FROM documents d LEFT JOIN note_edges e ON e.document_id = d.id"
            f" WHERE {prefix} AND d.deleted_at IS NULL AND d.kind = ?"
            " AND (e.revision IS NULL OR e.revision != d.revision)"
        )
        with self.db.read() as conn:
            rows = conn.execute(self.d.sql(query), [*params, DocumentKind.MARKDOWN.value])
            return {row[0] for row in rows.fetchall()}

    def document_history(self, document_id: int) -> list[Mapping[str, Any]]:
        self.get_document(document_id)
        with self.db.read() as conn:
            rows = conn.execute(
                self.d.sql(
                    "SELECT revision, title, event, recorded_at FROM document_revisions"
                    " WHERE document_id = ? ORDER BY id"
                ),
                (document_id,),
            ).fetchall()
        return [
            {"revision": r[0], "title": r[1], "event": r[2], "recorded_at": self.d.time_text(r[3])}
            for r in rows
        ]

    # chunks

    def chunks_of(self, document_id: int) -> list[Chunk]:
        query = f"SELECT {_CHUNK_COLUMNS} FROM chunks c WHERE c.document_id = ? ORDER BY c.ordinal"
        with self.db.read() as conn:
            rows = conn.execute(self.d.sql(query), (document_id,)).fetchall()
        return [_chunk(row) for row in rows]

    def fetch_chunks(self, chunk_ids: Sequence[int]) -> dict[int, tuple[Chunk, DocumentHead]]:
        if not chunk_ids:
            return {}
        wanted, params = self.d.any_of("c.id", chunk_ids)
        query = (
            f"SELECT {_CHUNK_COLUMNS}, d.uri, d.title, d.domain, d.kind, d.revision,"
            " CASE WHEN d.kind = 'memory' THEN d.metadata END"
            f" FROM chunks c JOIN documents d ON d.id = c.document_id WHERE {wanted}"
        )
        with self.db.read() as conn:
            rows = conn.execute(self.d.sql(query), params).fetchall()
        found: dict[int, tuple[Chunk, DocumentHead]] = {}
        for row in rows:
            kind = DocumentKind(row[16])
            head = DocumentHead(
                row[1], row[13], row[14], row[15], kind, row[17], tags=_tags(row[18])
            )
            found[row[0]] = (_chunk(row), head)
        return found

    def chunk_ids_matching(self, filters: SearchFilters) -> set[int]:
        with self.db.read() as conn:
            return set(chunk_ids(conn, filters, self.d))

    # the chunk change log

    def latest_chunk_change(self) -> int:
        with self.db.read() as conn:
            row = conn.execute(self.latest_change).fetchone()
        return int(row[0]) if row else 0

    def chunk_changes_since(self, seq: int) -> tuple[int, list[int], list[int]]:
        with self.db.read() as conn:
            return changes_since(conn, self.d, seq)

    # vectors

    def known_vector_hashes(self, model: str, hashes: Sequence[str]) -> set[str]:
        found: set[str] = set()
        with self.db.read() as conn:
            for part in self.d.parts(hashes):
                held, params = self.d.any_of("text_hash", part)
                query = f"SELECT text_hash FROM vectors WHERE model = ? AND {held}"
                found.update(row[0] for row in conn.execute(self.d.sql(query), [model, *params]))
        return found

    def chunks_missing_vectors(
        self, model: str, limit: int
    ) -> list[tuple[int, str, Sequence[str], str]]:
        with self.db.read() as conn:
            latest, since = _coverage(conn, self.d, self.latest_change, model)
            params = (model,) if since is None else (since, model)
            query = f"SELECT c.id, c.text, c.heading, c.context{_missing(since)}"
            rows = conn.execute(
                self.d.sql(query + " ORDER BY c.id LIMIT ?"), (*params, limit)
            ).fetchall()
        if not rows:
            _mark_covered(self.db, model, latest, since)
        return [(r[0], r[1], r[2].split(HEADING_SEP) if r[2] else [], r[3]) for r in rows]

    def count_missing_vectors(self, model: str) -> int:
        """Only chunks changed since the model's vectors were last found complete are looked
        at (every chunk, the first time), so that the check after each ingest stays cheap."""
        with self.db.read() as conn:
            latest, since = _coverage(conn, self.d, self.latest_change, model)
            params = (model,) if since is None else (since, model)
            row = conn.execute(self.d.sql(f"SELECT count(*){_missing(since)}"), params).fetchone()
        missing = int(row[0]) if row else 0
        if not missing:
            _mark_covered(self.db, model, latest, since)
        return missing

    def vector_counts(self) -> dict[str, int]:
        with self.db.read() as conn:
            rows = conn.execute("SELECT model, count(*) FROM vectors GROUP BY model").fetchall()
        return {str(row[0]): int(row[1]) for row in rows}

    def drop_vectors(self, model: str) -> int:
        with self.db.write(f"dropping the vectors of {model} failed") as conn:
            query = self.d.sql("SELECT count(*) FROM vectors WHERE model = ?")
            count = conn.execute(query, (model,)).fetchone()[0]
            conn.execute(self.d.sql("DELETE FROM vectors WHERE model = ?"), (model,))
            conn.execute(self.d.sql("DELETE FROM vector_coverage WHERE model = ?"), (model,))
        return int(count)

    # the brain's own settings

    def setting(self, key: str) -> str | None:
        with self.db.read() as conn:
            query = self.d.sql("SELECT value FROM brain_settings WHERE key = ?")
            row = conn.execute(query, (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_setting(self, key: str, value: str) -> None:
        query = (
            "INSERT INTO brain_settings (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        )
        with self.db.own_write("recording a setting failed") as conn:
            conn.execute(self.d.sql(query), (key, value))

    # captures

    def record_capture(self, capture: Capture, max_rows: int) -> None:
        with self.db.own_write("recording a capture failed") as conn:
            conn.execute(
                self.d.sql(
                    f"INSERT INTO captures ({_CAPTURE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"
                ),
                (
                    self.d.time_param(capture.at),
                    capture.operation,
                    capture.query,
                    capture.mode,
                    orjson.dumps(dict(capture.filters)).decode(),
                    orjson.dumps(list(capture.results)).decode(),
                    capture.latency_ms,
                ),
            )
            conn.execute(
                self.d.sql("DELETE FROM captures WHERE id <= (SELECT max(id) FROM captures) - ?"),
                (max_rows,),
            )

    def captures(self) -> Iterator[Capture]:
        with self.db.read() as conn:
            rows = conn.execute(f"SELECT {_CAPTURE_COLUMNS} FROM captures ORDER BY id").fetchall()
        for row in rows:
            yield Capture(
                at=self.d.time_value(row[0]),
                operation=row[1],
                query=row[2],
                mode=row[3],
                filters=orjson.loads(row[4]),
                results=tuple(orjson.loads(row[5])),
                latency_ms=row[6],
            )


def _document_where(db: Connections, column: str, value: Any) -> Document | None:
    with db.read() as conn:
        row = conn.execute(db.dialect.sql(f"{_DOCUMENT} WHERE {column} = ?"), (value,)).fetchone()
    return _document(db.dialect, row) if row else None


def _coverage(conn: Connection, d: Dialect, latest: str, model: str) -> tuple[int, int | None]:
    """(the newest change seq, the seq up to which the model's vectors are complete):
    `vector_coverage.seq` is a change seq up to which every live chunk had a vector for
    the model, so chunks changed after it are the only ones that can lack one (every
    insert and re-hash of a chunk is logged, and vectors are never deleted)."""
    query = f"SELECT ({latest}), (SELECT seq FROM vector_coverage WHERE model = ?)"
    row = conn.execute(d.sql(query), (model,)).fetchone()
    return int(row[0]), None if row[1] is None else int(row[1])


def _mark_covered(db: Connections, model: str, latest: int, since: int | None) -> None:
    """Record that no chunk changed up to `latest` (read before looking for missing
    vectors, so that changes made meanwhile stay after it) lacks a vector for `model`."""
    if since is not None and latest <= since:
        return
    query = (
        "INSERT INTO vector_coverage (model, seq) VALUES (?, ?) ON CONFLICT (model)"
        f" DO UPDATE SET seq = {db.dialect.greatest}(vector_coverage.seq, excluded.seq)"
    )
    with db.own_write("database write failed") as conn:
        conn.execute(db.dialect.sql(query), (model, latest))


def _missing(since: int | None) -> str:
    """The chunks without a vector for the model (a parameter); with `since` (the parameter
    before it), only among the chunks changed after that seq."""
    changed = (
        "" if since is None else "c.id IN (SELECT chunk_id FROM chunk_changes WHERE seq > ?) AND "
    )
    return (
        f" FROM chunks c WHERE {changed}(c.text_hash IS NULL OR NOT EXISTS"
        " (SELECT 1 FROM vectors v WHERE v.model = ? AND v.text_hash = c.text_hash))"
    )


def changes_since(conn: Connection, d: Dialect, seq: int) -> tuple[int, list[int], list[int]]:
    """(the newest change seq, chunk ids added or re-hashed since `seq`, chunk ids removed)."""
    rows = conn.execute(
        d.sql("SELECT seq, chunk_id, added FROM chunk_changes WHERE seq > ? ORDER BY seq"), (seq,)
    ).fetchall()
    if not rows:
        return seq, [], []
    state: dict[int, bool] = {}
    for _, chunk_id, added in rows:
        state[chunk_id] = bool(added)
    added_ids = [c for c, live in state.items() if live]
    gone = [c for c, live in state.items() if not live]
    return int(rows[-1][0]), added_ids, gone


def edges_revision(conn: Connection, d: Dialect, document_id: int) -> str | None:
    """The revision of the note that its graph edges follow (None: not known)."""
    query = d.sql("SELECT revision FROM note_edges WHERE document_id = ?")
    row = conn.execute(query, (document_id,)).fetchone()
    return None if row is None else str(row[0])


def retire(
    conn: Connection,
    d: Dialect,
    document_ids: Sequence[int],
    now: datetime,
    delete_chunks: Callable[[int], None],
) -> int:
    """Retire the live ones of these documents (their chunks deleted by `delete_chunks`, the
    engine's, their rows and history kept), inside the caller's write transaction."""
    retired = 0
    for document_id in document_ids:
        row = conn.execute(
            d.sql("SELECT revision, title FROM documents WHERE id = ? AND deleted_at IS NULL"),
            (document_id,),
        ).fetchone()
        if row is None:
            continue
        delete_chunks(document_id)
        stamp = d.time_param(now)
        conn.execute(
            d.sql("UPDATE documents SET deleted_at = ? WHERE id = ?"), (stamp, document_id)
        )
        conn.execute(d.sql(REVISION), (document_id, row[0], row[1], "retired", stamp))
        retired += 1
    return retired


def _tags(metadata: str | None) -> tuple[str, ...]:
    """A memory's tags, from its metadata (read for memories only)."""
    if not metadata:
        return ()
    tags = orjson.loads(metadata).get("tags")
    return tuple(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else ()
