"""The export format, engine-neutral: its records and their validation. How an export merges
into a brain that already holds data is storage/merge.py's; storage/sql/transfer.py reads and
writes the rows on every SQL engine.

A stream is a header, then documents, their revision history, chunks and captures, then the
knowledge graph: entities, aliases and relationships (every version, retired ones too), and
what each note states (so that a fact two notes state still outlives either). The
record field `type` names the record, so an entity's type is exported as `entity_type` and a
relationship's as `relation`. Vectors are not exported: they are derived from the chunks' text
and the embedding model, and the importing brain computes them.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from enum import StrEnum
from typing import IO, Any

import orjson

from nexusbrain.clock import format_time, parse_time
from nexusbrain.errors import InvalidInput
from nexusbrain.records import (
    MAX_ID,
    ChunkDraft,
    DocumentKind,
    RetireReason,
    json_problem,
)
from nexusbrain.storage.signature import signature

PROGRESS_EVERY = 1_000  # records between two reports of an import's progress
FORMAT = "nexusbrain-export"
FORMAT_VERSION = 1
HEADING_SEP = "\x1f"
KINDS = (
    "header",
    "document",
    "revision",
    "chunk",
    "capture",
    "entity",
    "alias",
    "relationship",
    "statement",
)

# The fields of each kind of record, in the order an export writes them; pairs are
# (column, export field) where the record names a field otherwise.
DOCUMENT_FIELDS = (
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
REVISION_FIELDS = ("document_id", "revision", "title", "event", "recorded_at")
CAPTURE_FIELDS = ("at", "operation", "query", "mode", "filters", "results", "latency_ms")
ENTITY_FIELDS = (
    ("id", "id"),
    ("key", "key"),
    ("name", "name"),
    ("type", "entity_type"),
    ("created_at", "created_at"),
    ("updated_at", "updated_at"),
)
ALIAS_FIELDS = (
    ("key", "key"),
    ("alias", "alias"),
    ("entity_id", "entity_id"),
    ("created_at", "created_at"),
)
RELATIONSHIP_FIELDS = (
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
STATEMENT_FIELDS = (
    ("document_id", "document_id"),
    ("from_id", "from_id"),
    ("type", "relation"),
    ("to_id", "to_id"),
    ("valid_at", "valid_at"),
    ("invalid_at", "invalid_at"),
)


# Validation: every field of every imported record, checked before it is written, so that
# nothing an import stores can break a later read. Each check returns why a value is wrong.
Check = Callable[[Any], str | None]


def chunk_values(c: ChunkDraft) -> tuple[Any, ...]:
    """A chunk draft's stored columns after its document id, the same on every backend:
    ordinal, char and line spans, heading path (joined with HEADING_SEP), text, unit, meta
    (JSON), text hash, context and the text's near-duplicate signature."""
    return (
        c.ordinal,
        c.char_start,
        c.char_end,
        c.line_start,
        c.line_end,
        HEADING_SEP.join(c.heading_path),
        c.text,
        c.unit,
        orjson.dumps(dict(c.meta)).decode(),
        c.text_hash,
        c.context,
        signature(c.text),
    )


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
    "statement": {
        "document_id": _id,
        "from_id": _id,
        "relation": _name,
        "to_id": _id,
        "valid_at": _optional(_time),
        "invalid_at": _optional(_time),
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


def check_header(record: Mapping[str, Any], line: int) -> None:
    if record.get("format") != FORMAT or record.get("version") != FORMAT_VERSION:
        raise InvalidInput(
            f"import record {line}: not a {FORMAT} v{FORMAT_VERSION} stream"
            f" (format={record.get('format')!r}, version={record.get('version')!r})"
        )


class Staged:
    """A validated stream, spooled to temporary files by kind of record: an import reads it
    back once it holds the write lock, kind by kind in the export's order, so that neither
    the stream's size nor a slow sender holds memory or the lock. Each record keeps its line
    (its place in the stream, from 1) for the errors that name it."""

    def __init__(self) -> None:
        self._spools: dict[str, IO[bytes]] = {}
        self.counts: dict[str, int] = {}
        self.records = 0

    def add(self, record: Mapping[str, Any], line: int) -> None:
        """Spool a checked record (a header is only counted: it was checked, and holds
        nothing to write)."""
        kind = str(record["type"])
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.records += 1
        if kind == "header":
            return
        spool = self._spools.get(kind)
        if spool is None:
            spool = tempfile.TemporaryFile(prefix=f"nexusbrain-{kind}-")  # noqa: SIM115
            self._spools[kind] = spool  # closed by close()
        spool.write(b"%d\t%b\n" % (line, orjson.dumps(record)))

    def read(self, kind: str) -> Iterator[tuple[int, int, dict[str, Any]]]:
        """The records of `kind`, in stream order: (line, offset for `at`, record)."""
        spool = self._spools.get(kind)
        if spool is None:
            return
        spool.flush()
        spool.seek(0)
        offset = 0
        for row in spool:
            line, record = _unspooled(row)
            yield line, offset, record
            offset += len(row)

    def at(self, kind: str, offset: int) -> tuple[int, dict[str, Any]]:
        """The record of `kind` at `offset` (from `read`), with its line."""
        spool = self._spools[kind]
        spool.seek(offset)
        return _unspooled(spool.readline())

    def close(self) -> None:
        for spool in self._spools.values():
            spool.close()
        self._spools.clear()

    def __enter__(self) -> Staged:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _unspooled(row: bytes) -> tuple[int, dict[str, Any]]:
    line, _, record = row.partition(b"\t")
    return int(line), orjson.loads(record)


def staged(records: Iterable[Mapping[str, Any]]) -> Staged:
    """Every record validated as it comes (InvalidInput naming the first bad line, before the
    rest is read) and spooled (Staged)."""
    stage = Staged()
    try:
        for line, record in enumerate(records, start=1):
            kind = record.get("type")
            if kind not in KINDS:
                raise InvalidInput(f"import record {line}: unknown type {kind!r}")
            if kind == "header":
                check_header(record, line)
            else:
                check_record(record, line)
            stage.add(record, line)
    except BaseException:
        stage.close()
        raise
    return stage
