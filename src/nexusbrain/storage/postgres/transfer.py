"""Export and import rows for the PostgreSQL store: the stream of storage/exchange.py, record
for record and byte for byte what the SQLite store writes for the same brain (times as
`format_time` text, JSON fields as stored, rows in the same order). How an import merges into
a brain with data is engine-neutral too (exchange.merged); this module reads the target and
writes the plan.

After an import each table's id sequence is moved past the highest id, so that the brain's
next writes take fresh ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

import orjson
import psycopg

from nexusbrain.clock import format_time, parse_time
from nexusbrain.errors import InvalidInput
from nexusbrain.records import ImportResult, RetireReason
from nexusbrain.storage import exchange, merge
from nexusbrain.storage.postgres.chunks import ChangeLog, ChunkRow, delete_chunks, insert_chunks

Conn = psycopg.Connection[Any]
HEADING_SEP = exchange.HEADING_SEP
_BATCH = 500  # chunk rows per COPY on import
_TIMES = frozenset(
    {"created_at", "updated_at", "deleted_at", "recorded_at", "at", "valid_at", "invalid_at"}
    | {"superseded_at"}
)
# in the order SQLite's export gives a chunk's fields (heading and meta become the last two)
_CHUNK_COLUMNS: tuple[str, ...] = ("id", "document_id", "ordinal", "char_start", "char_end")
_CHUNK_COLUMNS += ("line_start", "line_end", "text", "unit", "context", "heading", "meta")
# text sorts as SQLite sorts it (by its bytes): COLLATE "C"
_GRAPH_TABLES = (
    ("entity", "entities", exchange.ENTITY_FIELDS, "id"),
    ("alias", "entity_aliases", exchange.ALIAS_FIELDS, "seq"),
    ("relationship", "relationships", exchange.RELATIONSHIP_FIELDS, "id"),
    (
        "statement",
        "note_statements",
        exchange.STATEMENT_FIELDS,
        'document_id, from_id, type COLLATE "C", to_id',
    ),
)
_SEQUENCED = ("documents", "chunks", "entities", "relationships")


def _text(value: Any) -> Any:
    return format_time(value) if isinstance(value, datetime) else value


def _rows(conn: Conn, query: str) -> Iterator[dict[str, Any]]:
    """Rows as dicts, streamed by a server-side cursor (inside the caller's transaction)."""
    with conn.cursor(name="nexusbrain_export") as cursor:
        cursor.itersize = 2_000
        cursor.execute(query)
        names = [c.name for c in cursor.description or ()]
        for row in cursor:
            yield {name: _text(value) for name, value in zip(names, row, strict=True)}


def export_records(conn: Conn, schema: int) -> Iterator[dict[str, Any]]:
    yield {
        "type": "header",
        "format": exchange.FORMAT,
        "version": exchange.FORMAT_VERSION,
        "schema": schema,
    }
    for row in _rows(
        conn, f"SELECT {', '.join(exchange.DOCUMENT_FIELDS)} FROM documents ORDER BY id"
    ):
        yield {"type": "document", **row, "metadata": orjson.loads(row["metadata"])}
    revisions = f"SELECT {', '.join(exchange.REVISION_FIELDS)} FROM document_revisions ORDER BY id"
    for row in _rows(conn, revisions):
        yield {"type": "revision", **row}
    for row in _rows(conn, f"SELECT {', '.join(_CHUNK_COLUMNS)} FROM chunks ORDER BY id"):
        heading, meta = row.pop("heading"), row.pop("meta")
        yield {
            "type": "chunk",
            **row,
            "heading_path": heading.split(HEADING_SEP) if heading else [],
            "meta": orjson.loads(meta),
        }
    for row in _rows(
        conn, f"SELECT {', '.join(exchange.CAPTURE_FIELDS)} FROM captures ORDER BY id"
    ):
        yield {
            "type": "capture",
            **row,
            "filters": orjson.loads(row["filters"]),
            "results": orjson.loads(row["results"]),
        }
    for kind, table, fields, order in _GRAPH_TABLES:
        columns = ", ".join(column for column, _ in fields)
        for row in _rows(conn, f"SELECT {columns} FROM {table} ORDER BY {order}"):
            yield {"type": kind, **{name: row[column] for column, name in fields}}


def _time(value: Any) -> Any:
    return parse_time(value) if isinstance(value, str) else value


def _values(fields: Iterable[str], r: Mapping[str, Any]) -> dict[str, Any]:
    return {f: _time(r[f]) if f in _TIMES else r[f] for f in fields}


class _Importer:
    """Inserts records as they are, ids and all (a merge has made them fit: exchange.py)."""

    def __init__(self, conn: Conn, log: ChangeLog) -> None:
        self.conn = conn
        self.log = log
        self.pending: list[tuple[int, ChunkRow]] = []  # (record line, row)

    def header(self, r: Mapping[str, Any], line: int) -> None:
        """Checked by exchange.checked."""

    def document(self, r: Mapping[str, Any], line: int) -> None:
        values = _values(exchange.DOCUMENT_FIELDS, r)
        values["metadata"] = orjson.dumps(r["metadata"]).decode()
        self._insert("documents", values)

    def replace(self, r: Mapping[str, Any]) -> None:
        """A document that is here already takes the import's row; its chunks go (the
        import's come as inserts, and so do its statements)."""
        delete_chunks(self.conn, int(r["id"]), self.log)
        self.conn.execute("DELETE FROM note_statements WHERE document_id = %s", (r["id"],))
        values = _values([f for f in exchange.DOCUMENT_FIELDS if f not in ("id", "uri")], r)
        values["metadata"] = orjson.dumps(r["metadata"]).decode()
        self.conn.execute(
            f"UPDATE documents SET {', '.join(f'{f} = %s' for f in values)} WHERE id = %s",
            [*values.values(), r["id"]],
        )

    def revision(self, r: Mapping[str, Any], line: int) -> None:
        self._insert("document_revisions", _values(exchange.REVISION_FIELDS, r))

    def chunk(self, r: Mapping[str, Any], line: int) -> None:
        row = ChunkRow(
            r["id"],
            r["document_id"],
            r["ordinal"],
            r["char_start"],
            r["char_end"],
            r["line_start"],
            r["line_end"],
            HEADING_SEP.join(r["heading_path"]),
            r["text"],
            r["unit"],
            orjson.dumps(r["meta"]).decode(),
            None,
            r["context"],
        )
        self.pending.append((line, row))
        if len(self.pending) >= _BATCH:
            self.flush_chunks()

    def flush_chunks(self) -> None:
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
                raise InvalidInput(f"import record {line} is invalid: {_first(exc)}") from exc
        raise AssertionError("a batch of chunks failed that no single row fails")

    def capture(self, r: Mapping[str, Any], line: int) -> None:
        values = _values(exchange.CAPTURE_FIELDS, r)
        values["filters"] = orjson.dumps(r["filters"]).decode()
        values["results"] = orjson.dumps(r["results"]).decode()
        self._insert("captures", values)

    def entity(self, r: Mapping[str, Any], line: int) -> None:
        self._insert_fields("entities", exchange.ENTITY_FIELDS, r)

    def alias(self, r: Mapping[str, Any], line: int) -> None:
        self._insert_fields("entity_aliases", exchange.ALIAS_FIELDS, r)

    def relationship(self, r: Mapping[str, Any], line: int) -> None:
        self._insert_fields("relationships", exchange.RELATIONSHIP_FIELDS, r)

    def statement(self, r: Mapping[str, Any], line: int) -> None:
        self._insert_fields("note_statements", exchange.STATEMENT_FIELDS, r)

    def _insert_fields(
        self, table: str, fields: tuple[tuple[str, str], ...], r: Mapping[str, Any]
    ) -> None:
        values = {c: _time(r[name]) if c in _TIMES else r[name] for c, name in fields}
        self._insert(table, values)

    def _insert(self, table: str, values: Mapping[str, Any]) -> None:
        columns = ", ".join(values)
        marks = ", ".join(["%s"] * len(values))
        self.conn.execute(
            f"INSERT INTO {table} ({columns}) VALUES ({marks})", list(values.values())
        )

    def finish(self) -> None:
        self.flush_chunks()
        for table in _SEQUENCED:  # next ids past the imported ones
            self.conn.execute(
                "SELECT setval(s, greatest(top, coalesce(pg_sequence_last_value(s::regclass), 0)))"
                " FROM pg_get_serial_sequence(%s, 'id') AS s,"
                f" (SELECT max(id) AS top FROM {table}) AS t WHERE top IS NOT NULL",
                (table,),
            )


def _first(exc: psycopg.Error) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def import_records(
    conn: Conn,
    records: Iterable[Mapping[str, Any]],
    log: ChangeLog,
    functional: frozenset[str] = frozenset(),
) -> ImportResult:
    """Validate every record, then restore them as they are into an empty brain, or merge
    them into one with data (exchange.merged); all in the caller's write transaction, whose
    change log `log` takes the chunk changes."""
    stream = exchange.checked(records)
    plan = merge.planned(stream, _target(conn, functional))
    importer = _Importer(conn, log)
    for record in plan.replaced:
        importer.replace(record)
    for relationship_id, at in plan.retired:
        conn.execute(
            "UPDATE relationships SET superseded_at = %s, reason = %s"
            " WHERE id = %s AND superseded_at IS NULL",
            (parse_time(at), RetireReason.SOURCE_REVISED.value, relationship_id),
        )
    handlers = {kind: getattr(importer, kind) for kind in exchange.KINDS}
    for line, record in enumerate(plan.inserts, start=1):
        try:
            handlers[str(record["type"])](record, line)
        except (psycopg.IntegrityError, psycopg.DataError) as exc:
            raise InvalidInput(f"import record {line} is invalid: {_first(exc)}") from exc
    importer.finish()
    return plan.result(len(stream))


def _stamp(value: datetime | None) -> str | None:
    return format_time(value) if value is not None else None


def _target(conn: Conn, functional: frozenset[str]) -> merge.Target:
    documents = {
        r[0]: merge.TargetDocument(r[1], r[2], format_time(r[3]))
        for r in conn.execute("SELECT uri, id, revision, updated_at FROM documents").fetchall()
    }
    revisions: dict[int, set[tuple[str, str, str]]] = {}
    for r in conn.execute(
        "SELECT document_id, revision, event, recorded_at FROM document_revisions"
    ).fetchall():
        revisions.setdefault(r[0], set()).add((r[1], r[2], format_time(r[3])))
    entities = dict(conn.execute("SELECT key, id FROM entities").fetchall())
    entities.update(conn.execute("SELECT key, entity_id FROM entity_aliases").fetchall())
    current = [
        merge.HeldFact(r[0], r[1], r[2], r[3], _stamp(r[4]), _stamp(r[5]), r[6], r[7])
        for r in conn.execute(
            "SELECT r.id, r.from_id, r.type, r.to_id, r.valid_at, r.invalid_at, r.source, e.name"
            " FROM relationships r JOIN entities e ON e.id = r.to_id"
            " WHERE r.superseded_at IS NULL"
        ).fetchall()
    ]
    next_ids = {}
    for name, table in (
        ("document", "documents"),
        ("chunk", "chunks"),
        ("entity", "entities"),
        ("relationship", "relationships"),
    ):
        row = conn.execute(f"SELECT coalesce(max(id), 0) + 1 FROM {table}").fetchone()
        next_ids[name] = int(row[0]) if row else 1
    return merge.Target(documents, revisions, entities, current, next_ids, functional)
