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

import math
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from enum import StrEnum
from typing import Any

import orjson

from nexusbrain.clock import format_time, parse_time
from nexusbrain.errors import InvalidInput
from nexusbrain.records import MAX_ID, DocumentKind, ImportResult, RetireReason, json_problem
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


# Validation: every field of every imported record, checked before it is written, so that
# nothing an import stores can break a later read. Each check returns why a value is wrong.
Check = Callable[[Any], str | None]


def _id(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_ID
    return None if ok else f"must be an id (an integer from 1 to {MAX_ID})"


def _count(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_ID
    return None if ok else "must be an integer >= 0"


def _number(value: Any) -> str | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return None if ok and value >= 0 else "must be a number >= 0"


def _text(value: Any) -> str | None:
    return None if isinstance(value, str) else "must be a string"


def _name(value: Any) -> str | None:
    return _text(value) or (None if value.strip() else "must not be empty")


def _time(value: Any) -> str | None:
    try:
        if isinstance(value, str) and format_time(parse_time(value)) == value:
            return None
    except ValueError:
        pass
    return "is not a UTC time as export writes it (e.g. 2025-01-31T09:30:00.000000+00:00)"


def _object(value: Any) -> str | None:
    return None if isinstance(value, dict) else "must be a JSON object"


def _list(value: Any) -> str | None:
    return None if isinstance(value, list) else "must be a JSON list"


def _headings(value: Any) -> str | None:
    ok = isinstance(value, list) and all(isinstance(h, str) and HEADING_SEP not in h for h in value)
    return None if ok else "must be a list of strings (without \\x1f)"


def _one_of(kind: type[StrEnum]) -> Check:
    def check(value: Any) -> str | None:
        choices = ", ".join(k.value for k in kind)
        known = isinstance(value, str) and value in {k.value for k in kind}
        return None if known else f"must be one of: {choices}"

    return check


def _optional(check: Check) -> Check:
    return lambda value: None if value is None else check(value)


_RECORD_FIELDS: dict[str, dict[str, Check]] = {
    "document": {
        "id": _id,
        "uri": _name,
        "title": _text,
        "domain": _name,
        "kind": _one_of(DocumentKind),
        "revision": _name,
        "content": _text,
        "metadata": _object,
        "created_at": _time,
        "updated_at": _time,
        "deleted_at": _optional(_time),
    },
    "revision": {
        "document_id": _id,
        "revision": _name,
        "title": _text,
        "event": _name,
        "recorded_at": _time,
    },
    "chunk": {
        "id": _id,
        "document_id": _id,
        "ordinal": _count,
        "char_start": _count,
        "char_end": _count,
        "line_start": _count,
        "line_end": _count,
        "heading_path": _headings,
        "text": _text,
        "unit": _optional(_text),
        "meta": _object,
        "context": _text,
    },
    "capture": {
        "at": _time,
        "operation": _name,
        "query": _text,
        "mode": _optional(_text),
        "filters": _object,
        "results": _list,
        "latency_ms": _number,
    },
    "entity": {
        "id": _id,
        "key": _name,
        "name": _name,
        "entity_type": _optional(_text),
        "created_at": _time,
        "updated_at": _time,
    },
    "alias": {"key": _name, "alias": _name, "entity_id": _id, "created_at": _time},
    "relationship": {
        "id": _id,
        "from_id": _id,
        "relation": _name,
        "to_id": _id,
        "valid_at": _optional(_time),
        "invalid_at": _optional(_time),
        "created_at": _time,
        "superseded_at": _optional(_time),
        "reason": _optional(_one_of(RetireReason)),
        "source": _optional(_text),
        "supersedes": _optional(_id),
    },
}


def check_record(record: Mapping[str, Any], line: int) -> None:
    """InvalidInput naming the line, field and value if `record` is not exactly what export
    writes for its type: every field present, none unknown, each of its type and form, and
    the whole storable as JSON (records.json_problem). The header is checked by its handler."""
    kind = record.get("type")
    fields = _RECORD_FIELDS.get(str(kind))
    if fields is None:
        return
    where = f"import record {line} ({kind})"
    missing = [name for name in fields if name not in record]
    unknown = [name for name in record if name not in fields and name != "type"]
    if missing or unknown:
        parts = [f"lacks field(s): {', '.join(missing)}"] if missing else []
        parts += [f"has unknown field(s): {', '.join(unknown)}"] if unknown else []
        raise InvalidInput(f"{where}: {'; '.join(parts)}")
    for name, check in fields.items():
        reason = check(record[name])
        if reason is not None:
            raise InvalidInput(f"{where}: {name}={_shown(record[name])} {reason}")
    problem = _json_problem(record)
    if problem is not None:
        raise InvalidInput(f"{where}: {problem}")
    for start, end in (("char_start", "char_end"), ("line_start", "line_end")):
        if kind == "chunk" and record[end] < record[start]:
            raise InvalidInput(f"{where}: {end} {record[end]} is before {start} {record[start]}")


_NESTED = ("metadata", "meta", "heading_path", "filters", "results")


def _json_problem(record: Mapping[str, Any]) -> str | None:
    """records.json_problem of the record, quickly: orjson proves every string is text and
    every value JSON, and only the nested fields need walking for their depth and numbers."""
    try:
        orjson.dumps(record)
    except TypeError:
        return json_problem(dict(record))
    return json_problem({name: record[name] for name in _NESTED if name in record})


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


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
        check_record(record, line)
        try:
            handler(record, line)
        except (sqlite3.IntegrityError, sqlite3.InterfaceError, TypeError, ValueError) as exc:
            raise InvalidInput(f"import record {line} is invalid: {exc}") from exc
        importer.records += 1
    importer.flush_chunks()
    return ImportResult(importer.documents, importer.chunks, importer.skipped, importer.records)
