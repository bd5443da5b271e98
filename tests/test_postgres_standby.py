"""Read replicas: a brain's reads go to a real hot standby (pg_basebackup -R of the embedded
server), and a process's own writes are found by its next search there (storage/postgres/
standby.py). Another process's writes show up once the standby has replayed them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from nexusbrain import Brain, storage
from nexusbrain.clock import FrozenClock
from nexusbrain.config import Profile, Settings, StorageConfig
from nexusbrain.embeddings import load_embedder
from nexusbrain.errors import ConfigError

from .pgserver import Server, fresh_schema
from .pgstandby import Standby


@pytest.fixture(scope="module")
def primary() -> Iterator[Server]:
    """A server of this module's own, committing synchronously (as PostgreSQL does by
    default), so that a standby replays each commit as soon as it is made."""
    server = Server()
    try:
        with server.connect() as conn:
            conn.execute("ALTER SYSTEM SET synchronous_commit = on")
            conn.execute("SELECT pg_reload_conf()")
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def standby(primary: Server) -> Iterator[Standby]:
    server = Standby(primary, primary.port + 1)
    try:
        yield server
    finally:
        server.close()


def _brain(url: str, read_urls: tuple[str, ...] = ()) -> Brain:
    settings = Settings(
        db=url, embedder=Profile.HASHING, storage=StorageConfig(read_urls=read_urls)
    )
    backend = storage.open(url, settings.lexical, settings.storage)
    clock = FrozenClock(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    return Brain(backend, load_embedder(Profile.HASHING), settings, clock=clock)


def _standbys(brain: Brain) -> object:
    return brain._backend.db.standbys  # type: ignore[attr-defined]


def _found(brain: Brain, query: str) -> list[str]:
    return [hit.text for hit in brain.search(query, k=5)]


def test_each_write_is_found_by_the_next_search_through_the_standby(
    primary: Server, standby: Standby
) -> None:
    url = primary.url(fresh_schema())
    with _brain(url, (standby.url(),)) as brain:
        standbys = _standbys(brain)
        for n in range(60):
            text = f"standby memory number{n} about okapi{n}"
            brain.add_memory(text)
            for mode in ("conservative", "balanced"):
                assert text in [h.text for h in brain.search(f"okapi{n}", k=5, mode=mode)]
        assert sum(standbys.served) > 120  # type: ignore[attr-defined]
        assert standbys.gave_up <= 3  # type: ignore[attr-defined]


def test_reads_come_from_the_standby_and_own_writes_wait_for_it_or_go_to_the_primary(
    primary: Server, standby: Standby
) -> None:
    url = primary.url(fresh_schema())
    with _brain(url) as other, _brain(url, (standby.url(),)) as brain:
        standbys = _standbys(brain)
        standbys.wait = 0.3  # type: ignore[attr-defined]
        brain.add_memory("the first memory is about a tapir")
        assert _found(brain, "tapir") == ["the first memory is about a tapir"]
        with standby.connect() as conn:
            conn.execute("SELECT pg_wal_replay_pause()")
            try:
                other.add_memory("another process wrote of a pangolin")
                assert _found(other, "pangolin")  # on the primary
                assert _found(brain, "pangolin") == []  # the paused standby has not got it
                before = standbys.gave_up  # type: ignore[attr-defined]
                brain.add_memory("this process wrote of a quokka")
                # not on the paused standby: a read waits its bound, then asks the primary,
                # and the reads that follow go there too (once for the write's own reads
                # after its commit, once for the search)
                assert _found(brain, "quokka") == ["this process wrote of a quokka"]
                assert before < standbys.gave_up <= before + 2  # type: ignore[attr-defined]
            finally:
                conn.execute("SELECT pg_wal_replay_resume()")
        with primary.connect() as conn:
            lsn = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        standby.wait_for(lsn)
        time.sleep(0.4)  # past the time reads go to the primary after the standby lagged
        served = sum(standbys.served)  # type: ignore[attr-defined]
        assert _found(brain, "pangolin") == ["another process wrote of a pangolin"]
        assert sum(standbys.served) > served  # type: ignore[attr-defined]


def test_a_read_url_on_another_schema_is_refused(primary: Server, standby: Standby) -> None:
    with pytest.raises(ConfigError, match="names schema 'elsewhere'"):
        _brain(primary.url("mine"), (standby.url("elsewhere"),))
