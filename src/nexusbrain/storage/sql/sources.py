"""The named folders the brain keeps in sync (records.Source), on any SQL engine: one row each
in `sources` (each engine's migration 11). Their documents are the documents' own rows, found
by the root's prefix; a source's row holds only what it is and how its last sync went."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson

from nexusbrain.errors import Conflict, NotFound
from nexusbrain.records import Source
from nexusbrain.storage.sql.dialect import Connections, Dialect

_COLUMNS = "name, root, include, exclude, domain, created_at, synced_at, problems"


def _source(d: Dialect, row: Sequence[Any]) -> Source:
    return Source(
        name=row[0],
        root=row[1],
        include=tuple(orjson.loads(row[2])),
        exclude=tuple(orjson.loads(row[3])),
        domain=row[4],
        created_at=d.time_value(row[5]),
        synced_at=d.time_value(row[6]) if row[6] is not None else None,
        problems=tuple((p, r) for p, r in orjson.loads(row[7])),
    )


class SQLSourceStore:
    """The `sources` table over a backend's connections (storage/base.py's SourceStore)."""

    def __init__(self, db: Connections) -> None:
        self.db = db
        self.d = db.dialect

    def sources(self) -> list[Source]:
        with self.db.read() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM sources ORDER BY name").fetchall()
        return [_source(self.d, row) for row in rows]

    def source(self, name: str) -> Source | None:
        query = self.d.sql(f"SELECT {_COLUMNS} FROM sources WHERE name = ?")
        with self.db.read() as conn:
            row = conn.execute(query, [name]).fetchone()
        return _source(self.d, row) if row is not None else None

    def add_source(self, source: Source, now: datetime) -> None:
        """Raises Conflict when a source has its name or its root already."""
        with self.db.write("adding a source") as conn:
            held = conn.execute(
                self.d.sql("SELECT name, root FROM sources WHERE name = ? OR root = ?"),
                [source.name, source.root],
            ).fetchone()
            if held is not None:
                raise Conflict(
                    f"source {held[0]!r} ({held[1]}) has that name or folder already: "
                    "choose another --name, or `sources remove` it first"
                )
            conn.execute(
                self.d.sql(f"INSERT INTO sources ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
                [
                    source.name,
                    source.root,
                    orjson.dumps(list(source.include)).decode(),
                    orjson.dumps(list(source.exclude)).decode(),
                    source.domain,
                    self.d.time_param(now),
                    None,
                    "[]",
                ],
            )

    def record_sync(self, name: str, at: datetime, problems: Sequence[tuple[str, str]]) -> None:
        """A sync of the source ended at `at`, skipping these files (path, reason)."""
        with self.db.write("recording a source's sync") as conn:
            conn.execute(
                self.d.sql("UPDATE sources SET synced_at = ?, problems = ? WHERE name = ?"),
                [self.d.time_param(at), orjson.dumps([list(p) for p in problems]).decode(), name],
            )

    def remove_source(self, name: str) -> None:
        """Raises NotFound for a name no source has."""
        with self.db.write("removing a source") as conn:
            held = conn.execute(self.d.sql("SELECT 1 FROM sources WHERE name = ?"), [name])
            if held.fetchone() is None:
                raise NotFound(f"no source named {name!r}: `nexusbrain sources list` names them")
            conn.execute(self.d.sql("DELETE FROM sources WHERE name = ?"), [name])
