"""Faults with PostgreSQL: `kill -9` of one replica during ingest while the other answers
(2 trials by default, 20 marked slow), PostgreSQL restarted under load, and the one-line
errors for a wrong URL, a missing `vector` extension, a server too old, a missing extra."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from nexusbrain.brain import Brain
from nexusbrain.cli.main import cli
from nexusbrain.config import Profile, Settings

from ..pgserver import Server, fresh_schema
from ..postgres_checks import database_checks
from .replicas import Replica, edge_checks


class Load:
    """Writers and readers against replicas, recording every answer."""

    def __init__(self, writer_url: str, reader_url: str, tag: str) -> None:
        self.writer_url, self.reader_url, self.tag = writer_url, reader_url, tag
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.acknowledged: list[tuple[str, str]] = []  # (kind, uri or text) of every 200
        self.writes: Counter[int] = Counter()
        self.reads: Counter[int] = Counter()
        self.failures: list[dict[str, Any]] = []
        self.threads = [threading.Thread(target=self._write, args=(w,)) for w in range(3)]
        self.threads.append(threading.Thread(target=self._read))

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=120)

    def wait_for_writes(self, seconds: float = 60) -> None:
        """Until a note and a memory have been acknowledged."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with self.lock:
                if {kind for kind, _ in self.acknowledged} == {"note", "memory"}:
                    return
            time.sleep(0.01)
        raise AssertionError(f"no note and memory acknowledged in {seconds} s: {self.failures[:3]}")

    def _write(self, worker: int) -> None:
        with httpx.Client(base_url=self.writer_url, timeout=30) as http:
            i = 0
            while not self.stop.is_set():
                i += 1
                try:
                    if i % 3 == 0:
                        text = f"{self.tag} worker {worker} memory {i}"
                        kind, key, response = "memory", text, http.post("/add", json={"text": text})
                    else:
                        uri = f"notes/{self.tag}-w{worker}-{i}.md"
                        body = {
                            "title": f"{self.tag} {worker} {i}",
                            "uri": uri,
                            "content": f"# T\n\nLinks [[Hub {i % 5}]] and [[Hub {i % 3}]].",
                        }
                        kind, key = "note", uri
                        response = http.post("/ingest/markdown", json=body)
                except httpx.HTTPError:
                    if self.writer_url != self.reader_url:
                        return  # the writers' replica is gone
                    time.sleep(0.05)
                    continue
                with self.lock:
                    self.writes[response.status_code] += 1
                    if response.status_code == 200:
                        self.acknowledged.append((kind, key))
                    else:
                        self.failures.append(response.json())

    def _read(self) -> None:
        with httpx.Client(base_url=self.reader_url, timeout=30) as http:
            while not self.stop.is_set():
                response = http.get("/search", params={"q": "hub links", "k": 5})
                with self.lock:
                    self.reads[response.status_code] += 1
                    if response.status_code != 200:
                        self.failures.append(response.json())


def _all_there(url: str, acknowledged: list[tuple[str, str]]) -> None:
    """Every acknowledged write present, the note edges as their notes state, the database's
    checks, and every chunk with its vector after one embedding pass."""
    with Brain.open(settings=Settings(db=url, embedder=Profile.HASHING)) as brain:
        records = list(brain.admin.export())
        brain.admin.embed_missing()
        assert brain.admin.embed_missing() == 0
    uris = {r["uri"] for r in records if r["type"] == "document" and not r["deleted_at"]}
    texts = {r["content"] for r in records if r["type"] == "document"}
    notes = [key for kind, key in acknowledged if kind == "note"]
    memories = [key for kind, key in acknowledged if kind == "memory"]
    assert notes and memories
    assert [u for u in notes if u not in uris] == []
    assert [t for t in memories if t not in texts] == []
    edge_checks(records)


def replica_kill_trials(
    postgres: Server, tmp_path: Path, trials: int, seed: int, *, hnsw: bool = False
) -> None:
    rng = random.Random(seed)
    schema = fresh_schema()
    url = postgres.url(schema)
    acknowledged: list[tuple[str, str]] = []
    if hnsw:  # the replicas then search pgvector's index, and every writer centres its rows
        with Brain.open(settings=Settings(db=url, embedder=Profile.HASHING)) as brain:
            brain.add_memory("a first memory, so that the index has rows to be built over")
            assert brain.admin.build_dense_index(m=16, ef_construction=64)["built"] is True
    with Replica(url, tmp_path / "survivor.log") as survivor:
        for trial in range(trials):
            doomed = Replica(url, tmp_path / f"doomed-{trial}.log")
            with Load(doomed.url, survivor.url, f"t{trial}") as load:
                load.wait_for_writes()  # so that the kill falls during ingest, however slow
                time.sleep(rng.uniform(0.0, 2.0))
                doomed.kill()
                time.sleep(0.5)  # the survivor keeps answering after the kill
            assert load.writes[200] > 0, load.failures[:3]
            assert set(load.reads) == {200}, load.failures[:3]
            acknowledged += load.acknowledged
            with postgres.connect() as conn:
                database_checks(conn, schema)
    _all_there(url, acknowledged)


@pytest.mark.long
def test_kill_9_of_one_replica_during_ingest(postgres: Server, tmp_path: Path) -> None:
    replica_kill_trials(postgres, tmp_path, trials=2, seed=3)


@pytest.mark.long
def test_kill_9_of_one_replica_during_ingest_with_an_hnsw_index(
    postgres: Server, tmp_path: Path
) -> None:
    replica_kill_trials(postgres, tmp_path, trials=2, seed=5, hnsw=True)


@pytest.mark.slow
def test_kill_9_of_one_replica_during_ingest_20_times(postgres: Server, tmp_path: Path) -> None:
    replica_kill_trials(postgres, tmp_path, trials=20, seed=13)


@pytest.fixture
def own_server() -> Iterator[Server]:
    """A PostgreSQL server of this test's own (it is stopped and started)."""
    server = Server()
    try:
        yield server
    finally:
        server.close()


@pytest.mark.long
def test_postgres_restarted_under_load(own_server: Server, tmp_path: Path) -> None:
    url = own_server.url()
    with (
        Replica(url, tmp_path / "replica.log") as replica,
        Load(replica.url, replica.url, "restart") as load,
    ):
        time.sleep(1.0)
        own_server.stop("fast")
        time.sleep(2.0)
        with replica.client() as http:
            down = http.get("/health")
            detailed = http.get("/stats")
        assert down.status_code == 503 and down.headers["Retry-After"]
        own_server.start()
        deadline = time.monotonic() + 30
        with replica.client() as http:
            while http.get("/health").status_code != 200:
                assert time.monotonic() < deadline, "no recovery"
                time.sleep(0.1)
        before = load.writes[200] + load.reads[200]
        time.sleep(2.0)
        assert load.writes[200] + load.reads[200] > before  # answering again, not restarted
    assert set(load.writes) | set(load.reads) <= {200, 503}, load.failures[:5]
    assert load.writes[503] + load.reads[503] > 0
    # /health is open to anyone: it names no URL nor socket (issue 35.6); the rest explain
    assert down.json() == {"error": {"code": "unavailable", "message": "unavailable"}}
    error = detailed.json()["error"]
    assert detailed.status_code == 503 and error["code"] == "unavailable"
    assert all(f["error"]["code"] in ("unavailable", "busy") for f in load.failures)
    assert "PostgreSQL" in error["message"] and "does not answer" in error["message"]
    assert "retry" in error["message"]
    _all_there(url, load.acknowledged)
    with own_server.connect() as conn:
        database_checks(conn, url.rsplit("schema=", 1)[1])


def _error(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def test_a_wrong_url_is_one_line_naming_the_fix(postgres: Server) -> None:
    nowhere = "postgresql://postgres@/postgres?host=/no/such/folder&schema=x"
    assert "check the host and port in the URL" in _error("--db", nowhere, "stats")
    missing = postgres.url(database="no_such_db")
    assert "create the database (createdb NAME)" in _error("--db", missing, "stats")
    stranger = postgres.url().replace("postgres@", "stranger@")
    assert "check the user and password in the URL" in _error("--db", stranger, "stats")
    assert "postgresql://user@host/database" in _error("--db", "mysql://u@h/d", "stats")
    assert "schema=team_a" in _error("--db", postgres.url("Bad-Name"), "stats")


def test_a_missing_vector_extension_is_one_line_naming_the_fix(postgres: Server) -> None:
    name = fresh_schema()
    with postgres.connect() as conn:
        conn.execute(f"CREATE DATABASE {name}")
        conn.execute(f"CREATE ROLE {name} LOGIN")
        conn.execute(f"ALTER DATABASE {name} OWNER TO {name}")
    url = postgres.url(database=name).replace("postgres@", f"{name}@")
    message = _error("--db", url, "add", "the first memory")
    assert "lacks the pgvector extension and this user may not create it" in message
    assert "CREATE EXTENSION vector;" in message
    with postgres.connect(name) as conn:  # the fix, as a superuser
        conn.execute("CREATE EXTENSION vector")
    with Brain.open(settings=Settings(db=url, embedder=Profile.HASHING)) as brain:
        assert brain.stats().store.documents == 0


def test_a_server_too_old_is_named_with_the_fix() -> None:
    from nexusbrain.storage.postgres.database import MIN_SERVER, server_too_old

    assert MIN_SERVER == 150000
    message = server_too_old(140011, "postgresql://db.lan/brains")
    assert "version 14.11" in message and "needs PostgreSQL 15 or later" in message
    assert "\n" not in message


def test_without_the_extra_the_error_names_the_install() -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from nexusbrain.cli.main import cli\n"
        "cli(['--db', 'postgresql://u@h/d', 'stats'], prog_name='nexusbrain')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert done.returncode == 1
    assert "pip install 'nexusbrain[postgres]'" in done.stderr.decode()
