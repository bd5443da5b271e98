"""Brains kept apart by the database: `brains create` makes a schema and a role that can touch
only it (storage/postgres/brains.py). One brain's role cannot read or change another's tables,
and two brains' writes do not wait for each other."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from nexusbrain import Brain
from nexusbrain.cli.main import cli
from nexusbrain.config import Profile, Settings, StorageConfig
from nexusbrain.errors import Busy, StorageError
from nexusbrain.storage.postgres.url import parse_url

from .pgserver import Server, fresh_schema

psycopg = pytest.importorskip("psycopg")


def _create(admin: str, name: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["brains", "create", name, "--db", admin, "--json"])
    assert result.exit_code == 0, result.output
    made: dict[str, Any] = json.loads(result.output)
    return made


@pytest.fixture
def two(postgres: Server) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    admin = postgres.url()
    names = (fresh_schema(), fresh_schema())
    made = (_create(admin, names[0]), _create(admin, names[1]))
    yield made
    with postgres.connect() as conn:
        for name in names:
            conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
            conn.execute(f"DROP OWNED BY {name}")
            conn.execute(f"DROP ROLE {name}")


def _brain(url: str, busy_ms: int = 10_000) -> Brain:
    storage = StorageConfig(busy_timeout_ms=busy_ms)
    return Brain.open(settings=Settings(db=url, embedder=Profile.HASHING, storage=storage))


def test_a_brain_made_for_a_role_is_its_alone(
    postgres: Server, two: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    a, b = two
    assert a["role"] == a["schema"] and f"schema={a['schema']}" in a["url"]
    with _brain(a["url"]) as brain_a, _brain(b["url"]) as brain_b:
        brain_a.add_memory("team a keeps the heron secret")
        brain_b.add_memory("team b keeps the marmot secret")
        assert [h.text for h in brain_a.search("heron")] == ["team a keeps the heron secret"]
        assert brain_a.search("marmot") == []
    with psycopg.connect(parse_url(a["url"]).conninfo) as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == a["role"]
        for statement in (
            f"SELECT text FROM {b['schema']}.chunks",
            f"SELECT count(*) FROM {b['schema']}.documents",
            f"INSERT INTO {b['schema']}.captures DEFAULT VALUES",
            f"CREATE TABLE {b['schema']}.mine (x int)",
            f"DROP TABLE {b['schema']}.chunks",
            "CREATE SCHEMA elsewhere",
            "CREATE TABLE public.mine (x int)",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
            conn.rollback()
        own = conn.execute(f"SELECT text FROM {a['schema']}.chunks").fetchall()
        assert own == [("team a keeps the heron secret",)]
    # and through nexusbrain: a's role on b's schema is refused, naming the privilege
    wrong = a["url"].replace(f"schema={a['schema']}", f"schema={b['schema']}")
    with pytest.raises(StorageError, match="lacks a privilege on schema"):
        _brain(wrong).close()


def test_brains_create_refuses_a_name_taken(
    postgres: Server, two: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    result = CliRunner().invoke(cli, ["brains", "create", two[0]["schema"], "--db", postgres.url()])
    assert result.exit_code == 1 and "exists already" in result.output
    result = CliRunner().invoke(cli, ["brains", "create", "Bad-Name", "--db", postgres.url()])
    assert result.exit_code == 1 and "schema='Bad-Name'" in result.output


def test_two_brains_writes_do_not_wait_for_each_other(
    two: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    a, b = two
    held = threading.Event()
    release = threading.Event()
    with _brain(a["url"], busy_ms=300) as brain_a, _brain(b["url"]) as brain_b:
        brain_a.add_memory("a first memory in a")
        db_a = brain_a._backend.db  # type: ignore[attr-defined]

        def hold_a() -> None:  # a writer of brain a that holds its write lock
            with db_a.write():
                held.set()
                release.wait(30)

        holder = threading.Thread(target=hold_a)
        holder.start()
        try:
            assert held.wait(30)
            with pytest.raises(Busy):  # a's next writer waits for the lock, then gives up
                brain_a.add_memory("a second memory in a")
            started = time.monotonic()
            for n in range(5):
                brain_b.add_memory(f"memory {n} of b, written while a is held")
            assert time.monotonic() - started < 5
        finally:
            release.set()
            holder.join(30)
        assert len(brain_b.search("written while a is held", k=10)) == 5
