"""Hot standbys that serve a brain's reads (`BRAIN_DB_READ_URL`), with read-your-writes.

Every read outside a write transaction (searches, `get`, stats) goes to a standby that has
replayed everything this process has seen on the primary: the end of its last commit, and of
any read it had to make there. A standby behind that point is polled until it catches up,
for at most `REPLAY_WAIT` seconds; then the read goes to the primary. A standby that fails
(down, refusing us) is left alone for `DOWN_PAUSE` seconds, its reads going to the primary.
Writes, the advisory locks, migrations and the compactor stay on the primary.

So a client's own writes are found by its next search through the same process, whichever
standby serves it; another process's writes show up once the standby has replayed them
(its replication lag, milliseconds on a LAN).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from nexusbrain.errors import ConfigError
from nexusbrain.storage.postgres.url import PostgresUrl, parse_url

log = logging.getLogger(__name__)

REPLAY_WAIT = 1.0  # seconds a read waits for a standby to replay this process's writes
POLL = 0.002  # seconds between two looks at a standby's replay position
DOWN_PAUSE = 5.0  # seconds a failed standby is left alone
GET_TIMEOUT = 0.5  # seconds to wait for a pooled connection to a standby
# The WAL's page headers: a position just past one is the end of the record before it
# (PostgreSQL's XLogBytePosToRecPtr against XLogBytePosToEndRecPtr).
WAL_PAGE = 8192
SHORT_HEADER = 24
LONG_HEADER = 40
CURRENT_LSN = "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint"
REPLAY_LSN = "SELECT (coalesce(pg_last_wal_replay_lsn(), '0/0') - '0/0'::pg_lsn)::bigint"


def standby_urls(urls: Sequence[str], primary: PostgresUrl) -> list[PostgresUrl]:
    """The standbys' URLs, each on the primary's schema (a URL may leave it out, or must
    name the same one)."""
    found = []
    for url in urls:
        parsed = parse_url(url)
        named = "schema=" in url.split("?", 1)[-1]
        if named and parsed.schema != primary.schema:
            raise ConfigError(
                f"the read URL {parsed.shown} names schema {parsed.schema!r} but the brain is"
                f" {primary.schema!r}: name the same schema, or none"
            )
        found.append(PostgresUrl(parsed.conninfo, primary.schema, parsed.pool, parsed.shown))
    return found


def primary_wal(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    """The primary's WAL segment size, in bytes, and its insert position now."""
    row = conn.execute(
        "SELECT setting::bigint, (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint"
        " FROM pg_settings WHERE name = 'wal_segment_size'"
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def end_of_commit(lsn: int, segment: int) -> int:
    """The replay position a standby reaches once it holds everything up to `lsn`, a WAL
    insert position: one just past a page header stands for the record end before it."""
    if lsn % segment == LONG_HEADER:
        return lsn - LONG_HEADER
    if lsn % WAL_PAGE == SHORT_HEADER:
        return lsn - SHORT_HEADER
    return lsn


class Standbys:
    """Pools of connections to one brain's hot standbys, and this process's replay floor.
    Thread-safe."""

    def __init__(
        self,
        urls: Sequence[PostgresUrl],
        configure: Callable[[psycopg.Connection[Any]], None],
        wal: tuple[int, int],
        *,
        wait: float = REPLAY_WAIT,
    ) -> None:
        """`wal`: the primary's segment size and the position this process has seen
        (`primary_wal`: the brain's schema is there once the standby has replayed it)."""
        self.urls = list(urls)
        self.wait = wait
        self.segment = wal[0]
        self._floor = end_of_commit(wal[1], self.segment)
        self._lock = threading.Lock()
        self._turn = itertools.count()
        self._replayed = [0] * len(self.urls)
        self._down_until = [0.0] * len(self.urls)
        self.served = [0] * len(self.urls)  # reads each standby served (tests, stats)
        self.gave_up = 0  # times no standby caught up within the wait
        self._primary_until = 0.0  # till then, reads go to the primary
        self.pools: list[ConnectionPool[psycopg.Connection[Any]]] = [
            ConnectionPool(
                url.conninfo,
                kwargs={"autocommit": True, "connect_timeout": 5},
                min_size=1,
                max_size=url.pool,
                configure=configure,
                timeout=GET_TIMEOUT,
                name=f"nexusbrain-{url.schema}-standby{i}",
                open=False,
            )
            for i, url in enumerate(self.urls)
        ]
        for pool in self.pools:
            pool.open(wait=False)

    @property
    def floor(self) -> int:
        return self._floor

    def reached(self, lsn: int) -> None:
        """This process has seen the primary up to the insert position `lsn`."""
        end = end_of_commit(lsn, self.segment)
        with self._lock:
            self._floor = max(self._floor, end)

    def checkout(self) -> tuple[int, psycopg.Connection[Any]] | None:
        """A connection to a standby that has replayed this process's floor, and its
        number; None when none has within the wait (then the caller reads the primary, and
        so do the reads that follow for as long again, without waiting: one search makes
        several reads)."""
        if time.monotonic() < self._primary_until:
            return None
        floor = self._floor
        deadline = time.monotonic() + self.wait
        start = next(self._turn)
        order = [(start + i) % len(self.pools) for i in range(len(self.pools))]
        while True:
            for i in order:
                if self._down_until[i] > time.monotonic():
                    continue
                conn = self._ready(i, floor)
                if conn is not None:
                    self.served[i] += 1
                    return i, conn
            now = time.monotonic()
            if now >= deadline or not self._any_up():
                self.gave_up += 1
                self._primary_until = now + self.wait
                return None
            time.sleep(POLL)

    def _ready(self, i: int, floor: int) -> psycopg.Connection[Any] | None:
        try:
            conn = self.pools[i].getconn()
        except (PoolTimeout, psycopg.Error) as exc:
            self._failed(i, exc)
            return None
        if self._replayed[i] >= floor:
            return conn
        try:
            row = conn.execute(REPLAY_LSN).fetchone()
        except psycopg.Error as exc:
            self.pools[i].putconn(conn)
            self._failed(i, exc)
            return None
        self._replayed[i] = max(self._replayed[i], int(row[0]) if row else 0)
        if self._replayed[i] >= floor:
            return conn
        self.pools[i].putconn(conn)
        return None

    def giveback(self, i: int, conn: psycopg.Connection[Any], *, failed: bool) -> None:
        self.pools[i].putconn(conn)
        if failed:
            self._failed(i, None)

    def _failed(self, i: int, exc: BaseException | None) -> None:
        log.warning("standby %s is left alone for %g s: %s", self.urls[i].shown, DOWN_PAUSE, exc)
        self._down_until[i] = time.monotonic() + DOWN_PAUSE

    def _any_up(self) -> bool:
        now = time.monotonic()
        return any(until <= now for until in self._down_until)

    def close(self) -> None:
        for pool in self.pools:
            pool.close()
