"""The PostgreSQL backend's lexical index: BM25 by storage/bm25.py's `PostingScorer`, fed from
the postings segments (postings.py) in one REPEATABLE READ snapshot.

A search sends, in one round trip (a pipeline), the start of its snapshot, the change head
(its seq, the live chunks' count and token total), the change log since the live pids were
last brought up to date, and the segments of every query token the scorer has not cached;
then it commits. The scorer keeps every chunk's length by chunk id and follows the change
log, so another replica's writes show up at the next search. On a loaded 2-core machine each
round trip costs about a millisecond, so their number is what a search pays for.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg
from numpy.typing import NDArray

from nexusbrain.config import LexicalConfig
from nexusbrain.records import SearchFilters
from nexusbrain.storage.analyzer import query_tokens
from nexusbrain.storage.bm25 import Ids, PostingScorer
from nexusbrain.storage.postgres import copyout
from nexusbrain.storage.postgres.database import Database
from nexusbrain.storage.postgres.dialect import POSTGRES
from nexusbrain.storage.postgres.postings import COLUMNS, LivePids, private_map, unpacked
from nexusbrain.storage.sql.filters import chunk_ids

_HEAD = "SELECT seq, chunks, tokens FROM change_head"


class PostgresLexicalIndex(PostingScorer):
    """A `LexicalIndex` over one brain's postings. Thread-safe."""

    def __init__(self, db: Database, config: LexicalConfig) -> None:
        super().__init__(config)
        self.db = db
        self.live = LivePids()
        self._local = threading.local()  # the tokens the search on this thread will read

    @contextmanager
    def _failing(self, terms: Sequence[str], what: str) -> Iterator[None]:
        self._local.tokens = list(query_tokens(terms))
        try:
            with self.db.errors(f"lexical {what} failed for {list(terms)[:20]!r}"):
                yield
        finally:
            self._local.tokens = []

    @contextmanager
    def read(self) -> Iterator[_Read]:
        """A read of the index in one snapshot; inside this thread's write, that write's
        view (uncommitted, so nothing of it is kept)."""
        if self.db.in_write():
            with self.db.read() as conn:
                yield _WriteRead(conn)
            return
        if self.live.seq < 0:  # the first read loads every live pid
            with self.db.snapshot() as conn:
                head = conn.execute(_HEAD).fetchone()
                assert head is not None
                self.live.sync(conn, int(head[0]))
                yield _Read(conn, int(head[0]), (int(head[1]), int(head[2])), self.live)
            return
        with self.db.errors("lexical search failed"), self.db.read_only() as conn:
            yield self._begin(conn)

    def _begin(self, conn: psycopg.Connection[Any]) -> _Read:
        """The snapshot's start, its head, the new changes and the uncached tokens' postings,
        in one round trip."""
        known = self.live.seq
        cached_seq, cached = self.cached()
        if cached_seq != known:  # a change since: the cache will not serve this read
            cached = frozenset()
        wanted = [t for t in getattr(self._local, "tokens", []) if t not in cached]
        with conn.pipeline():
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            head_rows = conn.execute(_HEAD)
            changes = conn.execute(
                "SELECT pid, chunk_id, added, seq FROM chunk_changes WHERE seq > %s ORDER BY seq",
                (known,),
            )
            postings = conn.execute(
                "SELECT term, pids, tfs, wide FROM postings WHERE term = ANY(%s)",
                (wanted,),
                binary=True,
            )
        head = head_rows.fetchone()
        assert head is not None
        self.live.apply(changes.fetchall(), int(head[0]))
        ahead: dict[str, list[tuple[bytes, bytes, bool]]] = {t: [] for t in wanted}
        for term, pids, tfs, wide in postings.fetchall():
            ahead[term].append((pids, tfs, wide))
        totals = (int(head[1]), int(head[2]))
        return _Read(conn, int(head[0]), totals, self.live, ahead)


class _Read:
    """A `PostingsRead` inside one REPEATABLE READ snapshot."""

    cacheable = True

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        seq: int,
        totals: tuple[int, int],
        live: LivePids,
        ahead: dict[str, list[tuple[bytes, bytes, bool]]] | None = None,
    ) -> None:
        self.conn = conn
        self.seq = seq
        self._totals = totals
        self._live = live
        self._ahead = ahead or {}  # token -> its segments, read with the snapshot's start

    def totals(self) -> tuple[int, int]:
        return self._totals

    def rows(self, chunk_ids: Sequence[int] | None) -> tuple[Ids, Ids, Ids]:
        sql = "SELECT id, length::bigint, document_id FROM chunks"
        if chunk_ids is None:
            found = copyout.int64_columns(self.conn, sql, (), 3)
        else:
            found = copyout.int64_columns(
                self.conn, sql + " WHERE id = ANY(%s)", (list(chunk_ids),), 3
            )
        return found[0], found[1], found[2]

    def added_since(self, seq: int) -> list[int]:
        rows = self.conn.execute(
            "SELECT chunk_id, added FROM chunk_changes WHERE seq > %s AND seq <= %s ORDER BY seq",
            (seq, self.seq),
        ).fetchall()
        state: dict[int, bool] = {}
        for chunk_id, added in rows:
            state[chunk_id] = added
        return [chunk for chunk, live in state.items() if live]

    def postings(self, token: str) -> tuple[Ids, NDArray[np.float64]]:
        rows = self._ahead.get(token)
        if rows is None:
            rows = self.conn.execute(
                "SELECT pids, tfs, wide FROM postings WHERE term = %s", (token,), binary=True
            ).fetchall()
        pids, tf = unpacked(rows)
        ids, live = self._live.chunks_of(pids, self.seq)
        return _ascending(ids[live], tf[live])

    def matching(self, filters: SearchFilters) -> Ids:
        found = chunk_ids(self.conn, filters, POSTGRES)
        return np.fromiter(found, np.int64, len(found))


class _WriteRead(_Read):
    """A read inside a write that may yet roll back: the live chunks as the write sees them
    (every chunk counts as added since any change), and nothing is kept past it."""

    cacheable = False

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        row = conn.execute("SELECT count(*), coalesce(sum(length), 0) FROM chunks").fetchone()
        assert row is not None
        seq = np.iinfo(np.int64).max - 1
        super().__init__(conn, seq, (int(row[0]), int(row[1])), private_map(conn))

    def added_since(self, seq: int) -> list[int]:
        return [int(r[0]) for r in self.conn.execute("SELECT id FROM chunks").fetchall()]


def _ascending(ids: Ids, tf: NDArray[np.int64]) -> tuple[Ids, NDArray[np.float64]]:
    if len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        order = np.argsort(ids, kind="stable")
        ids, tf = ids[order], tf[order]
    return ids, tf.astype(np.float64).reshape(-1, COLUMNS)
