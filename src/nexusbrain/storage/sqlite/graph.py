"""Entities and bitemporal relationships in the SQLite store (SQL only, all parameterised).

Times are ISO-8601 text from `format_time` (UTC, microseconds), so comparing them as text
compares them as times. A relationship row is written once; retiring it sets `superseded_at`
and `reason`, and triggers refuse any other update and every delete.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from nexusbrain.clock import format_time, parse_time
from nexusbrain.records import Entity, Relationship, RelationshipDraft, RetireReason, Statement

if TYPE_CHECKING:  # sqlite.py imports migrations.py, which imports this module
    from nexusbrain.storage.sqlite.store import SQLiteStore

MIGRATION = """
CREATE TABLE entities (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    type TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE entity_aliases (
    key TEXT PRIMARY KEY,
    alias TEXT NOT NULL,
    entity_id INTEGER NOT NULL REFERENCES entities (id),
    created_at TEXT NOT NULL
);
CREATE INDEX entity_aliases_entity ON entity_aliases (entity_id);
CREATE TABLE relationships (
    id INTEGER PRIMARY KEY,
    from_id INTEGER NOT NULL REFERENCES entities (id),
    type TEXT NOT NULL,
    to_id INTEGER NOT NULL REFERENCES entities (id),
    valid_at TEXT,
    invalid_at TEXT,
    created_at TEXT NOT NULL,
    superseded_at TEXT,
    reason TEXT,
    source TEXT,
    supersedes INTEGER REFERENCES relationships (id),
    CHECK (valid_at IS NULL OR invalid_at IS NULL OR valid_at < invalid_at),
    CHECK ((superseded_at IS NULL) = (reason IS NULL)),
    CHECK (superseded_at IS NULL OR superseded_at >= created_at)
);
CREATE UNIQUE INDEX relationships_one_current ON relationships (from_id, type, to_id)
    WHERE superseded_at IS NULL;
CREATE UNIQUE INDEX relationships_one_successor ON relationships (supersedes)
    WHERE supersedes IS NOT NULL;
CREATE INDEX relationships_from ON relationships (from_id, type);
CREATE INDEX relationships_to ON relationships (to_id);
CREATE INDEX relationships_source ON relationships (source) WHERE superseded_at IS NULL;
CREATE TRIGGER relationships_never_deleted BEFORE DELETE ON relationships BEGIN
    SELECT RAISE(ABORT, 'relationships are never deleted: retire them');
END;
CREATE TRIGGER relationships_retired_once BEFORE UPDATE ON relationships
WHEN old.superseded_at IS NOT NULL OR new.id IS NOT old.id OR new.from_id IS NOT old.from_id
    OR new.type IS NOT old.type OR new.to_id IS NOT old.to_id
    OR new.valid_at IS NOT old.valid_at OR new.invalid_at IS NOT old.invalid_at
    OR new.created_at IS NOT old.created_at OR new.source IS NOT old.source
    OR new.supersedes IS NOT old.supersedes
BEGIN
    SELECT RAISE(ABORT, 'a relationship version is immutable: only its retirement is recorded');
END;
CREATE TRIGGER entities_never_deleted BEFORE DELETE ON entities BEGIN
    SELECT RAISE(ABORT, 'entities are never deleted');
END;
CREATE TRIGGER entity_aliases_never_deleted BEFORE DELETE ON entity_aliases BEGIN
    SELECT RAISE(ABORT, 'entity aliases are never deleted');
END;
"""

# Migration 9: what each note states, so that a fact two notes state outlives either one.
STATEMENTS_MIGRATION = """
CREATE TABLE note_statements (
    document_id INTEGER NOT NULL REFERENCES documents (id),
    from_id INTEGER NOT NULL REFERENCES entities (id),
    type TEXT NOT NULL,
    to_id INTEGER NOT NULL REFERENCES entities (id),
    valid_at TEXT,
    invalid_at TEXT,
    PRIMARY KEY (document_id, from_id, type, to_id)
);
CREATE INDEX note_statements_triple ON note_statements (from_id, type, to_id);
"""

_RELATIONSHIP = (
    "SELECT r.id, r.from_id, f.name AS from_name, r.type, r.to_id, t.name AS to_name,"
    " r.valid_at, r.invalid_at, r.created_at, r.superseded_at, r.reason, r.source, r.supersedes"
    " FROM relationships r JOIN entities f ON f.id = r.from_id JOIN entities t ON t.id = r.to_id"
)
_LINEAGE = """
WITH RECURSIVE
    back(id, supersedes) AS (
        SELECT id, supersedes FROM relationships WHERE id = ?
        UNION ALL
        SELECT r.id, r.supersedes FROM relationships r JOIN back ON r.id = back.supersedes
    ),
    chain(id) AS (
        SELECT id FROM back WHERE supersedes IS NULL
        UNION ALL
        SELECT r.id FROM relationships r JOIN chain ON r.supersedes = chain.id
    )
"""
_KEY_BATCH = 500


def _time(value: str | None) -> datetime | None:
    return parse_time(value) if value is not None else None


def _stamp(value: datetime | None) -> str | None:
    return format_time(value) if value is not None else None


def _relationship(row: sqlite3.Row) -> Relationship:
    return Relationship(
        id=row["id"],
        from_id=row["from_id"],
        from_name=row["from_name"],
        type=row["type"],
        to_id=row["to_id"],
        to_name=row["to_name"],
        valid_at=_time(row["valid_at"]),
        invalid_at=_time(row["invalid_at"]),
        created_at=parse_time(row["created_at"]),
        superseded_at=_time(row["superseded_at"]),
        reason=RetireReason(row["reason"]) if row["reason"] else None,
        source=row["source"],
        supersedes=row["supersedes"],
    )


def _entity(conn: sqlite3.Connection, entity_id: int) -> Entity:
    row = conn.execute(
        "SELECT id, key, name, type, created_at, updated_at FROM entities WHERE id = ?",
        (entity_id,),
    ).fetchone()
    aliases = conn.execute(
        "SELECT alias FROM entity_aliases WHERE entity_id = ? ORDER BY rowid", (entity_id,)
    )
    return Entity(
        id=row["id"],
        key=row["key"],
        name=row["name"],
        type=row["type"],
        aliases=tuple(a["alias"] for a in aliases),
        created_at=parse_time(row["created_at"]),
        updated_at=parse_time(row["updated_at"]),
    )


def _entity_id(conn: sqlite3.Connection, key: str) -> int | None:
    row = conn.execute(
        "SELECT id FROM entities WHERE key = ?"
        " UNION ALL SELECT entity_id FROM entity_aliases WHERE key = ? LIMIT 1",
        (key, key),
    ).fetchone()
    return int(row[0]) if row else None


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
            clauses.append(f"{column} IN ({','.join('?' * len(ids))})")
            params.extend(ids)
    if type is not None:
        clauses.append("r.type = ?")
        params.append(type)
    if known is None:
        clauses.append("r.superseded_at IS NULL")
    else:
        clauses.append("r.created_at <= ? AND (r.superseded_at IS NULL OR r.superseded_at > ?)")
        params.extend([format_time(known)] * 2)
    if valid is not None:
        clauses.append(
            "(r.valid_at IS NULL OR r.valid_at <= ?) AND (r.invalid_at IS NULL OR r.invalid_at > ?)"
        )
        params.extend([format_time(valid)] * 2)
    return " AND ".join(clauses), params


class GraphWrites:
    """A `GraphSession` over a connection inside a write transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def find_entity(self, key: str) -> Entity | None:
        entity_id = _entity_id(self.conn, key)
        return _entity(self.conn, entity_id) if entity_id is not None else None

    def insert_entity(self, key: str, name: str, type: str | None, now: datetime) -> Entity:
        stamp = format_time(now)
        cursor = self.conn.execute(
            "INSERT INTO entities (key, name, type, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
            (key, name, type, stamp, stamp),
        )
        return _entity(self.conn, int(cursor.lastrowid or 0))

    def set_entity_type(self, entity_id: int, type: str, now: datetime) -> None:
        self.conn.execute(
            "UPDATE entities SET type = ?, updated_at = ? WHERE id = ?",
            (type, format_time(now), entity_id),
        )

    def add_alias(self, entity_id: int, key: str, alias: str, now: datetime) -> None:
        self.conn.execute(
            "INSERT INTO entity_aliases (key, alias, entity_id, created_at) VALUES (?, ?, ?, ?)",
            (key, alias, entity_id, format_time(now)),
        )

    def current_version(self, from_id: int, type: str, to_id: int) -> Relationship | None:
        row = self.conn.execute(
            f"{_RELATIONSHIP} WHERE r.from_id = ? AND r.type = ? AND r.to_id = ?"
            " AND r.superseded_at IS NULL",
            (from_id, type, to_id),
        ).fetchone()
        return _relationship(row) if row else None

    def current_of(self, from_id: int, type: str) -> list[Relationship]:
        rows = self.conn.execute(
            f"{_RELATIONSHIP} WHERE r.from_id = ? AND r.type = ? AND r.superseded_at IS NULL"
            " ORDER BY r.id",
            (from_id, type),
        )
        return [_relationship(row) for row in rows]

    def set_statements(self, document_id: int, stated: Sequence[Statement]) -> None:
        self.conn.execute("DELETE FROM note_statements WHERE document_id = ?", (document_id,))
        self.conn.executemany(
            "INSERT OR REPLACE INTO note_statements (document_id, from_id, type, to_id,"
            " valid_at, invalid_at) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (document_id, s.from_id, s.type, s.to_id, _stamp(s.valid_at), _stamp(s.invalid_at))
                for s in stated
            ],
        )

    def stating(self, from_id: int, type: str, to_id: int, besides: int) -> list[Statement]:
        rows = self.conn.execute(
            "SELECT document_id, valid_at, invalid_at FROM note_statements"
            " WHERE from_id = ? AND type = ? AND to_id = ? AND document_id != ?"
            " ORDER BY document_id",
            (from_id, type, to_id, besides),
        )
        return [Statement(r[0], from_id, type, to_id, _time(r[1]), _time(r[2])) for r in rows]

    def current_from_source(self, source: str) -> list[Relationship]:
        rows = self.conn.execute(
            f"{_RELATIONSHIP} WHERE r.source = ? AND r.superseded_at IS NULL ORDER BY r.id",
            (source,),
        )
        return [_relationship(row) for row in rows]

    def insert_relationship(self, draft: RelationshipDraft, now: datetime) -> Relationship:
        cursor = self.conn.execute(
            "INSERT INTO relationships (from_id, type, to_id, valid_at, invalid_at, created_at,"
            " source, supersedes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                draft.from_id,
                draft.type,
                draft.to_id,
                _stamp(draft.valid_at),
                _stamp(draft.invalid_at),
                format_time(now),
                draft.source,
                draft.supersedes,
            ),
        )
        row = self.conn.execute(f"{_RELATIONSHIP} WHERE r.id = ?", (cursor.lastrowid,)).fetchone()
        return _relationship(row)

    def retire(self, relationship_id: int, reason: RetireReason, now: datetime) -> None:
        self.conn.execute(
            "UPDATE relationships SET superseded_at = ?, reason = ?"
            " WHERE id = ? AND superseded_at IS NULL",
            (format_time(now), reason.value, relationship_id),
        )


class _Rollback(Exception):
    """Raised to leave a dry run's transaction without committing it."""


class SQLiteGraphStore:
    """A `GraphStore` over the tables of an `SQLiteStore`, sharing its connections and lock."""

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store

    @contextmanager
    def session(self, *, commit: bool = True) -> Iterator[GraphWrites]:
        try:
            with self._store.transaction() as conn:
                yield GraphWrites(conn)
                if not commit:
                    raise _Rollback
        except _Rollback:
            pass

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        conn = self._store.connection()
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN")
        try:
            yield
        finally:
            conn.execute("COMMIT")  # read-only: nothing to keep or undo

    def find_entity(self, key: str) -> Entity | None:
        conn = self._store.connection()
        entity_id = _entity_id(conn, key)
        return _entity(conn, entity_id) if entity_id is not None else None

    def entities_named(self, keys: Sequence[str]) -> dict[str, Entity]:
        conn = self._store.connection()
        ids: dict[str, int] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), _KEY_BATCH):
            batch = unique[start : start + _KEY_BATCH]
            marks = ",".join("?" * len(batch))
            rows = conn.execute(
                f"SELECT key, id FROM entities WHERE key IN ({marks})"
                f" UNION ALL SELECT key, entity_id FROM entity_aliases WHERE key IN ({marks})",
                (*batch, *batch),
            )
            ids.update((row[0], int(row[1])) for row in rows)
        loaded = {entity_id: _entity(conn, entity_id) for entity_id in set(ids.values())}
        return {key: loaded[entity_id] for key, entity_id in ids.items()}

    def lineage(self, relationship_id: int) -> list[Relationship]:
        rows = self._store.connection().execute(
            f"{_LINEAGE} {_RELATIONSHIP} WHERE r.id IN (SELECT id FROM chain) ORDER BY r.id",
            (relationship_id,),
        )
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
        rows = self._store.connection().execute(
            f"{_RELATIONSHIP} WHERE {where} ORDER BY r.id", params
        )
        return [_relationship(row) for row in rows]
