"""Export and import rows for the SQLite store. The format, its validation and how an import
merges into a brain with data are engine-neutral: storage/exchange.py."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from nexusbrain.errors import InvalidInput
from nexusbrain.records import ImportResult, RetireReason
from nexusbrain.storage import exchange, merge
from nexusbrain.storage.sqlite import multirow

HEADING_SEP = exchange.HEADING_SEP

_CHUNK_FIELDS = (
    "id",
    "document_id",
    "ordinal",
    "char_start",
    "char_end",
    "line_start",
    "line_end",
    "heading_path",
    "text",
    "unit",
    "meta",
    "context",
)
_GRAPH_TABLES = (
    ("entity", "entities", exchange.ENTITY_FIELDS, "id"),
    ("alias", "entity_aliases", exchange.ALIAS_FIELDS, "rowid"),
    ("relationship", "relationships", exchange.RELATIONSHIP_FIELDS, "id"),
    (
        "statement",
        "note_statements",
        exchange.STATEMENT_FIELDS,
        "document_id, from_id, type, to_id",
    ),
)


def export_records(conn: sqlite3.Connection, schema: int) -> Iterator[dict[str, Any]]:
    yield {
        "type": "header",
        "format": exchange.FORMAT,
        "version": exchange.FORMAT_VERSION,
        "schema": schema,
    }
    for row in conn.execute("SELECT * FROM documents ORDER BY id"):
        record = {"type": "document", **{f: row[f] for f in exchange.DOCUMENT_FIELDS}}
        record["metadata"] = orjson.loads(row["metadata"])
        yield record
    for row in conn.execute("SELECT * FROM document_revisions ORDER BY id"):
        yield {"type": "revision", **{f: row[f] for f in exchange.REVISION_FIELDS}}
    for row in conn.execute("SELECT * FROM chunks ORDER BY id"):
        yield {
            "type": "chunk",
            **{f: row[f] for f in _CHUNK_FIELDS if f not in ("heading_path", "meta")},
            "heading_path": row["heading"].split(HEADING_SEP) if row["heading"] else [],
            "meta": orjson.loads(row["meta"]),
        }
    for row in conn.execute("SELECT * FROM captures ORDER BY id"):
        record = {"type": "capture", **{f: row[f] for f in exchange.CAPTURE_FIELDS}}
        record["filters"] = orjson.loads(row["filters"])
        record["results"] = orjson.loads(row["results"])
        yield record
    for kind, table, fields, order in _GRAPH_TABLES:
        for row in conn.execute(f"SELECT * FROM {table} ORDER BY {order}"):
            yield {"type": kind, **{name: row[column] for column, name in fields}}


_CHUNK_IMPORT = (
    "INSERT INTO chunks (id, document_id, ordinal, char_start, char_end, line_start,"
    " line_end, heading, text, unit, meta, context) VALUES "
)


class _Importer:
    """Inserts records as they are, ids and all (a merge has made them fit: exchange.py)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.pending_chunks: list[tuple[int, tuple[Any, ...]]] = []  # (record line, row)

    def document(self, r: Mapping[str, Any], line: int) -> None:
        values = [r[f] for f in exchange.DOCUMENT_FIELDS]
        values[exchange.DOCUMENT_FIELDS.index("metadata")] = orjson.dumps(r["metadata"]).decode()
        self.conn.execute(
            f"INSERT INTO documents ({', '.join(exchange.DOCUMENT_FIELDS)})"
            f" VALUES ({', '.join('?' * len(exchange.DOCUMENT_FIELDS))})",
            values,
        )

    def replace(self, r: Mapping[str, Any]) -> None:
        """A document that is here already takes the import's row; its chunks go (the
        import's come as inserts, and so do its statements)."""
        self.conn.execute("DELETE FROM chunks WHERE document_id = ?", (r["id"],))
        self.conn.execute("DELETE FROM note_statements WHERE document_id = ?", (r["id"],))
        fields = [f for f in exchange.DOCUMENT_FIELDS if f not in ("id", "uri")]
        values = [orjson.dumps(r[f]).decode() if f == "metadata" else r[f] for f in fields]
        self.conn.execute(
            f"UPDATE documents SET {', '.join(f'{f} = ?' for f in fields)} WHERE id = ?",
            [*values, r["id"]],
        )

    def revision(self, r: Mapping[str, Any], line: int) -> None:
        self.conn.execute(
            f"INSERT INTO document_revisions ({', '.join(exchange.REVISION_FIELDS)})"
            " VALUES (?, ?, ?, ?, ?)",
            [r[f] for f in exchange.REVISION_FIELDS],
        )

    def chunk(self, r: Mapping[str, Any], line: int) -> None:
        values = (
            *(r[f] for f in _CHUNK_FIELDS[:7]),
            HEADING_SEP.join(r["heading_path"]),
            r["text"],
            r["unit"],
            orjson.dumps(r["meta"]).decode(),
            r["context"],
        )
        self.pending_chunks.append((line, values))
        if len(self.pending_chunks) >= multirow.MAX_ROWS:
            self.flush_chunks()

    def flush_chunks(self) -> None:
        """Insert the pending chunk rows a few hundred per statement: FTS5 makes a segment per
        statement (store._PendingChunks). A statement that fails is undone alone and its rows
        are tried one at a time, so that the error names the record's line."""
        pending, self.pending_chunks = self.pending_chunks, []
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

    def capture(self, r: Mapping[str, Any], line: int) -> None:
        self.conn.execute(
            f"INSERT INTO captures ({', '.join(exchange.CAPTURE_FIELDS)})"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                *(r[f] for f in exchange.CAPTURE_FIELDS[:4]),
                orjson.dumps(r["filters"]).decode(),
                orjson.dumps(r["results"]).decode(),
                r["latency_ms"],
            ),
        )

    def entity(self, r: Mapping[str, Any], line: int) -> None:
        self._insert("entities", exchange.ENTITY_FIELDS, r)

    def alias(self, r: Mapping[str, Any], line: int) -> None:
        self._insert("entity_aliases", exchange.ALIAS_FIELDS, r)

    def relationship(self, r: Mapping[str, Any], line: int) -> None:
        self._insert("relationships", exchange.RELATIONSHIP_FIELDS, r)

    def statement(self, r: Mapping[str, Any], line: int) -> None:
        self._insert("note_statements", exchange.STATEMENT_FIELDS, r)

    def header(self, r: Mapping[str, Any], line: int) -> None:
        """Checked by exchange.checked."""

    def _insert(
        self, table: str, fields: tuple[tuple[str, str], ...], r: Mapping[str, Any]
    ) -> None:
        columns = ", ".join(column for column, _ in fields)
        self.conn.execute(
            f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * len(fields))})",
            [r[name] for _, name in fields],
        )


def import_records(
    conn: sqlite3.Connection,
    records: Iterable[Mapping[str, Any]],
    functional: frozenset[str] = frozenset(),
) -> ImportResult:
    """Validate every record, then restore them as they are into an empty brain, or merge
    them into one with data (exchange.merged); all in the caller's transaction."""
    stream = exchange.checked(records)
    plan = merge.planned(stream, _target(conn, functional))
    importer = _Importer(conn)
    for record in plan.replaced:
        importer.replace(record)
    for relationship_id, at in plan.retired:
        conn.execute(
            "UPDATE relationships SET superseded_at = ?, reason = ?"
            " WHERE id = ? AND superseded_at IS NULL",
            (at, RetireReason.SOURCE_REVISED.value, relationship_id),
        )
    handlers = {kind: getattr(importer, kind) for kind in exchange.KINDS}
    for line, record in enumerate(plan.inserts, start=1):
        try:
            handlers[str(record["type"])](record, line)
        except (sqlite3.IntegrityError, sqlite3.InterfaceError) as exc:
            raise InvalidInput(f"import record {line} is invalid: {exc}") from exc
    importer.flush_chunks()
    return plan.result(len(stream))


def _target(conn: sqlite3.Connection, functional: frozenset[str]) -> merge.Target:
    documents = {
        r[0]: merge.TargetDocument(r[1], r[2], r[3])
        for r in conn.execute("SELECT uri, id, revision, updated_at FROM documents")
    }
    revisions: dict[int, set[tuple[str, str, str]]] = {}
    for r in conn.execute(
        "SELECT document_id, revision, event, recorded_at FROM document_revisions"
    ):
        revisions.setdefault(r[0], set()).add((r[1], r[2], r[3]))
    entities = dict(conn.execute("SELECT key, id FROM entities").fetchall())
    entities.update(conn.execute("SELECT key, entity_id FROM entity_aliases").fetchall())
    current = [
        merge.HeldFact(*r)
        for r in conn.execute(
            "SELECT r.id, r.from_id, r.type, r.to_id, r.valid_at, r.invalid_at, r.source, e.name"
            " FROM relationships r JOIN entities e ON e.id = r.to_id"
            " WHERE r.superseded_at IS NULL"
        )
    ]
    next_ids = {
        name: int(conn.execute(f"SELECT coalesce(max(id), 0) + 1 FROM {table}").fetchone()[0])
        for name, table in (
            ("document", "documents"),
            ("chunk", "chunks"),
            ("entity", "entities"),
            ("relationship", "relationships"),
        )
    }
    return merge.Target(documents, revisions, entities, current, next_ids, functional)
