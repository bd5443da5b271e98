"""Export and import on any SQL engine: the stream of storage/exchange.py, record for record and
byte for byte the same from either engine (times as `format_time` text, JSON fields as
stored, rows in the same order). How an import merges into a brain with data is
storage/merge.py's; this module reads the target and is the merge's Sink. The engine writes the
chunk rows (`ChunkImport`: FTS5 wants them a few hundred per statement, PostgreSQL takes them by
COPY with their postings)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import orjson

from nexusbrain.errors import InvalidInput
from nexusbrain.records import ImportResult, Progress, RetireReason
from nexusbrain.storage import exchange, merge
from nexusbrain.storage.exchange import HEADING_SEP
from nexusbrain.storage.signature import signature
from nexusbrain.storage.sql.dialect import Connection, Dialect

Fields = Sequence[tuple[str, str]]  # (column, record field)
_TIMES = frozenset(
    {"created_at", "updated_at", "deleted_at", "recorded_at", "at", "valid_at", "invalid_at"}
    | {"superseded_at"}
)
# in the order an export gives a chunk's fields (heading and meta become the last two)
_CHUNK_COLUMNS: tuple[str, ...] = ("id", "document_id", "ordinal", "char_start", "char_end")
_CHUNK_COLUMNS += ("line_start", "line_end", "text", "unit", "context", "heading", "meta")


def _same(fields: Sequence[str]) -> Fields:
    return tuple((name, name) for name in fields)


def _graph_tables(d: Dialect) -> tuple[tuple[str, str, Fields, str], ...]:
    """(record type, table, fields, order) of the graph's tables, in the export's order."""
    return (
        ("entity", "entities", exchange.ENTITY_FIELDS, "id"),
        ("alias", "entity_aliases", exchange.ALIAS_FIELDS, d.alias_order),
        ("relationship", "relationships", exchange.RELATIONSHIP_FIELDS, "id"),
        (
            "statement",
            "note_statements",
            exchange.STATEMENT_FIELDS,
            f"document_id, from_id, type{d.text_order}, to_id",
        ),
    )


def export_records(conn: Connection, d: Dialect, schema: int) -> Iterator[dict[str, Any]]:
    """Every record of the brain, read on `conn` (inside the caller's snapshot)."""
    yield {
        "type": "header",
        "format": exchange.FORMAT,
        "version": exchange.FORMAT_VERSION,
        "schema": schema,
    }
    for row in _rows(conn, d, "documents", _same(exchange.DOCUMENT_FIELDS), "id"):
        yield {"type": "document", **row, "metadata": orjson.loads(row["metadata"])}
    for row in _rows(conn, d, "document_revisions", _same(exchange.REVISION_FIELDS), "id"):
        yield {"type": "revision", **row}
    for row in _rows(conn, d, "chunks", _same(_CHUNK_COLUMNS), "id"):
        heading, meta = row.pop("heading"), row.pop("meta")
        yield {
            "type": "chunk",
            **row,
            "heading_path": heading.split(HEADING_SEP) if heading else [],
            "meta": orjson.loads(meta),
        }
    for row in _rows(conn, d, "captures", _same(exchange.CAPTURE_FIELDS), "id"):
        yield {
            "type": "capture",
            **row,
            "filters": orjson.loads(row["filters"]),
            "results": orjson.loads(row["results"]),
        }
    for kind, table, fields, order in _graph_tables(d):
        for row in _rows(conn, d, table, fields, order):
            yield {"type": kind, **row}


def _rows(
    conn: Connection, d: Dialect, table: str, fields: Fields, order: str
) -> Iterator[dict[str, Any]]:
    """The table's rows as record fields, times as the export writes them."""
    names = [name for _, name in fields]
    times = [i for i, (column, _) in enumerate(fields) if column in _TIMES]
    query = f"SELECT {', '.join(column for column, _ in fields)} FROM {table} ORDER BY {order}"
    for row in d.stream(conn, query):
        values = list(row)
        for i in times:
            values[i] = d.time_text(values[i])
        yield dict(zip(names, values, strict=True))


class ChunkImport(Protocol):
    """An engine's side of an import: the chunk rows, inside the import's transaction."""

    def delete_chunks(self, document_id: int) -> None:
        """Delete a replaced document's chunks."""
        ...

    def add(self, line: int, values: tuple[Any, ...]) -> None:
        """A chunk row (`chunk_row`) to insert, from the record on this line of the stream."""
        ...

    def finish(self) -> None:
        """Insert what is pending, once every record is written (InvalidInput naming the line
        of a row the database refuses)."""
        ...


def chunk_row(r: Mapping[str, Any]) -> tuple[Any, ...]:
    """A chunk record's row as both engines store it (postgres/chunks.py's ChunkRow): id,
    document id, ordinal, char and line spans, heading (joined with HEADING_SEP), text, unit,
    meta (JSON), text hash (none yet: import leaves it to the embedder), context and the
    text's near-duplicate signature."""
    return (
        *(r[f] for f in _CHUNK_COLUMNS[:7]),
        HEADING_SEP.join(r["heading_path"]),
        r["text"],
        r["unit"],
        orjson.dumps(r["meta"]).decode(),
        None,
        r["context"],
        signature(r["text"]),
    )


def first_line(exc: BaseException) -> str:
    """A driver's error in one line."""
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def import_records(
    conn: Connection,
    d: Dialect,
    stage: exchange.Staged,
    chunks: ChunkImport,
    functional: frozenset[str] = frozenset(),
    progress: Progress | None = None,
) -> ImportResult:
    """Restore the staged records as they are into an empty brain, or merge them into one
    with data (merge.imported); all in the caller's write transaction. `progress` hears
    "importing": records written of those staged."""
    importer = _Importer(conn, d, chunks, _Counter(progress, stage.records))
    result = merge.imported(stage, _target(conn, d, functional), importer)
    chunks.finish()
    importer.counter.done()
    return result


class _Counter:
    """An import's progress, every thousand records written."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress = progress
        self.total = total
        self.written = 0

    def add(self) -> None:
        self.written += 1
        if self.progress and self.written % exchange.PROGRESS_EVERY == 0:
            self.progress("importing", self.written, max(self.total, self.written))

    def done(self) -> None:
        if self.progress:
            self.progress("importing", self.total, self.total)


class _Importer:
    """A merge's Sink: inserts records as they are, ids and all (the merge has made them
    fit), replaces documents and retires facts."""

    def __init__(
        self, conn: Connection, d: Dialect, chunks: ChunkImport, counter: _Counter
    ) -> None:
        self.conn = conn
        self.d = d
        self.chunks = chunks
        self.counter = counter
        self.handlers = {kind: getattr(self, kind) for kind in exchange.KINDS}

    def insert(self, record: Mapping[str, Any], line: int) -> None:
        try:
            self.handlers[str(record["type"])](record, line)
        except self.d.integrity_errors as exc:
            raise InvalidInput(f"import record {line} is invalid: {first_line(exc)}") from exc
        self.counter.add()

    def retire(self, relationship_id: int, at: str) -> None:
        self.conn.execute(
            self.d.sql(
                "UPDATE relationships SET superseded_at = ?, reason = ?"
                " WHERE id = ? AND superseded_at IS NULL"
            ),
            (self.d.text_param(at), RetireReason.SOURCE_REVISED.value, relationship_id),
        )

    def header(self, r: Mapping[str, Any], line: int) -> None:
        """Checked as it was staged, and holds nothing to write."""

    def document(self, r: Mapping[str, Any], line: int) -> None:
        self._insert("documents", _same(exchange.DOCUMENT_FIELDS), r)

    def replace(self, r: Mapping[str, Any]) -> None:
        """A document that is here already takes the import's row; its chunks go (the
        import's come as inserts, and so do its statements)."""
        self.chunks.delete_chunks(int(r["id"]))
        self.conn.execute(
            self.d.sql("DELETE FROM note_statements WHERE document_id = ?"), (r["id"],)
        )
        fields = _same([f for f in exchange.DOCUMENT_FIELDS if f not in ("id", "uri")])
        values = self._values(fields, r)
        self.conn.execute(
            self.d.sql(
                f"UPDATE documents SET {', '.join(f'{c} = ?' for c, _ in fields)} WHERE id = ?"
            ),
            [*values, r["id"]],
        )

    def revision(self, r: Mapping[str, Any], line: int) -> None:
        self._insert("document_revisions", _same(exchange.REVISION_FIELDS), r)

    def chunk(self, r: Mapping[str, Any], line: int) -> None:
        self.chunks.add(line, chunk_row(r))

    def capture(self, r: Mapping[str, Any], line: int) -> None:
        self._insert("captures", _same(exchange.CAPTURE_FIELDS), r)

    def entity(self, r: Mapping[str, Any], line: int) -> None:
        self._insert("entities", exchange.ENTITY_FIELDS, r)

    def alias(self, r: Mapping[str, Any], line: int) -> None:
        self._insert("entity_aliases", exchange.ALIAS_FIELDS, r)

    def relationship(self, r: Mapping[str, Any], line: int) -> None:
        self._insert("relationships", exchange.RELATIONSHIP_FIELDS, r)

    def statement(self, r: Mapping[str, Any], line: int) -> None:
        self._insert("note_statements", exchange.STATEMENT_FIELDS, r)

    def _values(self, fields: Fields, r: Mapping[str, Any]) -> list[Any]:
        """The record's values as stored: times as the engine keeps them, JSON as text."""
        return [
            self.d.text_param(r[name])
            if column in _TIMES
            else orjson.dumps(r[name]).decode()
            if name in _JSON
            else r[name]
            for column, name in fields
        ]

    def _insert(self, table: str, fields: Fields, r: Mapping[str, Any]) -> None:
        columns = ", ".join(column for column, _ in fields)
        marks = ", ".join("?" * len(fields))
        self.conn.execute(
            self.d.sql(f"INSERT INTO {table} ({columns}) VALUES ({marks})"), self._values(fields, r)
        )


_JSON = frozenset({"metadata", "filters", "results"})  # a record's JSON fields, stored as text


def _target(conn: Connection, d: Dialect, functional: frozenset[str]) -> merge.Target:
    """What the merge needs to know of the brain imported into."""
    documents = {
        r[0]: merge.TargetDocument(r[1], r[2], str(d.time_text(r[3])))
        for r in conn.execute("SELECT uri, id, revision, updated_at FROM documents").fetchall()
    }
    revisions: dict[int, set[tuple[str, str, str]]] = {}
    for r in conn.execute(
        "SELECT document_id, revision, event, recorded_at FROM document_revisions"
    ).fetchall():
        revisions.setdefault(r[0], set()).add((r[1], r[2], str(d.time_text(r[3]))))
    entities = dict(conn.execute("SELECT key, id FROM entities").fetchall())
    entities.update(conn.execute("SELECT key, entity_id FROM entity_aliases").fetchall())
    current = [
        merge.HeldFact(r[0], r[1], r[2], r[3], d.time_text(r[4]), d.time_text(r[5]), r[6], r[7])
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
