"""Entities and bitemporal relationships on any SQL engine (SQL only, all parameterised).

A relationship row is written once; retiring it sets `superseded_at` and `reason`, and the
database refuses any other update and every delete (each engine's migrations: SQLite's
triggers; PostgreSQL's triggers, checks, and a constraint trigger that makes a successor start
when its predecessor ended). Graph writes run in the brain's write transaction, so the graph
reads the state it decides on and writes what it decided with no other writer in between.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from nexusbrain.records import Entity, Relationship, RelationshipDraft, RetireReason, Statement
from nexusbrain.storage.sql.dialect import Connection, Connections, Dialect

_COLUMNS = (
    "{r}.id, {r}.from_id, f.name, {r}.type, {r}.to_id, t.name, {r}.valid_at, {r}.invalid_at,"
    " {r}.created_at, {r}.superseded_at, {r}.reason, {r}.source, {r}.supersedes"
)
_JOINED = " JOIN entities f ON f.id = {r}.from_id JOIN entities t ON t.id = {r}.to_id"
_RELATIONSHIP = f"SELECT {_COLUMNS} FROM relationships r{_JOINED}".format(r="r")
_NEW_RELATIONSHIP = f"SELECT {_COLUMNS} FROM new{_JOINED}".format(r="new")
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
_ENTITY = "SELECT e.id, e.key, e.name, e.type, e.created_at, e.updated_at"
_BY_KEY = (
    "e.id = (SELECT id FROM entities WHERE key = ?"
    " UNION ALL SELECT entity_id FROM entity_aliases WHERE key = ? LIMIT 1)"
)


def _time(d: Dialect, value: Any) -> datetime | None:
    return None if value is None else d.time_value(value)


def _relationship(d: Dialect, row: Sequence[Any]) -> Relationship:
    return Relationship(
        id=row[0],
        from_id=row[1],
        from_name=row[2],
        type=row[3],
        to_id=row[4],
        to_name=row[5],
        valid_at=_time(d, row[6]),
        invalid_at=_time(d, row[7]),
        created_at=d.time_value(row[8]),
        superseded_at=_time(d, row[9]),
        reason=RetireReason(row[10]) if row[10] else None,
        source=row[11],
        supersedes=row[12],
    )


def _entities(
    conn: Connection,
    d: Dialect,
    where: str,
    params: Sequence[Any],
    read: Callable[[str, Sequence[Any]], list[Any]] | None = None,
) -> list[Entity]:
    """The entities `where` selects (over `entities e`), their aliases in the order they were
    added: in the same statement where the engine has arrays, else by a second one. `read`
    runs the first statement (in the engine's dialect), if not `conn`."""
    aliases = d.array_of(
        f"SELECT a.alias FROM entity_aliases a WHERE a.entity_id = e.id ORDER BY a.{d.alias_order}"
    )
    column = "" if aliases is None else f", {aliases}"
    query = d.sql(f"{_ENTITY}{column} FROM entities e WHERE {where}")
    rows = conn.execute(query, params).fetchall() if read is None else read(query, params)
    if aliases is not None:
        return [_entity(d, row, tuple(row[6])) for row in rows]
    held: dict[int, list[str]] = {row[0]: [] for row in rows}
    for part in d.parts(list(held)):
        clause, values = d.any_of("entity_id", part)
        for entity_id, alias in conn.execute(
            d.sql(
                f"SELECT entity_id, alias FROM entity_aliases WHERE {clause}"
                f" ORDER BY {d.alias_order}"
            ),
            values,
        ):
            held[entity_id].append(alias)
    return [_entity(d, row, tuple(held[row[0]])) for row in rows]


def _entity(d: Dialect, row: Sequence[Any], aliases: tuple[str, ...]) -> Entity:
    return Entity(
        id=row[0],
        key=row[1],
        name=row[2],
        type=row[3],
        aliases=aliases,
        created_at=d.time_value(row[4]),
        updated_at=d.time_value(row[5]),
    )


def find_entity(
    conn: Connection,
    d: Dialect,
    key: str,
    read: Callable[[str, Sequence[Any]], list[Any]] | None = None,
) -> Entity | None:
    """The entity whose key, or one of whose aliases' keys, is `key` (`read` as `_entities`)."""
    found = _entities(conn, d, _BY_KEY, (key, key), read)
    return found[0] if found else None


def _relations_where(
    d: Dialect,
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
            clause, values = d.any_of(column, ids)
            clauses.append(clause)
            params.extend(values)
    if type is not None:
        clauses.append("r.type = ?")
        params.append(type)
    if known is None:
        clauses.append("r.superseded_at IS NULL")
    else:
        clauses.append("r.created_at <= ? AND (r.superseded_at IS NULL OR r.superseded_at > ?)")
        params.extend([d.time_param(known)] * 2)
    if valid is not None:
        clauses.append(
            "(r.valid_at IS NULL OR r.valid_at <= ?) AND (r.invalid_at IS NULL OR r.invalid_at > ?)"
        )
        params.extend([d.time_param(valid)] * 2)
    return " AND ".join(clauses), params


class GraphWrites:
    """A `GraphSession` over a connection inside the brain's write transaction. It remembers
    the entities it has looked up until it changes one: the transaction holds the write lock,
    so no one else can meanwhile (a note's edges look each end up several times)."""

    def __init__(self, conn: Connection, dialect: Dialect) -> None:
        self.conn = conn
        self.d = dialect
        self._known: dict[str, Entity | None] = {}

    def _rows(self, query: str, params: Sequence[Any]) -> list[Any]:
        return self._read(self.d.sql(query), params)

    def _read(self, query: str, params: Sequence[Any]) -> list[Any]:
        """The rows of a statement already in the engine's dialect."""
        return self.conn.execute(query, params).fetchall()

    def _write(self, query: str, params: Sequence[Any]) -> None:
        self.conn.execute(self.d.sql(query), params)

    def find_entity(self, key: str) -> Entity | None:
        if key not in self._known:
            self._known[key] = find_entity(self.conn, self.d, key, self._read)
        return self._known[key]

    def look_up(self, keys: Sequence[str]) -> None:
        """Look these keys up together, for the `find_entity` calls that follow."""
        todo = [key for key in dict.fromkeys(keys) if key not in self._known]
        if todo:
            found = entities_by_key(self.conn, self.d, todo, self._read)
            self._known.update((key, found.get(key)) for key in todo)

    def insert_entity(self, key: str, name: str, type: str | None, now: datetime) -> Entity:
        stamp = self.d.time_param(now)
        row = self.d.inserted(
            self.conn,
            "entities",
            "INSERT INTO entities (key, name, type, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
            (key, name, type, stamp, stamp),
            "SELECT id, key, name, type, created_at, updated_at FROM new",
        )
        entity = _entity(self.d, row, ())
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
        self._write(
            "UPDATE entities SET type = ?, updated_at = ? WHERE id = ?",
            (type, self.d.time_param(now), entity_id),
        )

    def add_alias(self, entity_id: int, key: str, alias: str, now: datetime) -> None:
        self._forget(entity_id, key)
        self._write(
            "INSERT INTO entity_aliases (key, alias, entity_id, created_at) VALUES (?, ?, ?, ?)",
            (key, alias, entity_id, self.d.time_param(now)),
        )

    def current_version(self, from_id: int, type: str, to_id: int) -> Relationship | None:
        rows = self._rows(
            f"{_RELATIONSHIP} WHERE r.from_id = ? AND r.type = ? AND r.to_id = ?"
            " AND r.superseded_at IS NULL",
            (from_id, type, to_id),
        )
        return _relationship(self.d, rows[0]) if rows else None

    def current_of(self, from_id: int, type: str) -> list[Relationship]:
        rows = self._rows(
            f"{_RELATIONSHIP} WHERE r.from_id = ? AND r.type = ? AND r.superseded_at IS NULL"
            " ORDER BY r.id",
            (from_id, type),
        )
        return [_relationship(self.d, row) for row in rows]

    def set_statements(self, document_id: int, stated: Sequence[Statement]) -> None:
        d = self.d
        with d.batch(self.conn):
            self.conn.execute(
                d.sql("DELETE FROM note_statements WHERE document_id = ?"), (document_id,)
            )
            d.executemany(
                self.conn,
                "INSERT INTO note_statements (document_id, from_id, type, to_id, valid_at,"
                " invalid_at) VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (document_id, from_id, type, to_id) DO UPDATE"
                " SET valid_at = excluded.valid_at, invalid_at = excluded.invalid_at",
                [
                    (
                        document_id,
                        s.from_id,
                        s.type,
                        s.to_id,
                        d.time_param(s.valid_at),
                        d.time_param(s.invalid_at),
                    )
                    for s in stated
                ],
            )

    def stating(self, from_id: int, type: str, to_id: int, besides: int) -> list[Statement]:
        rows = self._rows(
            "SELECT document_id, valid_at, invalid_at FROM note_statements"
            " WHERE from_id = ? AND type = ? AND to_id = ? AND document_id != ?"
            " ORDER BY document_id",
            (from_id, type, to_id, besides),
        )
        d = self.d
        return [Statement(r[0], from_id, type, to_id, _time(d, r[1]), _time(d, r[2])) for r in rows]

    def current_from_source(self, source: str) -> list[Relationship]:
        rows = self._rows(
            f"{_RELATIONSHIP} WHERE r.source = ? AND r.superseded_at IS NULL ORDER BY r.id",
            (source,),
        )
        return [_relationship(self.d, row) for row in rows]

    def current_from_sources(self, sources: Sequence[str]) -> list[Relationship]:
        """The current relationships of any of these sources (at most what the dialect's
        `parts` gives), by id."""
        clause, values = self.d.any_of("r.source", sources)
        rows = self._rows(
            f"{_RELATIONSHIP} WHERE {clause} AND r.superseded_at IS NULL ORDER BY r.id", values
        )
        return [_relationship(self.d, row) for row in rows]

    def insert_relationship(self, draft: RelationshipDraft, now: datetime) -> Relationship:
        d = self.d
        row = d.inserted(
            self.conn,
            "relationships",
            "INSERT INTO relationships (from_id, type, to_id, valid_at, invalid_at, created_at,"
            " source, supersedes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                draft.from_id,
                draft.type,
                draft.to_id,
                d.time_param(draft.valid_at),
                d.time_param(draft.invalid_at),
                d.time_param(now),
                draft.source,
                draft.supersedes,
            ),
            _NEW_RELATIONSHIP,
        )
        return _relationship(d, row)

    def retire(self, relationship_id: int, reason: RetireReason, now: datetime) -> None:
        self._write(
            "UPDATE relationships SET superseded_at = ?, reason = ?"
            " WHERE id = ? AND superseded_at IS NULL",
            (self.d.time_param(now), reason.value, relationship_id),
        )


class _Rollback(Exception):
    """Raised to leave a dry run's transaction without committing it."""


class SQLGraphStore:
    """A `GraphStore` over a backend's connections."""

    def __init__(self, db: Connections) -> None:
        self._db = db
        self.d = db.dialect

    @contextmanager
    def session(self, *, commit: bool = True) -> Iterator[GraphWrites]:
        try:
            with self._db.write("graph write failed") as conn:
                yield GraphWrites(conn, self.d)
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
            return find_entity(conn, self.d, key)

    def entities_named(self, keys: Sequence[str]) -> dict[str, Entity]:
        with self._db.read() as conn:
            return entities_by_key(conn, self.d, keys)

    def lineage(self, relationship_id: int) -> list[Relationship]:
        query = f"{_LINEAGE} {_RELATIONSHIP} WHERE r.id IN (SELECT id FROM chain) ORDER BY r.id"
        with self._db.read() as conn:
            rows = conn.execute(self.d.sql(query), (relationship_id,)).fetchall()
        return [_relationship(self.d, row) for row in rows]

    def relations(
        self,
        *,
        from_ids: Sequence[int] | None = None,
        to_ids: Sequence[int] | None = None,
        type: str | None = None,
        valid: datetime | None = None,
        known: datetime | None = None,
    ) -> list[Relationship]:
        where, params = _relations_where(self.d, from_ids, to_ids, type, valid, known)
        with self._db.read() as conn:
            query = self.d.sql(f"{_RELATIONSHIP} WHERE {where} ORDER BY r.id")
            rows = conn.execute(query, params).fetchall()
        return [_relationship(self.d, row) for row in rows]


def entities_by_key(
    conn: Connection,
    d: Dialect,
    keys: Sequence[str],
    read: Callable[[str, Sequence[Any]], list[Any]] | None = None,
) -> dict[str, Entity]:
    """The entities that these keys name (as their key or an alias's), by key; `read` runs
    each statement (in the engine's dialect), if not `conn`."""
    run = read or (lambda query, params: conn.execute(query, params).fetchall())
    ids: dict[str, int] = {}
    for part in d.parts(list(dict.fromkeys(keys))):
        clause, values = d.any_of("key", part)
        query = (
            f"SELECT key, id FROM entities WHERE {clause}"
            f" UNION ALL SELECT key, entity_id FROM entity_aliases WHERE {clause}"
        )
        ids.update((row[0], int(row[1])) for row in run(d.sql(query), values * 2))
    found = list(set(ids.values()))
    loaded: dict[int, Entity] = {}
    for some in d.parts(found):
        clause, values = d.any_of("e.id", some)
        loaded.update((e.id, e) for e in _entities(conn, d, clause, values, run))
    return {key: loaded[entity_id] for key, entity_id in ids.items()}
