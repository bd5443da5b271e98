"""The PostgreSQL backend's lexical index: BM25 by storage/bm25.py's `PostingScorer`, fed from
the postings segments (postings.py) in one REPEATABLE READ snapshot.

A search reads the change head (its seq, the live chunks' count and token total), brings the
live pids up to that seq, then reads each query token's segments: a few round trips, each a
few hundredths of a millisecond over a unix socket. The scorer keeps every chunk's length by
chunk id and follows the change log, so another replica's writes show up at the next search.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg
from numpy.typing import NDArray

from nexusbrain.config import LexicalConfig
from nexusbrain.records import SearchFilters
from nexusbrain.storage.base import LexicalHits
from nexusbrain.storage.bm25 import Ids, PostingScorer
from nexusbrain.storage.postgres import copyout
from nexusbrain.storage.postgres.database import Database
from nexusbrain.storage.postgres.filters import filter_sql
from nexusbrain.storage.postgres.postings import COLUMNS, LivePids, private_map, unpacked

_HEAD = "SELECT seq, chunks, tokens FROM change_head"


class PostgresLexicalIndex:
    """A `LexicalIndex` over one brain's postings. Thread-safe."""

    def __init__(self, db: Database, config: LexicalConfig) -> None:
        self.db = db
        self.config = config
        self.live = LivePids()
        self._scorer = PostingScorer(self, config)

    def search(
        self,
        terms: Sequence[str],
        k: int,
        filters: SearchFilters,
        *,
        best_per_document: bool = False,
    ) -> LexicalHits:
        with self.db.errors(f"lexical search failed for {list(terms)[:20]!r}"):
            found = self._scorer.search(terms, k, filters, best_per_document=best_per_document)
        return LexicalHits(found)

    @contextmanager
    def read(self) -> Iterator[_Read]:
        """A read of the index in one snapshot; inside this thread's write, that write's
        view (uncommitted, so nothing of it is kept)."""
        if self.db.in_write():
            with self.db.read() as conn:
                yield _WriteRead(conn)
            return
        with self.db.snapshot() as conn:
            head = conn.execute(_HEAD).fetchone()
            assert head is not None
            self.live.sync(conn, int(head[0]))
            yield _Read(conn, int(head[0]), (int(head[1]), int(head[2])), self.live)


class _Read:
    """A `PostingsRead` inside one REPEATABLE READ snapshot."""

    cacheable = True

    def __init__(
        self, conn: psycopg.Connection[Any], seq: int, totals: tuple[int, int], live: LivePids
    ) -> None:
        self.conn = conn
        self.seq = seq
        self._totals = totals
        self._live = live

    def totals(self) -> tuple[int, int]:
        return self._totals

    def rows(self, chunk_ids: Sequence[int] | None) -> tuple[Ids, Ids, Ids]:
        sql = "SELECT id, length::bigint, document_id FROM chunks"
        if chunk_ids is None:
            found = copyout.int64_columns(self.conn, sql + " ORDER BY id", (), 3)
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
        rows = self.conn.execute(
            "SELECT pids, tfs, wide FROM postings WHERE term = %s", (token,), binary=True
        ).fetchall()
        pids, tf = unpacked(rows)
        ids, live = self._live.chunks_of(pids, self.seq)
        return _ascending(ids[live], tf[live])

    def matching(self, filters: SearchFilters) -> Ids:
        where, params = filter_sql(filters)
        rows = self.conn.execute(
            "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id"
            + (f" WHERE {where}" if where else ""),
            params,
        ).fetchall()
        return np.fromiter((r[0] for r in rows), np.int64, len(rows))


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
