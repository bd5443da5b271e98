"""The graph storage interface. The graph package depends on this, never on a backend.

Writes happen in a `GraphSession`: one transaction in which the graph reads the state it
decides on and writes what it decided. Relationship versions are only ever inserted or
retired (their `superseded_at` and `reason` set once); nothing is deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

from nexusbrain.records import Entity, Relationship, RelationshipDraft, RetireReason, Statement


class GraphSession(Protocol):
    """Reads and writes inside one transaction."""

    def find_entity(self, key: str) -> Entity | None:
        """The entity whose key, or one of whose aliases' keys, is `key`."""
        ...

    def look_up(self, keys: Sequence[str]) -> None:
        """Look these keys up together, for the `find_entity` calls that follow: in as few
        statements as the engine can, instead of one each."""
        ...

    def insert_entity(self, key: str, name: str, type: str | None, now: datetime) -> Entity: ...

    def set_entity_type(self, entity_id: int, type: str, now: datetime) -> None: ...

    def add_alias(self, entity_id: int, key: str, alias: str, now: datetime) -> None: ...

    def current_version(self, from_id: int, type: str, to_id: int) -> Relationship | None:
        """The current version of one triple, if any (there is at most one)."""
        ...

    def current_of(self, from_id: int, type: str) -> list[Relationship]:
        """Every current relationship of one subject and type."""
        ...

    def current_from_source(self, source: str) -> list[Relationship]: ...

    def set_statements(self, document_id: int, stated: Sequence[Statement]) -> None:
        """Record what a note states now (replacing what it stated before): several notes
        may state one triple, while its current version names one of them as its source."""
        ...

    def stating(self, from_id: int, type: str, to_id: int, besides: int) -> list[Statement]:
        """What other notes (not `besides`) state this triple, by document id."""
        ...

    def insert_relationship(self, draft: RelationshipDraft, now: datetime) -> Relationship: ...

    def retire(self, relationship_id: int, reason: RetireReason, now: datetime) -> None:
        """Set a current version's superseded_at and reason; they are never changed again."""
        ...


class GraphStore(Protocol):
    """Entities and bitemporal relationships."""

    def session(self, *, commit: bool = True) -> AbstractContextManager[GraphSession]:
        """One write transaction; with commit=False everything in it is rolled back (dry run)."""
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """Reads inside this block (on this thread) all see one consistent state."""
        ...

    def find_entity(self, key: str) -> Entity | None: ...

    def entities_named(self, keys: Sequence[str]) -> dict[str, Entity]:
        """key -> entity, for each key that is an entity's key or one of its aliases' keys."""
        ...

    def lineage(self, relationship_id: int) -> list[Relationship]:
        """Every version in the chain that holds `relationship_id`, oldest first; [] if none."""
        ...

    def relations(
        self,
        *,
        from_ids: Sequence[int] | None = None,
        to_ids: Sequence[int] | None = None,
        type: str | None = None,
        valid: datetime | None = None,
        known: datetime | None = None,
    ) -> list[Relationship]:
        """Relationships matching every given filter, by id. Without `known`, current versions
        only; with it, the versions the brain held at that transaction time. With `valid`,
        only those whose window holds at that valid time."""
        ...
