"""Entities and bitemporal relationships in PostgreSQL (SQL only, all parameterised).

The invariants are the database's (migrations.py): a version is inserted once and only its
retirement is ever recorded, once; nothing is deleted; one current version per triple and
one successor per version (unique partial indexes); a successor starts exactly when its
predecessor ended (a constraint trigger checked at commit). Graph writes run in the brain's
write transaction, which holds its advisory lock: the graph reads the state it decides on and
writes what it decided with no other writer in between, on every replica.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg

from nexusbrain.records import Entity, Relationship, RelationshipDraft, RetireReason, Statement

if TYPE_CHECKING:
    from nexusbrain.storage.postgres.database import Database

_RELATIONSHIP = (
    "SELECT r.id, r.from_id, f.name AS from_name, r.type, r.to_id, t.name AS to_name,"
    " r.valid_at, r.invalid_at, r.created_at, r.superseded_at, r.reason, r.source, r.supersedes"
    " FROM relationships r JOIN entities f ON f.id = r.from_id JOIN entities t ON t.id = r.to_id"
)
_LINEAGE = """
WITH RECURSIVE
    back(id, supersedes) AS (
        SELECT id, supersedes FROM relationships WHERE id = %s
        UNION ALL
        SELECT r.id, r.supersedes FROM relationships r JOIN back ON r.id = back.supersedes
    ),
    chain(id) AS (
        SELECT id FROM back WHERE supersedes IS NULL
        UNION ALL
        SELECT r.id FROM relationships r JOIN chain ON r.supersedes = chain.id
    )
"""
Conn = psycopg.Connection[Any]


def _relationship(row: Sequence[Any]) -> Relationship:
    return Relationship(
        id=row[0],
        from_id=row[1],
        from_name=row[2],
        type=row[3],
        to_id=row[4],
        to_name=row[5],
        valid_at=row[6],
        invalid_at=row[7],
        created_at=row[8],
        superseded_at=row[9],
        reason=RetireReason(row[10]) if row[10] else None,
        source=row[11],
        supersedes=row[12],
    )


_ENTITY = (
    "SELECT e.id, e.key, e.name, e.type, e.created_at, e.updated_at,"
    " array(SELECT a.alias FROM entity_aliases a WHERE a.entity_id = e.id ORDER BY a.seq)"
    " FROM entities e"
)


def _entity(row: Sequence[Any]) -> Entity:
    return Entity(
        id=row[0],
        key=row[1],
        name=row[2],
        type=row[3],
        aliases=tuple(row[6]),
        created_at=row[4],
        updated_at=row[5],
    )


def _entities(conn: Conn, ids: Sequence[int]) -> dict[int, Entity]:
    rows = conn.execute(f"{_ENTITY} WHERE e.id = ANY(%s)", (list(ids),)).fetchall()
    return {row[0]: _entity(row) for row in rows}


def find_entity(conn: Conn, key: str) -> Entity | None:
    """The entity whose key, or one of whose aliases' keys, is `key` (one round trip)."""
    row = conn.execute(
        f"{_ENTITY} WHERE e.id = (SELECT id FROM entities WHERE key = %s UNION ALL"
        " SELECT entity_id FROM entity_aliases WHERE key = %s LIMIT 1)",
        (key, key),
    ).fetchone()
    return _entity(row) if row else None


def _relations_where(
    from_ids: Sequence[int] | None,
    to_ids: Sequence[int] | None,
    type: str | None,
    valid: datetime | None,
    known: datetime | None,
) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    for column, ids in (("r.from_id", from_ids), ("r.to_id", to_ids)):
        if ids is not None:
            clauses.append(f"{column} = ANY(%s)")
            params.append(list(ids))
    if type is not None:
        clauses.append("r.type = %s")
        params.append(type)
    if known is None:
        clauses.append("r.superseded_at IS NULL")
    else:
        clauses.append("r.created_at <= %s AND (r.superseded_at IS NULL OR r.superseded_at > %s)")
        params.extend([known] * 2)
    if valid is not None:
        clauses.append(
            "(r.valid_at IS NULL OR r.valid_at <= %s)"
            " AND (r.invalid_at IS NULL OR r.invalid_at > %s)"
        )
        params.extend([valid] * 2)
    return " AND ".join(clauses), params


class GraphWrites:
    """A `GraphSession` over a connection inside a write transaction. It remembers the
    entities it has looked up until it changes one: the transaction holds the brain's write
    lock, so no one else can meanwhile (a note's edges look each end up several times)."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self._known: dict[str, Entity | None] = {}

    def find_entity(self, key: str) -> Entity | None:
        if key not in self._known:
            self._known[key] = find_entity(self.conn, key)
        return self._known[key]

    def insert_entity(self, key: str, name: str, type: str | None, now: datetime) -> Entity:
        row = self.conn.execute(
            "INSERT INTO entities (key, name, type, created_at, updated_at)"
            " VALUES (%s, %s, %s, %s, %s) RETURNING id, key, name, type, created_at, updated_at",
            (key, name, type, now, now),
        ).fetchone()
        assert row is not None
        entity = Entity(row[0], row[1], row[2], row[3], (), row[4], row[5])
        self._known[key] = entity
        return entity

    def _forget(self, entity_id: int, *keys: str) -> None:
        """Drop what is remembered of an entity that changed (and of keys now taken)."""
        for key in [k for k, e in self._known.items() if e is not None and e.id == entity_id]:
            del self._known[key]
        for key in keys:
            self._known.pop(key, None)

    def set_entity_type(self, entity_id: int, type: str, now: datetime) -> None:
        self._forget(entity_id)
        self.conn.execute(
            "UPDATE entities SET type = %s, updated_at = %s WHERE id = %s", (type, now, entity_id)
        )

    def add_alias(self, entity_id: int, key: str, alias: str, now: datetime) -> None:
        self._forget(entity_id, key)
        self.conn.execute(
            "INSERT INTO entity_aliases (key, alias, entity_id, created_at)"
            " VALUES (%s, %s, %s, %s)",
            (key, alias, entity_id, now),
        )

    def current_version(self, from_id: int, type: str, to_id: int) -> Relationship | None:
        row = self.conn.execute(
            f"{_RELATIONSHIP} WHERE r.from_id = %s AND r.type = %s AND r.to_id = %s"
            " AND r.superseded_at IS NULL",
            (from_id, type, to_id),
        ).fetchone()
        return _relationship(row) if row else None

    def current_of(self, from_id: int, type: str) -> list[Relationship]:
        rows = self.conn.execute(
            f"{_RELATIONSHIP} WHERE r.from_id = %s AND r.type = %s AND r.superseded_at IS NULL"
            " ORDER BY r.id",
            (from_id, type),
        )
        return [_relationship(row) for row in rows]

    def set_statements(self, document_id: int, stated: Sequence[Statement]) -> None:
        with self.conn.pipeline(), self.conn.cursor() as cursor:
            cursor.execute("DELETE FROM note_statements WHERE document_id = %s", (document_id,))
            cursor.executemany(
                "INSERT INTO note_statements (document_id, from_id, type, to_id, valid_at,"
                " invalid_at) VALUES (%s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (document_id, from_id, type, to_id) DO UPDATE"
                " SET valid_at = excluded.valid_at, invalid_at = excluded.invalid_at",
                [
                    (document_id, s.from_id, s.type, s.to_id, s.valid_at, s.invalid_at)
                    for s in stated
                ],
            )

    def stating(self, from_id: int, type: str, to_id: int, besides: int) -> list[Statement]:
        rows = self.conn.execute(
            "SELECT document_id, valid_at, invalid_at FROM note_statements"
            " WHERE from_id = %s AND type = %s AND to_id = %s AND document_id != %s"
            " ORDER BY document_id",
            (from_id, type, to_id, besides),
        )
        return [Statement(r[0], from_id, type, to_id, r[1], r[2]) for r in rows]

    def current_from_source(self, source: str) -> list[Relationship]:
        rows = self.conn.execute(
            f"{_RELATIONSHIP} WHERE r.source = %s AND r.superseded_at IS NULL ORDER BY r.id",
            (source,),
        )
        return [_relationship(row) for row in rows]

    def insert_relationship(self, draft: RelationshipDraft, now: datetime) -> Relationship:
        row = self.conn.execute(
            "WITH r AS (INSERT INTO relationships (from_id, type, to_id, valid_at, invalid_at,"
            " created_at, source, supersedes) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
            " RETURNING *)"
            " SELECT r.id, r.from_id, f.name, r.type, r.to_id, t.name, r.valid_at, r.invalid_at,"
            " r.created_at, r.superseded_at, r.reason, r.source, r.supersedes"
            " FROM r JOIN entities f ON f.id = r.from_id JOIN entities t ON t.id = r.to_id",
            (
                draft.from_id,
                draft.type,
                draft.to_id,
                draft.valid_at,
                draft.invalid_at,
                now,
                draft.source,
                draft.supersedes,
            ),
        ).fetchone()
        assert row is not None
        return _relationship(row)

    def retire(self, relationship_id: int, reason: RetireReason, now: datetime) -> None:
        self.conn.execute(
            "UPDATE relationships SET superseded_at = %s, reason = %s"
            " WHERE id = %s AND superseded_at IS NULL",
            (now, reason.value, relationship_id),
        )


class _Rollback(Exception):
    """Raised to leave a dry run's transaction without committing it."""


class PostgresGraphStore:
    """A `GraphStore` over one brain's schema, sharing its connections."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @contextmanager
    def session(self, *, commit: bool = True) -> Iterator[GraphWrites]:
        try:
            with self._db.write("graph write failed") as conn:
                yield GraphWrites(conn)
                if not commit:
                    raise _Rollback
        except _Rollback:
            pass

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        with self._db.snapshot():
            yield

    def find_entity(self, key: str) -> Entity | None:
        with self._db.read() as conn:
            return find_entity(conn, key)

    def entities_named(self, keys: Sequence[str]) -> dict[str, Entity]:
        unique = list(dict.fromkeys(keys))
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT key, id FROM entities WHERE key = ANY(%s)"
                " UNION ALL SELECT key, entity_id FROM entity_aliases WHERE key = ANY(%s)",
                (unique, unique),
            ).fetchall()
            ids = {row[0]: int(row[1]) for row in rows}
            loaded = _entities(conn, list(set(ids.values())))
        return {key: loaded[entity_id] for key, entity_id in ids.items()}

    def lineage(self, relationship_id: int) -> list[Relationship]:
        with self._db.read() as conn:
            rows = conn.execute(
                f"{_LINEAGE} {_RELATIONSHIP} WHERE r.id IN (SELECT id FROM chain) ORDER BY r.id",
                (relationship_id,),
            ).fetchall()
        return [_relationship(row) for row in rows]

    def relations(
        self,
        *,
        from_ids: Sequence[int] | None = None,
        to_ids: Sequence[int] | None = None,
        type: str | None = None,
        valid: datetime | None = None,
        known: datetime | None = None,
    ) -> list[Relationship]:
        where, params = _relations_where(from_ids, to_ids, type, valid, known)
        with self._db.read() as conn:
            rows = conn.execute(f"{_RELATIONSHIP} WHERE {where} ORDER BY r.id", params).fetchall()
        return [_relationship(row) for row in rows]
