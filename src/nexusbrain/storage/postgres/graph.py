"""The graph's writes inside a PostgreSQL write transaction, in few round trips.

`GraphWrites` (storage/sql/graph.py) makes a round trip for every statement: one per entity
looked up or inserted and per relationship read or inserted, most of the statements of a
batch of notes, all of them under the brain's write lock. Here, a statement whose answer
the caller does not wait for is kept (`Pending`) and sent with the next read, or with the
COMMIT. That takes:

- the ids of new entities and relationships, given here from the table's sequence: the first
  by `nextval`, the rest counted on from it, and the sequence set past the last at the end.
  Every insert into these tables runs under the write lock, so no one else takes an id
  meanwhile, and the ids are the ones the inserts would have taken, in the same order;
- their rows, built here as the database would give them back (its times are UTC);
- answers from what this session knows: no relationship can name an entity that this
  transaction created unless this session inserted it, and the current relationships of the
  notes the transaction writes are read once, in one statement, then kept up to date.

Reads still read: they see every statement sent before them, which are sent first, in order,
in the same round trip. A statement that fails fails the transaction, as it did.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg

from nexusbrain.records import Entity, Relationship, RelationshipDraft, RetireReason, Statement
from nexusbrain.storage.postgres.database import Query
from nexusbrain.storage.postgres.dialect import POSTGRES
from nexusbrain.storage.sql.graph import GraphWrites

Conn = psycopg.Connection[Any]


class Pending:
    """Statements whose answers no one waits for, in order: sent with the next read
    (`send`), or by the caller with its COMMIT (`take`)."""

    def __init__(self) -> None:
        self.statements: list[Query] = []

    def add(self, query: str, params: Sequence[Any]) -> None:
        self.statements.append((query, params))

    def take(self) -> list[Query]:
        taken, self.statements = self.statements, []
        return taken

    def send(self, conn: Conn, read: Query | None = None) -> psycopg.Cursor[Any] | None:
        """Send what is pending, and `read` after it, in one round trip: the read's cursor."""
        if not self.statements:
            return None if read is None else conn.execute(*read)
        cursor = None
        with conn.pipeline():
            for query, params in self.take():
                conn.execute(query, params)
            if read is not None:
                cursor = conn.execute(*read)
        return cursor


class _Ids:
    """The next ids of a table whose inserts all run under the write lock."""

    def __init__(self, table: str) -> None:
        self.table = table
        self.first = self.last = 0

    def next(self, conn: Conn, pending: Pending) -> int:
        if not self.first:
            query = f"SELECT nextval(pg_get_serial_sequence('{self.table}', 'id'))"
            cursor = pending.send(conn, (query, ()))
            assert cursor is not None
            row = cursor.fetchone()
            assert row is not None
            self.first = self.last = int(row[0])
        else:
            self.last += 1
        return self.last

    def close(self, pending: Pending) -> None:
        """Set the sequence past the ids counted on from the first."""
        if self.last > self.first:
            pending.add(
                f"SELECT setval(pg_get_serial_sequence('{self.table}', 'id'), %s)", (self.last,)
            )
        self.first = self.last = 0


class PostgresGraphWrites(GraphWrites):
    """A `GraphSession` in the write transaction of a `PostgresWork`, which sends what is
    still pending when it commits (`close`, then `Pending.take`). `notes`: the documents the
    transaction writes, whose edges' current versions are read together when first asked."""

    def __init__(self, conn: Conn, pending: Pending, notes: Sequence[int] = ()) -> None:
        super().__init__(conn, POSTGRES)
        self.pg = conn
        self.pending = pending
        self._ids = {"entities": _Ids("entities"), "relationships": _Ids("relationships")}
        self._names: dict[int, str] = {}  # entity id -> name, of every entity seen
        self._fresh: set[int] = set()  # entities inserted by this session
        self._mine: dict[int, Relationship] = {}  # current ones inserted by this session
        self._notes = [f"document:{n}" for n in notes]
        self._by_source: dict[str, list[Relationship]] | None = None

    def close(self) -> None:
        for ids in self._ids.values():
            ids.close(self.pending)

    def _read(self, query: str, params: Sequence[Any]) -> list[Any]:
        cursor = self.pending.send(self.pg, (query, params))
        assert cursor is not None
        return cursor.fetchall()

    def _write(self, query: str, params: Sequence[Any]) -> None:
        self.pending.add(self.d.sql(query), params)

    def _seen(self, found: list[Relationship]) -> list[Relationship]:
        for r in found:
            self._names[r.from_id], self._names[r.to_id] = r.from_name, r.to_name
        return found

    def find_entity(self, key: str) -> Entity | None:
        found = super().find_entity(key)
        if found is not None:
            self._names[found.id] = found.name
        return found

    def look_up(self, keys: Sequence[str]) -> None:
        super().look_up(keys)
        for key in keys:
            found = self._known.get(key)
            if found is not None:
                self._names[found.id] = found.name

    def insert_entity(self, key: str, name: str, type: str | None, now: datetime) -> Entity:
        entity_id = self._ids["entities"].next(self.pg, self.pending)
        stamp = now.astimezone(UTC)
        self._write(
            "INSERT INTO entities (id, key, name, type, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (entity_id, key, name, type, stamp, stamp),
        )
        entity = Entity(entity_id, key, name, type, (), stamp, stamp)
        self._known[key] = entity
        self._names[entity_id] = name
        self._fresh.add(entity_id)
        return entity

    def current_version(self, from_id: int, type: str, to_id: int) -> Relationship | None:
        if from_id in self._fresh or to_id in self._fresh:
            for r in self._mine.values():
                if (r.from_id, r.type, r.to_id) == (from_id, type, to_id):
                    return r
            return None
        found = super().current_version(from_id, type, to_id)
        return None if found is None else self._seen([found])[0]

    def current_of(self, from_id: int, type: str) -> list[Relationship]:
        if from_id in self._fresh:
            return [r for r in self._mine.values() if (r.from_id, r.type) == (from_id, type)]
        return self._seen(super().current_of(from_id, type))

    def current_from_source(self, source: str) -> list[Relationship]:
        if source not in self._notes:
            return self._seen(super().current_from_source(source))
        if self._by_source is None:
            self._by_source = {s: [] for s in self._notes}
            for r in self._seen(self.current_from_sources(self._notes)):
                self._by_source[r.source or ""].append(r)
        return list(self._by_source[source])

    def set_statements(self, document_id: int, stated: Sequence[Statement]) -> None:
        kept = {(s.from_id, s.type, s.to_id): s for s in stated}  # the last one wins, as before
        self._write("DELETE FROM note_statements WHERE document_id = ?", (document_id,))
        if kept:
            rows = list(kept.values())
            self._write(
                "INSERT INTO note_statements (document_id, from_id, type, to_id, valid_at,"
                " invalid_at) SELECT ?::bigint, * FROM unnest(?::bigint[], ?::text[], ?::bigint[],"
                " ?::timestamptz[], ?::timestamptz[])",
                (
                    document_id,
                    [s.from_id for s in rows],
                    [s.type for s in rows],
                    [s.to_id for s in rows],
                    [s.valid_at for s in rows],
                    [s.invalid_at for s in rows],
                ),
            )

    def insert_relationship(self, draft: RelationshipDraft, now: datetime) -> Relationship:
        missing = [i for i in (draft.from_id, draft.to_id) if i not in self._names]
        if missing:
            for entity_id, name in self._rows(
                "SELECT id, name FROM entities WHERE id = ANY(?)", (missing,)
            ):
                self._names[entity_id] = name
        relationship_id = self._ids["relationships"].next(self.pg, self.pending)
        new = Relationship(
            relationship_id,
            draft.from_id,
            self._names[draft.from_id],
            draft.type,
            draft.to_id,
            self._names[draft.to_id],
            _utc(draft.valid_at),
            _utc(draft.invalid_at),
            now.astimezone(UTC),
            None,
            None,
            draft.source,
            draft.supersedes,
        )
        self._write(
            "INSERT INTO relationships (id, from_id, type, to_id, valid_at, invalid_at,"
            " created_at, source, supersedes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                new.id,
                new.from_id,
                new.type,
                new.to_id,
                new.valid_at,
                new.invalid_at,
                new.created_at,
                new.source,
                new.supersedes,
            ),
        )
        self._mine[new.id] = new
        if self._by_source is not None and new.source in self._by_source:
            self._by_source[new.source].append(new)
        return new

    def retire(self, relationship_id: int, reason: RetireReason, now: datetime) -> None:
        super().retire(relationship_id, reason, now)
        self._mine.pop(relationship_id, None)
        for current in (self._by_source or {}).values():
            current[:] = [r for r in current if r.id != relationship_id]


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)
