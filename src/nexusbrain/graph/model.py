"""What the graph takes in and gives back: inputs, outcomes, histories and traversals.

The stored records (`Entity`, `Relationship`, `RetireReason`) live in `nexusbrain.records`,
which storage shares; they are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Any

from nexusbrain.clock import as_utc, format_time, parse_time
from nexusbrain.errors import InvalidInput
from nexusbrain.records import Entity, Relationship, RetireReason, WriteStatus
from nexusbrain.summaries import relationship_line

__all__ = [
    "CURRENT",
    "AsOf",
    "Entity",
    "EntityInput",
    "EntityOutcome",
    "GraphFact",
    "History",
    "Hop",
    "IngestResult",
    "Relationship",
    "RelationshipInput",
    "RelationshipOutcome",
    "RetireReason",
    "Retirement",
    "Traversal",
    "describe",
    "inputs_from_json",
    "parse_instant",
]


@dataclass(frozen=True, slots=True)
class EntityInput:
    name: str
    type: str | None = None
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RelationshipInput:
    from_name: str
    type: str
    to_name: str
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class AsOf:
    """ "What held at valid time `valid`, as the brain knew it at transaction time `known`."
    None on an axis means: no valid-time filter, and the current knowledge."""

    valid: datetime | None = None
    known: datetime | None = None


CURRENT = AsOf()  # any valid time, as the brain knows it now


@dataclass(frozen=True, slots=True)
class EntityOutcome:
    status: WriteStatus
    id: int | None  # None in a dry run, for an entity it would create
    entity: Entity


@dataclass(frozen=True, slots=True)
class Retirement:
    """A version this ingest retired, and the version that replaced it, if any."""

    id: int | None  # None only in a dry run, for a version the same request created
    reason: RetireReason
    successor: int | None


@dataclass(frozen=True, slots=True)
class RelationshipOutcome:
    status: WriteStatus  # CREATED or DUPLICATE
    id: int | None  # None in a dry run, for an edge it would create
    relationship: Relationship
    supersedes: int | None = None
    retired: tuple[Retirement, ...] = ()


@dataclass(frozen=True, slots=True)
class IngestResult:
    at: datetime  # the one timestamp of the whole request
    dry_run: bool
    entities: tuple[EntityOutcome, ...]
    relationships: tuple[RelationshipOutcome, ...]


@dataclass(frozen=True, slots=True)
class History:
    id: int  # the id that was asked about
    versions: tuple[Relationship, ...]  # oldest first
    current: Relationship | None


@dataclass(frozen=True, slots=True)
class Hop:
    """A path from the start entity; its last edge is the hop. Every edge on it holds
    throughout [valid_from, valid_until)."""

    depth: int
    path: tuple[Relationship, ...]
    valid_from: datetime | None
    valid_until: datetime | None

    @property
    def relationship(self) -> Relationship:
        return self.path[-1]


@dataclass(frozen=True, slots=True)
class Traversal:
    start: Entity
    depth: int
    as_of: AsOf
    hops: tuple[Hop, ...]
    truncated: bool


@dataclass(frozen=True, slots=True)
class GraphFact:
    """A current relationship of an entity named in a retrieval hit, as context text."""

    text: str
    entity: str  # the entity's name
    hit_rank: int  # the hit that named it
    relationship: Relationship


def describe(r: Relationship, *, cite: bool = True) -> str:
    """'alice manages bob (valid 2020-01-01..2023-01-01) [relationship 7]' (the id if cite)"""
    start, end = _short(r.valid_at), _short(r.invalid_at)
    return relationship_line(r.from_name, r.type, r.to_name, start, end, r.id, cite=cite)


def _short(value: datetime | None) -> str:
    if value is None:
        return ""
    if value.time() == time(0) and value.utcoffset() is not None:
        return value.date().isoformat()
    return format_time(value)


def parse_instant(name: str, value: object) -> datetime | None:
    """An ISO-8601 time (a YAML date or datetime too) as aware UTC, or None for None/''."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, datetime):
            return as_utc(value)
        if isinstance(value, date):
            return datetime.combine(value, time(0), tzinfo=UTC)
        if isinstance(value, str):
            return parse_time(value.strip())
    except ValueError:
        pass
    raise InvalidInput(
        f"{name}={value!r} is not an ISO-8601 time in years 1 to 9999 (e.g. 2025-01-31)"
    )


_ENTITY_FIELDS = {"name", "type", "aliases"}
_RELATIONSHIP_FIELDS = {"from", "type", "to", "valid_at", "invalid_at", "source"}


def inputs_from_json(
    body: Mapping[str, Any],
) -> tuple[tuple[EntityInput, ...], tuple[RelationshipInput, ...]]:
    """The entities and relationships of a `POST /ingest` body (the CLI reads the same JSON).
    Unknown fields and wrong types are refused with InvalidInput naming them."""
    _only(body, {"entities", "relationships"}, "body")
    entities = tuple(
        _entity(item, f"entities[{i}]") for i, item in enumerate(_list(body, "entities"))
    )
    relationships = tuple(
        _relationship(item, f"relationships[{i}]")
        for i, item in enumerate(_list(body, "relationships"))
    )
    return entities, relationships


def _entity(item: object, where: str) -> EntityInput:
    fields = _only(item, _ENTITY_FIELDS, where)
    aliases = fields.get("aliases") or []
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise InvalidInput(f"{where}.aliases must be a list of strings, got {aliases!r}")
    return EntityInput(
        name=_text(fields, "name", where),
        type=_optional_text(fields, "type", where),
        aliases=tuple(aliases),
    )


def _relationship(item: object, where: str) -> RelationshipInput:
    fields = _only(item, _RELATIONSHIP_FIELDS, where)
    return RelationshipInput(
        from_name=_text(fields, "from", where),
        type=_text(fields, "type", where),
        to_name=_text(fields, "to", where),
        valid_at=parse_instant(f"{where}.valid_at", fields.get("valid_at")),
        invalid_at=parse_instant(f"{where}.invalid_at", fields.get("invalid_at")),
        source=_optional_text(fields, "source", where),
    )


def _only(item: object, allowed: set[str], where: str) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        raise InvalidInput(f"{where} must be a JSON object, got {item!r}")
    unknown = sorted(set(item) - allowed)
    if unknown:
        allowed_list = ", ".join(sorted(allowed))
        raise InvalidInput(
            f"{where} has unknown field(s) {', '.join(unknown)}; allowed: {allowed_list}"
        )
    return item


def _list(body: Mapping[str, Any], key: str) -> list[object]:
    value = body.get(key) or []
    if not isinstance(value, list):
        raise InvalidInput(f"{key} must be a list, got {value!r}")
    return value


def _text(fields: Mapping[str, Any], key: str, where: str) -> str:
    value = fields.get(key)
    if not isinstance(value, str):
        raise InvalidInput(f"{where}.{key} must be a string, got {value!r}")
    return value


def _optional_text(fields: Mapping[str, Any], key: str, where: str) -> str | None:
    return None if fields.get(key) is None else _text(fields, key, where)
