"""Export and import of every record as JSON-lines-ready dicts, for the SQLite store.

The stream starts with a header, then documents, their revision history, chunks and captures.
Import restores ids, so exporting a fresh brain's import gives back the same bytes. A document
whose id or uri is already taken is skipped with its chunks and history: import never
overwrites what a brain holds.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from nexusbrain.errors import InvalidInput
from nexusbrain.records import DocumentKind, ImportResult

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
)
_CAPTURE_FIELDS = ("at", "operation", "query", "mode", "filters", "results", "latency_ms")


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


def _require(record: Mapping[str, Any], fields: Iterable[str], line: int) -> None:
    missing = [f for f in fields if f not in record]
    if missing:
        raise InvalidInput(
            f"import record {line} ({record.get('type')!r}) lacks field(s): {', '.join(missing)}"
        )


class _Importer:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.kept: set[int] = set()
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
        self.conn.execute(
            "INSERT INTO chunks (id, document_id, ordinal, char_start, char_end, line_start,"
            " line_end, heading, text, unit, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                *(r[f] for f in _CHUNK_FIELDS[:7]),
                HEADING_SEP.join(r["heading_path"]),
                r["text"],
                r["unit"],
                orjson.dumps(r["meta"]).decode(),
            ),
        )
        self.chunks += 1

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
    return ImportResult(importer.documents, importer.chunks, importer.skipped, importer.records)
