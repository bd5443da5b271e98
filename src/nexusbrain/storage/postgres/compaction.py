"""Size-tiered compaction of the postings segments, in the background.

Each write adds a segment per token it holds, so a common token gathers one segment per write
and a search reads them all. The compactor merges a token's segments of one tier (log base
`FANOUT` of their posting count) once there are `FANOUT` of them, dropping the postings of
chunks that are gone. It looks only at tokens that gained a segment since its last pass, and
one compactor works at a time per brain (an advisory lock), whichever replica it runs in.
Writers never wait for it: they only insert new segments, and readers keep their snapshot.

At 101k chunks written in batches of 50 documents, segments reached 400 for a token and
search p95 went from 2.0 ms (compacted) to 5.3 ms (not) (docs/design/postgres.md).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import errors as pg

from nexusbrain.errors import StorageError
from nexusbrain.storage.postgres.database import Database
from nexusbrain.storage.postgres.postings import (
    POSTINGS_COPY,
    LivePids,
    copy_stream,
    merged,
    segment_row,
)

log = logging.getLogger(__name__)

FANOUT = 8
TERMS_PER_PASS = 2_000
_TIER = "floor(ln(greatest(n, 1)) / ln(%s))::int"


@dataclass(frozen=True, slots=True)
class Pass:
    merged: int  # tokens whose segments were merged
    read: int  # postings read
    written: int  # postings written


class Compactor:
    """Merges postings segments on a daemon thread, a pass every `interval` seconds when
    segments were added (by any replica)."""

    def __init__(self, db: Database, live: LivePids, interval: float = 1.0) -> None:
        self.db = db
        self.live = live
        self.interval = interval
        self._seen = 0  # segments up to this one have been considered
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="nexusbrain-compactor", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.compact()
            except StorageError as exc:  # the server is down, say: the next pass retries
                log.warning("postings compaction skipped: %s", exc.message)

    def compact(self) -> Pass:
        """One pass (more when a pass hits its limit), until no tier is full."""
        total = Pass(0, 0, 0)
        while True:
            with self.db.errors("postings compaction failed"), self.db.connection() as conn:
                done = self._pass(conn)
            if done is None:
                return total
            total = Pass(*(a + b for a, b in zip(_tuple(total), _tuple(done), strict=True)))
            if done.merged < TERMS_PER_PASS:
                return total

    def _pass(self, conn: psycopg.Connection[Any]) -> Pass | None:
        top = conn.execute("SELECT last_value FROM postings_segments").fetchone()
        latest = int(top[0]) if top else 0
        if latest <= self._seen:
            return None
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        try:
            found = self._merge_all(conn)
            conn.execute("COMMIT")
        except pg.SerializationFailure:  # another compactor got there first
            conn.execute("ROLLBACK")
            return None
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        if found is None:
            return None
        if found.merged < TERMS_PER_PASS:
            self._seen = latest
        return found

    def _merge_all(self, conn: psycopg.Connection[Any]) -> Pass | None:
        key = f"nexusbrain:{self.db.url.schema}:compact"
        locked = conn.execute(
            "SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))", (key,)
        ).fetchone()
        if not locked or not locked[0]:
            return None
        head = conn.execute("SELECT seq FROM change_head").fetchone()
        seq = int(head[0]) if head else 0
        self.live.sync(conn, seq)
        todo = conn.execute(
            f"SELECT term, tier FROM (SELECT term, {_TIER} AS tier FROM postings WHERE term IN"
            " (SELECT term FROM postings WHERE segment > %s)) AS t"
            " GROUP BY term, tier HAVING count(*) >= %s LIMIT %s",
            (FANOUT, self._seen, FANOUT, TERMS_PER_PASS),
        ).fetchall()
        read = written = 0
        for term, tier in todo:
            rows = conn.execute(
                f"SELECT segment, pids, tfs, wide FROM postings WHERE term = %s AND {_TIER} = %s",
                (term, FANOUT, tier),
                binary=True,
            ).fetchall()
            pids, tf = merged([(r[1], r[2], r[3]) for r in rows], self.live, seq)
            read += sum(len(bytes(r[1])) // 4 for r in rows)
            written += len(pids)
            conn.execute(
                "DELETE FROM postings WHERE term = %s AND segment = ANY(%s)",
                (term, [r[0] for r in rows]),
            )
            if len(pids):
                segment = conn.execute("SELECT nextval('postings_segments')").fetchone()
                assert segment is not None
                with conn.cursor() as cursor, cursor.copy(POSTINGS_COPY) as copy:
                    copy.write(copy_stream([segment_row(term, int(segment[0]), pids, tf)]))
        return Pass(len(todo), read, written)


def _tuple(p: Pass) -> tuple[int, int, int]:
    return p.merged, p.read, p.written
