"""Connections to one brain's schema: a pool, transactions, and what each failure means.

Every connection runs with `search_path` set to the brain's schema (then the schema holding
pgvector) and `TimeZone` UTC. Autocommit is the default, so a read outside a transaction sees
the latest commit; `write()` is one transaction that first takes the brain's advisory lock, so
that writes to one brain are serialised across every replica as SQLite serialises them in one
file (the graph reads what it decides on, then writes); `snapshot()` is a read-only REPEATABLE
READ transaction. Both bind their connection to the calling thread, so that every read the
thread makes inside them sees what they see. With hot standbys (standby.py), reads outside a
write go to one that has replayed this process's writes.
"""

from __future__ import annotations

import logging
import select
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
from psycopg import errors as pg
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolTimeout

from nexusbrain.config import StorageConfig
from nexusbrain.errors import (
    BrainError,
    Busy,
    ConfigError,
    Full,
    InvalidInput,
    StorageError,
    Unavailable,
)
from nexusbrain.storage.postgres.dialect import POSTGRES, PostgresDialect
from nexusbrain.storage.postgres.standby import CURRENT_LSN, Standbys
from nexusbrain.storage.postgres.url import PostgresUrl

log = logging.getLogger(__name__)
Query = tuple[str, Sequence[Any]]  # a statement and its parameters

CONNECT_TIMEOUT = 5  # seconds, unless the URL gives connect_timeout
POOL_TIMEOUT = 5.0  # seconds to wait for a free connection, then Busy
DOWN_TIMEOUT = 0.05  # the wait, while the server was last seen down: then a direct attempt
PROBE_TIMEOUT = 2  # seconds for that attempt
WAIT_SLICE = 0.25  # seconds: how soon a wait for a pooled connection notices the server went
MIN_SERVER = 150000  # PostgreSQL 15
MIN_VECTOR = (0, 7, 0)  # halfvec


class Database:
    """The pool of connections to one brain's schema. Thread-safe."""

    def __init__(
        self,
        url: PostgresUrl,
        config: StorageConfig,
        vector: tuple[tuple[int, ...], str],
        standbys: Sequence[PostgresUrl] = (),
        wal: tuple[int, int] = (0, 0),
    ) -> None:
        """`vector`: pgvector's version and schema in the database (`ensure_vector`);
        `standbys`: hot standbys of it, for reads, and `wal` the primary's (`primary_wal`)."""
        self.url = url
        self.config = config
        self._local = threading.local()
        self.write_key = f"nexusbrain:{url.schema}:write"
        self.vector_version, self.vector_schema = vector
        self._search_path = sql.SQL("SET search_path TO {}, {}").format(
            sql.Identifier(url.schema), sql.Identifier(self.vector_schema)
        )
        self.pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            url.conninfo,
            kwargs=_connect_kwargs(url),
            min_size=1,
            max_size=url.pool,
            configure=self._configure,
            check=self._check,
            timeout=POOL_TIMEOUT,
            name=f"nexusbrain-{url.schema}",
            open=False,
        )
        self.pool.open(wait=False)
        self._healthy = True
        self.standbys = Standbys(standbys, self._configure, wal) if standbys else None
        self._ender: ThreadPoolExecutor | None = None  # ends read-only transactions
        self._ender_lock = threading.Lock()

    @property
    def dialect(self) -> PostgresDialect:
        return POSTGRES

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute(self._search_path)
        conn.execute("SET TimeZone TO 'UTC'")

    # connections and transactions

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection from the pool. While the server is down the pool reconnects with a
        growing backoff, so then a request waits a moment only and tries a connection of its
        own: it fails at once with the server's reason (Unavailable), and once the server is
        back it works at once, before the pool has caught up."""
        conn = self._pooled()
        if conn is None:
            conn = self._direct()
            try:
                yield conn
            finally:
                conn.close()
            return
        self._healthy = True
        try:
            yield conn
        finally:
            self.pool.putconn(conn)

    def _pooled(self) -> psycopg.Connection[Any] | None:
        """A pooled connection within POOL_TIMEOUT, in slices, so that a failed check of a
        pooled connection (the server went down) ends the wait at once."""
        deadline = time.monotonic() + (POOL_TIMEOUT if self._healthy else DOWN_TIMEOUT)
        while True:
            left = deadline - time.monotonic()
            try:
                return self.pool.getconn(max(min(left, WAIT_SLICE), 0.001))
            except PoolTimeout:
                if not self._healthy or time.monotonic() >= deadline:
                    return None

    def _check(self, conn: psycopg.Connection[Any]) -> None:
        """Before a pooled connection is handed out: an idle connection has nothing to read
        unless the server closed it (a restart, a terminated backend), so only then does a
        round trip decide. A round trip for every check cost a millisecond a request on a
        loaded 2-core machine, several per search."""
        if conn.closed or conn.broken:
            raise psycopg.OperationalError("the connection is closed")
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
        if not readable:
            return
        try:
            ConnectionPool.check_connection(conn)
        except psycopg.Error:
            self._healthy = False
            raise

    def _direct(self) -> psycopg.Connection[Any]:
        """A connection of this request's own, when the pool has none to give."""
        was_healthy, self._healthy = self._healthy, False
        try:
            conn = psycopg.connect(
                self.url.conninfo, autocommit=True, connect_timeout=PROBE_TIMEOUT
            )
        except psycopg.Error as exc:
            raise _NoConnection(
                f"PostgreSQL at {self.url.shown} does not answer ({_one_line(exc)}); nothing was"
                " changed: retry once it is back (nexusbrain reconnects by itself)"
            ) from None
        if was_healthy:  # the server answers: every pooled connection is in use
            conn.close()
            self._healthy = True
            raise _PoolFull(
                f"all {self.url.pool} connections to PostgreSQL at {self.url.shown} stayed in"
                f" use for {POOL_TIMEOUT:g} s; nothing was changed: retry, or raise ?pool= in"
                " the URL (and the server's max_connections)"
            )
        self._configure(conn)
        return conn

    def bound(self) -> psycopg.Connection[Any] | None:
        """The connection of the transaction this thread is inside, if any."""
        conn: psycopg.Connection[Any] | None = getattr(self._local, "conn", None)
        return conn

    def in_write(self) -> bool:
        return bool(getattr(self._local, "writing", False))

    @contextmanager
    def read(self, what: str = "database read failed") -> Iterator[psycopg.Connection[Any]]:
        """A connection for reads: the thread's transaction's, else one from the pool
        (autocommit: each statement sees the latest commit)."""
        bound = self.bound()
        if bound is not None:
            yield bound
            return
        with self.errors(what), self.reader() as conn:
            yield conn

    @contextmanager
    def reader(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection for reads outside a transaction: a standby's that has replayed what
        this process has seen, else the primary's. After a read on the primary, the
        standbys must replay what it may have seen, so that no later read sees less."""
        conn, release, _ = self._checkout()
        failed = False
        try:
            yield conn
        except psycopg.OperationalError:
            failed = conn.broken or conn.closed
            raise
        finally:
            release(failed)

    @contextmanager
    def read_only(self) -> Iterator[psycopg.Connection[Any]]:
        """A reader's connection for one read-only transaction that the caller begins. Its
        COMMIT, which changes nothing, is sent by a background thread, which then gives the
        connection back: the caller does not wait a round trip for it (a search ends two
        such reads). On an error the transaction is rolled back here."""
        conn, release, deferrable = self._checkout()
        try:
            yield conn
        except BaseException as exc:
            _rollback(conn)
            release(isinstance(exc, psycopg.OperationalError) and (conn.broken or conn.closed))
            raise
        if not deferrable:  # the floor must rise before the next read
            _rollback(conn)
            release(False)
            return
        with self._ender_lock:
            if self._ender is None:
                self._ender = ThreadPoolExecutor(2, thread_name_prefix="nexusbrain-commit")
            self._ender.submit(_end_read, conn, release)

    def _checkout(
        self,
    ) -> tuple[psycopg.Connection[Any], Callable[[bool], None], bool]:
        """A connection for reads (`reader`), the function that gives it back (told whether
        the connection failed), and whether it may be given back from another thread."""
        standbys = self.standbys
        chosen = standbys.checkout() if standbys is not None else None
        if chosen is not None:
            assert standbys is not None
            number, conn = chosen
            return conn, lambda failed: standbys.giveback(number, conn, failed=failed), True
        pooled = self._pooled()
        if pooled is None:
            direct = self._direct()
            return direct, lambda failed: direct.close(), True
        self._healthy = True

        def release(failed: bool) -> None:
            try:
                if standbys is not None and not failed and not pooled.closed:
                    self._reached(pooled)
            finally:
                self.pool.putconn(pooled)

        return pooled, release, standbys is None

    def _reached(self, conn: psycopg.Connection[Any]) -> None:
        """Note the primary's WAL position, on a connection outside a transaction, as seen."""
        if self.standbys is not None:
            row = conn.execute(CURRENT_LSN).fetchone()
            assert row is not None
            self.standbys.reached(int(row[0]))

    @contextmanager
    def write(
        self, what: str = "database write failed", *, deferred: bool = False
    ) -> Iterator[psycopg.Connection[Any]]:
        """One write transaction, bound to this thread, holding the brain's write lock (a
        writer waits for it up to the busy timeout, then Busy). Committed when the block ends
        without an error; on any error nothing is changed. A write inside a write joins it.

        With `deferred`, the connection comes with no transaction yet, so that work needing
        no lock (what a write computes from its input, a sequence's next values, rows no other
        writer can touch) is done before the lock is taken: `begin(conn)` then takes it (and
        `begin(conn, lock=False)` begins the transaction alone), and a write inside a write
        takes it too."""
        if self.in_write():
            bound = self.bound()
            assert bound is not None
            self.begin(bound)
            yield bound
            return
        with self.errors(what), self.connection() as conn:
            self._local.conn, self._local.writing = conn, True
            self._local.begun = self._local.locked = False
            self._local.last = []
            try:
                if not deferred:
                    self.begin(conn)
                yield conn
                if self._local.begun:
                    self._commit(conn)
            except BaseException:
                _rollback(conn)
                raise
            finally:
                self._local.conn, self._local.writing = None, False
                self._local.begun = self._local.locked = False
                self._local.last = []

    def _commit(self, conn: psycopg.Connection[Any]) -> None:
        last: list[Query] = getattr(self._local, "last", [])
        self._local.last = []
        if self.standbys is None and not last:
            conn.execute("COMMIT")
            return
        with conn.pipeline():
            for query, params in last:
                conn.execute(query, params)
            conn.execute("COMMIT")
            found = None if self.standbys is None else conn.execute(CURRENT_LSN)
        if found is None or self.standbys is None:
            return
        row = found.fetchone()
        assert row is not None
        self.standbys.reached(int(row[0]))

    @contextmanager
    def own_write(self, what: str) -> Iterator[psycopg.Connection[Any]]:
        """A transaction of its own that takes no write lock (a capture, a note of vector
        coverage): writers of the brain's content do not wait for it, nor it for them."""
        bound = self.bound()
        if bound is not None:
            with bound.transaction():
                yield bound
            return
        with self.errors(what), self.connection() as conn:
            with conn.transaction():
                yield conn
            self._reached(conn)

    def begin(
        self, conn: psycopg.Connection[Any], *, lock: bool = True, then: Query | None = None
    ) -> psycopg.Cursor[Any] | None:
        """Begin this thread's write transaction unless it has begun, and take the brain's
        write lock (with `lock`) unless it is held. `then`: a statement to send after, in
        the same round trip; its cursor is returned."""
        begun = getattr(self._local, "begun", False)
        if begun and (not lock or getattr(self._local, "locked", False)):
            return None if then is None else conn.execute(*then)
        timeout = f"{int(self.config.busy_timeout_ms)}ms"
        with conn.pipeline():
            if not begun:
                conn.execute("BEGIN")
                conn.execute("SELECT set_config('lock_timeout', %s, true)", (timeout,))
            if lock:
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (self.write_key,)
                )
            cursor = None if then is None else conn.execute(*then)
        self._local.begun = True
        self._local.locked = lock
        return cursor

    def at_commit(self, statements: Sequence[Query]) -> None:
        """Statements to send, in order, in the round trip of this thread's write
        transaction's COMMIT (inside a write inside a write: the outer one's)."""
        last: list[Query] = getattr(self._local, "last", [])
        self._local.last = last + list(statements)

    @contextmanager
    def snapshot(self, what: str = "database read failed") -> Iterator[psycopg.Connection[Any]]:
        """A read-only REPEATABLE READ transaction bound to this thread: every read inside
        sees one state. Inside another transaction, that one."""
        bound = self.bound()
        if bound is not None:
            yield bound
            return
        with self.errors(what), self.reader() as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            self._local.conn = conn
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise
            finally:
                self._local.conn = None

    @contextmanager
    def errors(self, what: str) -> Iterator[None]:
        """psycopg's and the pool's errors as nexusbrain's (Busy, Unavailable, Full...)."""
        try:
            yield
        except (psycopg.Error, PoolTimeout) as exc:
            error = classified(exc, what, self.url.shown)
            if isinstance(error, Unavailable):
                self._healthy = False
            raise error from exc
        except _NoConnection as exc:
            raise Unavailable(f"{what}: {exc.message}") from None
        except _PoolFull as exc:
            raise Busy(f"{what}: {exc.message}") from None

    def ping(self) -> None:
        """Unavailable unless the primary answers now."""
        with self.errors("the database does not answer"), self.connection() as conn:
            conn.execute("SELECT 1")

    def close(self) -> None:
        if self._ender is not None:
            self._ender.shutdown(wait=True)
        if self.standbys is not None:
            self.standbys.close()
        self.pool.close()


class _NoConnection(Unavailable):
    """No connection could be made (named by `Database.errors` with what failed)."""


class _PoolFull(Busy):
    """Every pooled connection stayed in use (named by `Database.errors`)."""


def _end_read(conn: psycopg.Connection[Any], release: Callable[[bool], None]) -> None:
    """End a read-only transaction and give its connection back (in the background)."""
    failed = False
    try:
        conn.execute("COMMIT")
    except psycopg.Error:
        failed = True  # nothing to lose: the read changed nothing; a broken one is dropped
    finally:
        release(failed or conn.broken or conn.closed)


def _rollback(conn: psycopg.Connection[Any]) -> None:
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        with suppress(psycopg.Error):  # a lost connection rolled back by itself
            conn.execute("ROLLBACK")


def _connect_kwargs(url: PostgresUrl) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"autocommit": True}
    if "connect_timeout" not in url.conninfo:
        kwargs["connect_timeout"] = CONNECT_TIMEOUT
    return kwargs


def connect(url: PostgresUrl) -> psycopg.Connection[Any]:
    """One connection outside the pool (migrations, checks). StorageError naming the fix when
    the server cannot be reached or refuses us; ConfigError for a server too old."""
    try:
        conn = psycopg.connect(url.conninfo, **_connect_kwargs(url))
    except psycopg.Error as exc:
        raise StorageError(f"cannot open the brain at {url.shown}: {_why_not(exc)}") from None
    version = conn.info.server_version
    if version < MIN_SERVER:
        conn.close()
        raise ConfigError(server_too_old(version, url.shown))
    return conn


def server_too_old(version: int, where: str) -> str:
    shown = f"{version // 10000}.{version % 10000}" if version >= 100000 else str(version)
    return (
        f"the PostgreSQL server at {where} is version {shown}: nexusbrain needs PostgreSQL 15"
        " or later; upgrade the server or point --db at a newer one"
    )


def ensure_vector(conn: psycopg.Connection[Any], url: PostgresUrl) -> tuple[tuple[int, ...], str]:
    """pgvector's version and schema in this database, creating the extension if it is
    missing and this role may. ConfigError naming the fix otherwise."""
    found = _vector(conn)
    if found is None:
        try:
            with conn.transaction():
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended('nexusbrain:extension', 0))"
                )
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error as exc:
            raise ConfigError(missing_vector(exc, url)) from None
        found = _vector(conn)
        assert found is not None
    version, schema = found
    if version < MIN_VECTOR:
        raise ConfigError(
            f"pgvector {'.'.join(map(str, version))} in {url.shown} is too old: nexusbrain needs"
            " 0.7 or later (halfvec); as its owner run: ALTER EXTENSION vector UPDATE"
        )
    return version, schema


def _vector(conn: psycopg.Connection[Any]) -> tuple[tuple[int, ...], str] | None:
    row = conn.execute(
        "SELECT extversion, extnamespace::regnamespace::text FROM pg_extension"
        " WHERE extname = 'vector'"
    ).fetchone()
    if row is None:
        return None
    numbers = tuple(int(p) for p in str(row[0]).split(".") if p.isdigit())
    return numbers, str(row[1]).strip('"')


def missing_vector(exc: psycopg.Error, url: PostgresUrl) -> str:
    where = f"database {url.database!r} at {url.shown}"
    if isinstance(exc, pg.InsufficientPrivilege):
        return (
            f"{where} lacks the pgvector extension and this user may not create it: as a"
            f" superuser, connect to it and run: CREATE EXTENSION vector;"
        )
    if isinstance(exc, pg.FeatureNotSupported | pg.UndefinedFile):
        return (
            f"the PostgreSQL server of {where} has no pgvector: install it on the server"
            " (https://github.com/pgvector/pgvector#installation; on a managed service,"
            " enable its 'vector' extension), then open the brain again"
        )
    return f"cannot create the pgvector extension in {where}: {_one_line(exc)}"


def _why_not(exc: psycopg.Error) -> str:
    """Why a connection failed, in one line, with the fix."""
    text = _one_line(exc)
    lowered = text.lower()
    if "does not exist" in lowered and "database" in lowered:
        return f"{text}: create the database (createdb NAME) or fix its name in the URL"
    if ("role" in lowered and "does not exist" in lowered) or "password authentication" in lowered:
        return f"{text}: check the user and password in the URL"
    if "resolve host" in lowered or "name or service not known" in lowered:
        return f"{text}: check the host name in the URL"
    if "refused" in lowered or "no such file or directory" in lowered:
        return f"{text}: is PostgreSQL running there? check the host and port in the URL"
    if "timeout" in lowered or "timed out" in lowered:
        return f"{text}: the server did not answer; check the host, port and firewall"
    return text


def _one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return " ".join(lines).removeprefix("connection failed: ")


def classified(exc: psycopg.Error | PoolTimeout, what: str, where: str) -> BrainError:
    """The nexusbrain error for a failed database operation; in every case nothing was
    changed (a failed transaction is rolled back)."""
    if isinstance(exc, PoolTimeout):
        return Unavailable(
            f"{what}: no connection to PostgreSQL at {where} within {POOL_TIMEOUT:g} s (the"
            " server is down or restarting, or every connection is in use); nothing was"
            " changed: retry"
        )
    if isinstance(exc, pg.LockNotAvailable | pg.DeadlockDetected | pg.SerializationFailure):
        return Busy(
            f"{what}: another writer held the brain too long ({_one_line(exc)}); nothing was"
            " changed, try again"
        )
    if isinstance(exc, pg.DiskFull | pg.OutOfMemory | pg.ProgramLimitExceeded):
        return Full(
            f"{what}: the database server is out of space ({_one_line(exc)}); nothing was"
            " changed: free some space on it"
        )
    if isinstance(exc, pg.ReadOnlySqlTransaction):
        return StorageError(
            f"{what}: {where} is read-only (a standby?); nothing was changed: point the"
            " brain at the primary server"
        )
    if isinstance(exc, pg.InsufficientPrivilege):
        return StorageError(
            f"{what}: this user lacks a privilege on the brain's schema ({_one_line(exc)});"
            " nothing was changed: grant it, or use the schema's owner"
        )
    if isinstance(exc, psycopg.DataError) and "NUL" in str(exc):
        return InvalidInput(
            f"{what}: PostgreSQL text cannot hold the NUL character (U+0000); remove it"
        )
    if _lost(exc):
        return Unavailable(
            f"{what}: the connection to PostgreSQL at {where} was lost ({_one_line(exc)});"
            " nothing was changed: retry once the server is back"
        )
    return StorageError(f"{what}, nothing was changed: {_one_line(exc)}")


def _lost(exc: psycopg.Error) -> bool:
    """A connection that failed, or a server shutting down or starting up."""
    if isinstance(exc, pg.AdminShutdown | pg.CrashShutdown | pg.CannotConnectNow):
        return True
    return isinstance(exc, psycopg.OperationalError) and exc.sqlstate is None
