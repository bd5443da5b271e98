"""Export and import of every record as JSON-lines-ready dicts, for the SQLite store.

The stream starts with a header, then documents, their revision history, chunks and captures,
then the knowledge graph: entities, aliases and relationships (every version, retired ones too).
Import restores ids, so exporting a fresh brain's import gives back the same bytes. A document
whose id or uri is already taken is skipped with its chunks and history, and an entity whose id
or name is taken is skipped with its aliases and relationships: import never overwrites what a
brain holds. The record field `type` names the record, so an entity's type is exported as
`entity_type` and a relationship's as `relation`. Vectors are not exported: they are derived
from the chunks' text and the embedding model, and the importing brain computes them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from nexusbrain.errors import InvalidInput
from nexusbrain.records import DocumentKind, ImportResult, RetireReason
from nexusbrain.storage.sqlite import multirow

FORMAT = "nexusbrain-export"
FORMAT_VERSION = 1
HEADING_SEP = "\x1f"

_DOCUMENT_FIELDS = (
    "id",
    "uri",
    "title",
    "domain",
    "kind",
    "revision",
    "content",
    "metadata",
    "created_at",
    "updated_at",
    "deleted_at",
)
_REVISION_FIELDS = ("document_id", "revision", "title", "event", "recorded_at")
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
_CAPTURE_FIELDS = ("at", "operation", "query", "mode", "filters", "results", "latency_ms")
# (column, export field) pairs
_ENTITY_FIELDS = (
    ("id", "id"),
    ("key", "key"),
    ("name", "name"),
    ("type", "entity_type"),
    ("created_at", "created_at"),
    ("updated_at", "updated_at"),
)
_ALIAS_FIELDS = (
    ("key", "key"),
    ("alias", "alias"),
    ("entity_id", "entity_id"),
    ("created_at", "created_at"),
)
_RELATIONSHIP_FIELDS = (
    ("id", "id"),
    ("from_id", "from_id"),
    ("type", "relation"),
    ("to_id", "to_id"),
    ("valid_at", "valid_at"),
    ("invalid_at", "invalid_at"),
    ("created_at", "created_at"),
    ("superseded_at", "superseded_at"),
    ("reason", "reason"),
    ("source", "source"),
    ("supersedes", "supersedes"),
)
_GRAPH_TABLES = (
    ("entity", "entities", _ENTITY_FIELDS, "id"),
    ("alias", "entity_aliases", _ALIAS_FIELDS, "rowid"),
    ("relationship", "relationships", _RELATIONSHIP_FIELDS, "id"),
)


def export_records(conn: sqlite3.Connection, schema: int) -> Iterator[dict[str, Any]]:
    yield {"type": "header", "format": FORMAT, "version": FORMAT_VERSION, "schema": schema}
    for row in conn.execute("SELECT * FROM documents ORDER BY id"):
        record = {"type": "document", **{f: row[f] for f in _DOCUMENT_FIELDS}}
        record["metadata"] = orjson.loads(row["metadata"])
        yield record
    for row in conn.execute("SELECT * FROM document_revisions ORDER BY id"):
        yield {"type": "revision", **{f: row[f] for f in _REVISION_FIELDS}}
    for row in conn.execute("SELECT * FROM chunks ORDER BY id"):
        yield {
            "type": "chunk",
            **{f: row[f] for f in _CHUNK_FIELDS if f not in ("heading_path", "meta")},
            "heading_path": row["heading"].split(HEADING_SEP) if row["heading"] else [],
            "meta": orjson.loads(row["meta"]),
        }
    for row in conn.execute("SELECT * FROM captures ORDER BY id"):
        record = {"type": "capture", **{f: row[f] for f in _CAPTURE_FIELDS}}
        record["filters"] = orjson.loads(row["filters"])
        record["results"] = orjson.loads(row["results"])
        yield record
    for kind, table, fields, order in _GRAPH_TABLES:
        for row in conn.execute(f"SELECT * FROM {table} ORDER BY {order}"):
            yield {"type": kind, **{name: row[column] for column, name in fields}}


def _require(record: Mapping[str, Any], fields: Iterable[str], line: int) -> None:
    missing = [f for f in fields if f not in record]
    if missing:
        raise InvalidInput(
            f"import record {line} ({record.get('type')!r}) lacks field(s): {', '.join(missing)}"
        )


_CHUNK_IMPORT = (
    "INSERT INTO chunks (id, document_id, ordinal, char_start, char_end, line_start,"
    " line_end, heading, text, unit, meta, context) VALUES "
)


class _Importer:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.pending_chunks: list[tuple[int, tuple[Any, ...]]] = []  # (record line, row)
        self.kept: set[int] = set()
        self.kept_entities: set[int] = set()
        self.kept_relationships: set[int] = set()
        self.documents = 0
        self.chunks = 0
        self.skipped = 0
        self.records = 0

    def document(self, r: Mapping[str, Any], line: int) -> None:
        _require(r, _DOCUMENT_FIELDS, line)
        try:
            DocumentKind(r["kind"])
        except ValueError:
            raise InvalidInput(f"import record {line}: unknown kind {r['kind']!r}") from None
        taken = self.conn.execute(
            "SELECT 1 FROM documents WHERE id = ? OR uri = ?", (r["id"], r["uri"])
        ).fetchone()
        if taken:
            self.skipped += 1
            return
        values = [r[f] for f in _DOCUMENT_FIELDS]
        values[_DOCUMENT_FIELDS.index("metadata")] = orjson.dumps(r["metadata"]).decode()
        self.conn.execute(
            f"INSERT INTO documents ({', '.join(_DOCUMENT_FIELDS)})"
            f" VALUES ({', '.join('?' * len(_DOCUMENT_FIELDS))})",
            values,
        )
        self.kept.add(int(r["id"]))
        self.documents += 1

    def revision(self, r: Mapping[str, Any], line: int) -> None:
        _require(r, _REVISION_FIELDS, line)
        if r["document_id"] in self.kept:
            self.conn.execute(
                f"INSERT INTO document_revisions ({', '.join(_REVISION_FIELDS)})"
                " VALUES (?, ?, ?, ?, ?)",
                [r[f] for f in _REVISION_FIELDS],
            )

    def chunk(self, r: Mapping[str, Any], line: int) -> None:
        _require(r, _CHUNK_FIELDS, line)
        if r["document_id"] not in self.kept:
            self.skipped += 1
            return
        values = (
            *(r[f] for f in _CHUNK_FIELDS[:7]),
            HEADING_SEP.join(r["heading_path"]),
            r["text"],
            r["unit"],
            orjson.dumps(r["meta"]).decode(),
            r["context"],
        )
        self.pending_chunks.append((line, values))
        self.chunks += 1
        if len(self.pending_chunks) >= multirow.MAX_ROWS:
            self.flush_chunks()

    def flush_chunks(self) -> None:
        """Insert the pending chunk rows a few hundred per statement: FTS5 makes a segment per
        statement (sqlite._PendingChunks). A statement that fails is undone alone and its rows
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
        _require(r, _CAPTURE_FIELDS, line)
        self.conn.execute(
            f"INSERT INTO captures ({', '.join(_CAPTURE_FIELDS)}) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                *(r[f] for f in _CAPTURE_FIELDS[:4]),
                orjson.dumps(r["filters"]).decode(),
                orjson.dumps(r["results"]).decode(),
                r["latency_ms"],
            ),
        )

    def entity(self, r: Mapping[str, Any], line: int) -> None:
        _require(r, (name for _, name in _ENTITY_FIELDS), line)
        if self._name_taken(r["key"]) or self._exists("entities", r["id"]):
            self.skipped += 1
            return
        self._insert("entities", _ENTITY_FIELDS, r)
        self.kept_entities.add(int(r["id"]))

    def alias(self, r: Mapping[str, Any], line: int) -> None:
        _require(r, (name for _, name in _ALIAS_FIELDS), line)
        if r["entity_id"] not in self.kept_entities or self._name_taken(r["key"]):
            self.skipped += 1
            return
        self._insert("entity_aliases", _ALIAS_FIELDS, r)

    def relationship(self, r: Mapping[str, Any], line: int) -> None:
        _require(r, (name for _, name in _RELATIONSHIP_FIELDS), line)
        if r["reason"] is not None:
            RetireReason(r["reason"])
        ends_kept = {r["from_id"], r["to_id"]} <= self.kept_entities
        lineage_kept = r["supersedes"] is None or r["supersedes"] in self.kept_relationships
        if not (ends_kept and lineage_kept) or self._exists("relationships", r["id"]):
            self.skipped += 1
            return
        self._insert("relationships", _RELATIONSHIP_FIELDS, r)
        self.kept_relationships.add(int(r["id"]))

    def _name_taken(self, key: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM entities WHERE key = ? UNION ALL SELECT 1 FROM entity_aliases"
            " WHERE key = ?",
            (key, key),
        ).fetchone()
        return row is not None

    def _exists(self, table: str, row_id: int) -> bool:
        return (
            self.conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (row_id,)).fetchone()
            is not None
        )

    def _insert(
        self, table: str, fields: tuple[tuple[str, str], ...], r: Mapping[str, Any]
    ) -> None:
        columns = ", ".join(column for column, _ in fields)
        self.conn.execute(
            f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * len(fields))})",
            [r[name] for _, name in fields],
        )

    def header(self, r: Mapping[str, Any], line: int) -> None:
        if r.get("format") != FORMAT or r.get("version") != FORMAT_VERSION:
            raise InvalidInput(
                f"import record {line}: not a {FORMAT} v{FORMAT_VERSION} stream"
                f" (format={r.get('format')!r}, version={r.get('version')!r})"
            )


def import_records(conn: sqlite3.Connection, records: Iterable[Mapping[str, Any]]) -> ImportResult:
    importer = _Importer(conn)
    handlers = {
        "header": importer.header,
        "document": importer.document,
        "revision": importer.revision,
        "chunk": importer.chunk,
        "capture": importer.capture,
        "entity": importer.entity,
        "alias": importer.alias,
        "relationship": importer.relationship,
    }
    for line, record in enumerate(records, start=1):
        handler = handlers.get(str(record.get("type")))
        if handler is None:
            raise InvalidInput(f"import record {line}: unknown type {record.get('type')!r}")
        try:
            handler(record, line)
        except (sqlite3.IntegrityError, sqlite3.InterfaceError, TypeError, ValueError) as exc:
            raise InvalidInput(f"import record {line} is invalid: {exc}") from exc
        importer.records += 1
    importer.flush_chunks()
    return ImportResult(importer.documents, importer.chunks, importer.skipped, importer.records)
