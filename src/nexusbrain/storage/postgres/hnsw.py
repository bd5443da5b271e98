"""A dense index kept by PostgreSQL: pgvector HNSW over a model's centred vectors.

A replica that uses it holds no vectors: a search asks the database for the HNSW index's
nearest rows and rescores them exactly. The index is built on request (`nexusbrain
dense-index build`), for a brain past what every replica should hold in memory
(docs/design/postgres.md has the figures).

Similarities are cosines around a centre (vector_index.py). HNSW cannot search around a
centre that moves, so the build freezes one: the live rows' centre at that time, kept in
`dense_centres`. Each stored vector then also keeps its centred unit form, in
`vectors.centred`, which is what the index holds. Every writer centres the vectors it
stores around the frozen centre once one exists; the build fills in the rows stored before.
A writer and the build take one advisory lock (shared, exclusive) around reading and
setting the centre, so that no vector is stored uncentred after the build has filled them
in. A build again re-centres every row around the live rows' centre of then.

The table and the column are made by the first build, not by a migration: a brain without
this index has neither, and its export is the same on both backends."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from numpy.typing import NDArray
from psycopg import sql

from nexusbrain.config import (
    HNSW_BUILD_MEMORY,
    HNSW_EF_CONSTRUCTION,
    HNSW_EF_SEARCH,
    HNSW_M,
)
from nexusbrain.embeddings.base import normalise_rows
from nexusbrain.errors import Busy, InvalidInput, NotFound
from nexusbrain.records import Scored, SearchFilters
from nexusbrain.storage.postgres import copyout
from nexusbrain.storage.postgres.database import Database
from nexusbrain.storage.postgres.dialect import POSTGRES
from nexusbrain.storage.sql.filters import filter_sql
from nexusbrain.storage.vector_index import IndexConfig, centre_of

log = logging.getLogger(__name__)

Conn = psycopg.Connection[Any]
Progress = Callable[[str], None]

FILL_BATCH = 20_000  # vectors centred per statement while building
ITERATIVE_SCANS = (0, 8, 0)
_MEMORY = re.compile(r"[1-9][0-9]*(kB|MB|GB)")

_TABLE = (
    "CREATE TABLE IF NOT EXISTS dense_centres (model text PRIMARY KEY, dim integer NOT NULL,"
    " centre real[] NOT NULL, rows bigint NOT NULL, m integer NOT NULL,"
    " ef_construction integer NOT NULL, built_at timestamptz NOT NULL DEFAULT now())"
)


def index_name(model: str) -> str:
    return "dense_hnsw_" + hashlib.sha1(model.encode("utf-8")).hexdigest()[:12]


def _lock_key(model: str) -> str:
    return f"nexusbrain:dense:{model}"


def writer_centre(
    conn: Conn, model: str, checked: psycopg.Cursor[Any]
) -> NDArray[np.float32] | None:
    """The frozen centre that a writer must centre `model`'s new vectors around, or None
    when the model has no HNSW index. Call inside the writer's transaction: the shared lock
    it takes is held to its commit, so a build cannot fill in rows before this writer's
    are committed and then miss them. `checked`: the cursor of `centre_check(model)`, which
    the caller sends (in a pipeline with its other statements)."""
    exists = checked.fetchone()
    if not exists or not exists[0]:
        return None
    row = conn.execute("SELECT centre FROM dense_centres WHERE model = %s", (model,)).fetchone()
    return None if row is None else np.asarray(row[0], np.float32)


def centre_check(model: str) -> tuple[str, tuple[str]]:
    """The statement that takes the writer's shared lock (`writer_centre`) and says whether
    any model has a frozen centre."""
    return (
        "SELECT to_regclass('dense_centres') IS NOT NULL"
        " FROM pg_advisory_xact_lock_shared(hashtextextended(%s, 0))",
        (_lock_key(model),),
    )


def centred_rows(vectors: NDArray[np.float32], centre: NDArray[np.float32]) -> NDArray[np.float16]:
    """Unit rows around `centre`, as the index keeps them (float16)."""
    out: NDArray[np.float16] = normalise_rows(vectors - centre).astype(np.float16)
    return out


def halfvec_text(vector: NDArray[np.floating]) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"


@dataclass(frozen=True, slots=True)
class DenseStatus:
    """What `dense-index status` reports for one model."""

    model: str
    built: bool  # the index exists and is valid
    rows: int | None = None  # live rows with vectors when it was built
    dim: int | None = None
    m: int | None = None
    ef_construction: int | None = None
    built_at: str | None = None
    index_bytes: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "kind": "pgvector-hnsw" if self.built else "in-process",
            "built": self.built,
            "rows_at_build": self.rows,
            "dim": self.dim,
            "m": self.m,
            "ef_construction": self.ef_construction,
            "built_at": self.built_at,
            "index_bytes": self.index_bytes,
        }


def status(db: Database, model: str) -> DenseStatus:
    with db.read("could not read the dense index's state") as conn:
        table = conn.execute("SELECT to_regclass('dense_centres') IS NOT NULL").fetchone()
        if not table or not table[0]:
            return DenseStatus(model, False)
        row = conn.execute(
            "SELECT d.rows, d.dim, d.m, d.ef_construction, d.built_at::text,"
            " (SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass(%s)),"
            " pg_relation_size(to_regclass(%s))"
            " FROM dense_centres d WHERE d.model = %s",
            (index_name(model), index_name(model), model),
        ).fetchone()
    if row is None:
        return DenseStatus(model, False)
    rows, dim, m, ef, built_at, valid, size = row
    return DenseStatus(model, bool(valid), rows, dim, m, ef, built_at, size)


def build(
    db: Database,
    load: Callable[[], NDArray[np.float16]],
    model: str,
    dim: int,
    config: IndexConfig,
    *,
    m: int = HNSW_M,
    ef_construction: int = HNSW_EF_CONSTRUCTION,
    memory: str = HNSW_BUILD_MEMORY,
    progress: Progress | None = None,
) -> DenseStatus:
    """Freeze the centre of the live rows (`load` gives their vectors), centre every stored
    vector of the model around it, and build the HNSW index over them (CONCURRENTLY: writes
    and searches go on meanwhile). Built again, it re-centres and rebuilds."""
    say = progress or (lambda _message: None)
    if not 2 <= m <= 100 or not 4 <= ef_construction <= 1000 or ef_construction < 2 * m:
        raise InvalidInput(
            "m must be 2 to 100 and ef_construction 4 to 1000, at least twice m"
            f" (got m={m}, ef_construction={ef_construction})"
        )
    if not _MEMORY.fullmatch(memory):
        raise InvalidInput(f"memory is a size such as 512MB or 2GB (kB, MB or GB), not {memory!r}")
    if db.vector_version < ITERATIVE_SCANS:
        found = ".".join(map(str, db.vector_version))
        raise InvalidInput(
            f"pgvector {found} has no iterative index scans, which filtered searches need:"
            " the HNSW index needs pgvector 0.8 or later (as its owner run: ALTER EXTENSION"
            " vector UPDATE)"
        )
    with db.errors("could not build the dense index"), db.connection() as conn:
        name = index_name(model)
        mine = conn.execute(
            "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (f"{_lock_key(model)}:build",)
        ).fetchone()
        if not mine or not mine[0]:
            raise Busy(f"another dense-index build of {model} is running on this brain")
        try:
            return _build(db, conn, load, name, model, dim, config, m, ef_construction, memory, say)
        finally:
            conn.execute(
                "SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (f"{_lock_key(model)}:build",)
            )


def _build(
    db: Database,
    conn: Conn,
    load: Callable[[], NDArray[np.float16]],
    name: str,
    model: str,
    dim: int,
    config: IndexConfig,
    m: int,
    ef_construction: int,
    memory: str,
    say: Progress,
) -> DenseStatus:
    with conn.transaction():
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            (f"nexusbrain:{db.url.schema}:migrate",),
        )
        conn.execute(_TABLE)
        conn.execute("ALTER TABLE vectors ADD COLUMN IF NOT EXISTS centred halfvec")
    if status(db, model).rows is not None:
        say("dropping the old index: searches scan every row until the new one is built")
    conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
    half = load()
    if not len(half):
        raise InvalidInput(f"no vectors for {model} yet: ingest first, then build")
    centre = centre_of(half, config)
    say(f"centre frozen over {len(half):,} live rows")
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (_lock_key(model),))
        conn.execute(
            "INSERT INTO dense_centres (model, dim, centre, rows, m, ef_construction)"
            " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (model) DO UPDATE SET"
            " dim = excluded.dim, centre = excluded.centre, rows = excluded.rows,"
            " m = excluded.m, ef_construction = excluded.ef_construction, built_at = now()",
            (model, dim, centre.tolist(), len(half), m, ef_construction),
        )
    # from here on every writer centres its vectors; these are the ones stored before
    centred = _fill(conn, model, dim, say)
    say(f"{centred:,} vectors centred; building the HNSW index")
    conn.execute(f"SET maintenance_work_mem = '{memory}'")
    started = time.monotonic()

    def told(diagnostic: psycopg.errors.Diagnostic) -> None:
        say(f"PostgreSQL: {diagnostic.message_primary} (a larger --memory keeps it in memory)")

    conn.add_notice_handler(told)
    try:
        with _Watch(db, name, say):
            conn.execute(
                sql.SQL(
                    "CREATE INDEX CONCURRENTLY {} ON vectors USING hnsw"
                    " ((centred::halfvec({})) halfvec_ip_ops) WITH (m = {}, ef_construction = {})"
                    " WHERE model = {}"
                ).format(
                    sql.Identifier(name),
                    sql.Literal(dim),
                    sql.Literal(m),
                    sql.Literal(ef_construction),
                    sql.Literal(model),
                )
            )
    finally:  # the connection goes back to the pool, built or not
        conn.remove_notice_handler(told)
        with contextlib.suppress(psycopg.Error):  # a broken connection is not put back
            conn.execute("RESET maintenance_work_mem")
    say(f"index built in {time.monotonic() - started:.1f} s")
    return status(db, model)


def _fill(conn: Conn, model: str, dim: int, say: Progress) -> int:
    """Centre every stored vector of the model around its frozen centre, in PostgreSQL
    (float32 arithmetic, as a writer centres in numpy), FILL_BATCH at a time in text hash
    order, each batch its own transaction."""
    row = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE dim <> %s) FROM vectors WHERE model = %s",
        (dim, model),
    ).fetchone()
    total, other = (int(row[0]), int(row[1])) if row else (0, 0)
    if other:
        raise InvalidInput(f"{other:,} stored vectors of {model} do not have {dim} values")
    done, after = 0, ""
    while True:
        with conn.transaction():
            last = conn.execute(
                "WITH batch AS (SELECT text_hash FROM vectors WHERE model = %s"
                " AND text_hash > %s ORDER BY text_hash LIMIT %s),"
                " moved AS (UPDATE vectors v SET centred = l2_normalize(v.embedding::vector"
                " - (SELECT centre::vector FROM dense_centres WHERE model = %s))::halfvec"
                " FROM batch b WHERE v.model = %s AND v.text_hash = b.text_hash"
                " RETURNING v.text_hash)"
                " SELECT count(*), max(text_hash) FROM moved",
                (model, after, FILL_BATCH, model, model),
            ).fetchone()
        if last is None or not last[0]:
            return done
        done += int(last[0])
        after = str(last[1])
        say(f"centred {done:,} of {total:,} vectors")


class _Watch:
    """Report the index build's progress (pg_stat_progress_create_index) every few seconds."""

    def __init__(self, db: Database, name: str, say: Progress, every: float = 5.0) -> None:
        self.db, self.name, self.say, self.every = db, name, say, every
        self.stop = threading.Event()
        self.thread = threading.Thread(
            target=self._run, name="nexusbrain-hnsw-progress", daemon=True
        )

    def __enter__(self) -> None:
        self.thread.start()

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)

    def _run(self) -> None:
        while not self.stop.wait(self.every):
            try:
                with self.db.read() as conn:
                    row = conn.execute(
                        "SELECT phase, blocks_done, blocks_total, tuples_done"
                        " FROM pg_stat_progress_create_index WHERE relid = to_regclass('vectors')"
                    ).fetchone()
            except Exception:  # progress is a courtesy: never fail the build over it
                return
            if row is not None:
                phase, blocks, of, rows = row
                counted = f", {blocks / of:.0%} of the table read, {rows:,} rows" if of else ""
                self.say(f"building: {phase}{counted}")


def drop(db: Database, model: str) -> DenseStatus:
    """Drop the model's HNSW index and its frozen centre: replicas opened after this use
    their in-process index. The centred column stays (it costs a little space, and a build
    again would refill it)."""
    before = status(db, model)
    if before.rows is None:
        raise NotFound(f"no dense index is built for {model}")
    with db.errors("could not drop the dense index"), db.connection() as conn:
        conn.execute(
            sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(
                sql.Identifier(index_name(model))
            )
        )
        with conn.transaction():
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (_lock_key(model),)
            )
            conn.execute("DELETE FROM dense_centres WHERE model = %s", (model,))
            conn.execute("UPDATE vectors SET centred = NULL WHERE model = %s", (model,))
    return status(db, model)


class PgvectorIndex:
    """A `DenseIndex` whose rows stay in PostgreSQL: search reads HNSW_EF_SEARCH candidates from
    the HNSW index (with pgvector's iterative scans, so that filters that drop most rows
    still give k) and rescores them exactly from their stored centred rows."""

    def __init__(self, db: Database, model: str, dim: int, ef_search: int = HNSW_EF_SEARCH) -> None:
        self.db, self.model, self.dim, self.ef_search = db, model, dim, ef_search
        self._centre = np.zeros(dim, np.float32)
        self._built_at: str | None = None
        self._checked = 0.0
        self._sync(force=True)

    def _sync(self, *, force: bool = False) -> None:
        """Read the frozen centre again if it may have changed (a build again, by anyone):
        at most once a second."""
        now = time.monotonic()
        if not force and now - self._checked < 1.0:
            return
        with self.db.read("could not read the dense index's centre") as conn:
            row = conn.execute(
                "SELECT centre, built_at::text FROM dense_centres WHERE model = %s", (self.model,)
            ).fetchone()
        self._checked = now
        if row is None:
            if self._built_at is not None:
                log.warning(
                    "the HNSW index of %s was dropped: dense search finds nothing in this"
                    " process until it is started again (it then keeps its own index)",
                    self.model,
                )
            self._built_at = None
        elif row[1] != self._built_at:
            self._centre, self._built_at = np.asarray(row[0], np.float32), row[1]

    def __len__(self) -> int:
        with self.db.read() as conn:
            row = conn.execute(
                "SELECT count(*) FROM chunks c JOIN vectors v ON v.model = %s"
                " AND v.text_hash = c.text_hash AND v.centred IS NOT NULL",
                (self.model,),
            ).fetchone()
        return int(row[0]) if row else 0

    def centre(self, vector: NDArray[np.float32], at: int | None = None) -> NDArray[np.float32]:
        self._sync()  # the rows are read at search time; only the centre is kept here
        out: NDArray[np.float32] = normalise_rows(
            (vector.astype(np.float32) - self._centre)[None, :]
        )[0]
        return out

    def _rows(
        self, query: str, params: Sequence[Any], settings: dict[str, str] | None = None
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]:
        with self.db.read("dense search failed") as conn, conn.transaction():
            if settings:  # for this transaction only, in one round trip
                calls = ", ".join("set_config(%s, %s, true)" for _ in settings)
                conn.execute(f"SELECT {calls}", [x for pair in settings.items() for x in pair])
            ids, docs, half = copyout.ids_and_halfvecs(conn, query, params, self.dim)
        return ids, docs, normalise_rows(half.astype(np.float32))

    def search(
        self,
        query: NDArray[np.float32],
        k: int,
        filters: SearchFilters | None = None,
        *,
        best_per_document: bool = False,
    ) -> list[Scored]:
        if k <= 0:
            return []
        where, params = filter_sql(filters, POSTGRES) if filters is not None else ("", [])
        limit = max(self.ef_search, 4 * k if best_per_document else k)
        expression = sql.SQL("v.centred::halfvec({})").format(sql.Literal(self.dim)).as_string()
        text = (
            "SELECT c.id, c.document_id, v.centred FROM vectors v"
            " JOIN chunks c ON c.text_hash = v.text_hash"
            + (" JOIN documents d ON d.id = c.document_id" if where else "")
            + f" WHERE v.model = {sql.Literal(self.model).as_string()} AND v.centred IS NOT NULL"
            + (f" AND {where}" if where else "")
            + f" ORDER BY {expression} <#> %s::halfvec({self.dim}) LIMIT %s"
        )
        ids, docs, rows = self._rows(
            text,
            [*params, halfvec_text(query), limit],
            {
                "hnsw.ef_search": str(min(limit, 1000)),
                "hnsw.iterative_scan": "relaxed_order",
            },
        )
        scores = rows @ query.astype(np.float32)
        order = np.lexsort((ids, -scores))  # best first, ties by chunk id
        if best_per_document:
            _, first = np.unique(docs[order], return_index=True)
            order = order[np.sort(first)]
        order = order[:k]
        order = order[scores[order] > 0]  # no closer to the query than the average vector is
        if best_per_document:
            return [Scored(int(ids[i]), float(scores[i]), int(docs[i])) for i in order]
        return [Scored(int(ids[i]), float(scores[i])) for i in order]

    def _of(
        self, chunk_ids: Sequence[int], per_document: bool = False
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]:
        chosen = (
            "c.document_id IN (SELECT document_id FROM chunks WHERE id = ANY(%s))"
            if per_document
            else "c.id = ANY(%s)"
        )
        return self._rows(
            "SELECT c.id, c.document_id, v.centred FROM chunks c JOIN vectors v"
            " ON v.model = %s AND v.text_hash = c.text_hash"
            f" WHERE {chosen} AND v.centred IS NOT NULL",
            [self.model, list(chunk_ids)],
        )

    def scores(
        self, query: NDArray[np.float32], chunk_ids: Sequence[int], *, per_document: bool = False
    ) -> dict[int, float]:
        if not chunk_ids:
            return {}
        ids, docs, rows = self._of(chunk_ids, per_document)
        keys = docs if per_document else ids
        best: dict[int, float] = {}
        for key, score in zip(
            keys.tolist(), (rows @ query.astype(np.float32)).tolist(), strict=True
        ):
            if score > best.get(key, -np.inf):
                best[key] = score
        return best

    def vectors_of(self, chunk_ids: Sequence[int]) -> dict[int, NDArray[np.float32]]:
        if not chunk_ids:
            return {}
        ids, _, rows = self._of(chunk_ids)
        return {int(i): row for i, row in zip(ids.tolist(), rows, strict=True)}

    def refresh(self) -> None:
        self._sync(force=True)

    def warm(self) -> None:
        self._sync(force=True)  # the graph's pages are the database server's to keep

    def close(self) -> None:
        return None


def valid_index(db: Database, model: str, dim: int) -> bool:
    """Whether the model has a built, valid HNSW index of this dimension."""
    found = status(db, model)
    return found.built and found.dim == dim
