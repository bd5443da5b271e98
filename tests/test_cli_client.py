"""The command line with a server running for its brain: a real `nexusbrain serve` process,
found through its discovery file, and real `nexusbrain` processes that print byte for byte
what the in-process path (--local) prints, without importing the brain's heavy parts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from nexusbrain import discovery
from nexusbrain.brain import Brain
from nexusbrain.cli.main import cli
from nexusbrain.config import Profile, Settings

PYTHON = sys.executable
# Modules the fast path must never import: the brain's numerics, model, web framework, MCP.
HEAVY = (
    "numpy",
    "tokenizers",
    "safetensors",
    "fastapi",
    "starlette",
    "uvicorn",
    "pydantic",
    "mcp",
    "psutil",
    "sqlite3",
    "nexusbrain.brain",
    "nexusbrain.storage",
    "nexusbrain.views",
    "nexusbrain.config",  # its settings are dataclasses, compiled at import (environment.py)
)
NOTES = {
    "deploy.md": "# Deploy\n\nThe deploy failed: the signing key expired.\n\n## Fix\n\n"
    "Rotate the key in the vault, then [[Vault]] redeploys.\n",
    "vault.md": "---\nrelations:\n  - stores: signing key\n---\n# Vault\n\n"
    "The vault holds the signing key and the api tokens.\n",
    "ops/oncall.md": "# Oncall\n\nAlice is on call this week; Bob the next.\n",
}


@dataclass
class Served:
    db: Path
    notes: Path
    process: subprocess.Popen[bytes]
    url: str


def environment(**extra: str) -> dict[str, str]:
    """This process's environment without its BRAIN_ settings, on the hashing embedder and
    with no server started in the background (cli/autoserve.py), then `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    return env | {"BRAIN_EMBEDDER": "hashing", "BRAIN_AUTOSERVE": "0"} | extra


def start(db: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """`nexusbrain serve` on a free port, once its discovery file names it."""
    process = subprocess.Popen(
        [PYTHON, "-m", "nexusbrain", "--db", str(db), "serve", "--port", "0", *args],
        env=env or environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    # read the file once a turn: a server handing over (autoserve) may remove it between reads
    while (found := discovery.find(db)) is None or found.pid != process.pid:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"serve did not start: {process.communicate()[1].decode()}")
        time.sleep(0.05)
    return process


def stop(process: subprocess.Popen[bytes]) -> bytes:
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=30)
    return out


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("served")
    notes = root / "notes"
    for name, text in NOTES.items():
        (notes / name).parent.mkdir(parents=True, exist_ok=True)
        (notes / name).write_text(text, encoding="utf-8")
    db = root / "brain.db"
    with Brain.open(settings=Settings(db=db, embedder=Profile.HASHING)) as brain:
        brain.ingest_dir(notes)
        brain.add_memory("Alice prefers tea in the morning", tags=("people",))
        brain.admin.refresh_index()
    cli_local("graph", "add", "alice", "manages", "bob", "--valid-at", "2020-01-01", db=db)
    cli_local("graph", "add", "bob", "manages", "carol", db=db)
    cli_local("graph", "add", "alice", "manages", "bob", "--valid-at", "2021-01-01", db=db)
    process = start(db)
    info = discovery.find(db)
    assert info is not None
    yield Served(db, notes, process, info.url)
    stop(process)
    assert discovery.discovery_path(db) is not None
    assert not discovery.discovery_path(db).exists()  # type: ignore[union-attr]


def cli_local(*args: str, db: Path, cwd: Path | None = None) -> click.testing.Result:
    """The command in this process, with --local."""
    os.environ["BRAIN_EMBEDDER"] = "hashing"
    try:
        here = Path.cwd()
        os.chdir(cwd or here)
        return CliRunner().invoke(cli, ["--local", "--db", str(db), *args])
    finally:
        os.chdir(here)
        del os.environ["BRAIN_EMBEDDER"]


@dataclass
class Run:
    code: int
    stdout: bytes
    stderr: str
    modules: set[str]


def cli_process(*args: str, db: Path | None, cwd: Path | None = None, **env: str) -> Run:
    """The command as its own process, with the modules it imported (-X importtime)."""
    chosen = ["--db", str(db)] if db is not None else []
    done = subprocess.run(
        [PYTHON, "-X", "importtime", "-m", "nexusbrain", *chosen, *args],
        env=environment(**({"BRAIN_EMBEDDER": "edge"} | env)),  # edge: only if in process
        capture_output=True,
        cwd=cwd,
        timeout=60,
    )
    lines = done.stderr.decode().splitlines()
    modules = {line.split("|")[-1].strip() for line in lines if line.startswith("import time:")}
    stderr = "".join(f"{line}\n" for line in lines if not line.startswith("import time:"))
    return Run(done.returncode, done.stdout, stderr, modules)


def heavy(modules: set[str], names: tuple[str, ...] = HEAVY) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in names))


COMMANDS = [
    ("search", "signing key"),
    ("search", "signing key", "--json"),
    ("search", "signing key", "--explain", "-k", "2"),
    ("search", "key", "--mode", "tokenmax", "--domain", "default", "--best-per-document"),
    ("search", "who is on call", "--path-prefix", "/nowhere", "--json"),
    ("search", "key", "--mode", "conservative", "--document", "1", "--json"),
    ("search", " "),
    ("recall", "what holds the signing key"),
    ("recall", "signing key", "--budget", "40", "--mode", "tokenmax", "--json"),
    ("explain", "signing key", "notes/vault.md"),
    ("explain", "signing key", "2", "--json", "--mode", "conservative"),
    ("explain", "key", "notes/deploy.md", "--best-per-document", "--path-prefix", "/"),
    ("explain", "signing key", "nothing.md"),
    ("get", "1"),
    ("get", "notes/deploy.md", "--chunks", "--json"),
    ("get", "notes/deploy.md", "--lines", "3-5"),
    ("get", "memory:none"),
    ("get", "999"),
    ("add", "Alice prefers tea in the morning", "--tag", "people"),
    ("add", "", "--json"),
    ("graph", "relations", "--from", "alice"),
    ("graph", "relations", "--from", "alice", "--as-of-valid", "2020-06-01", "--json"),
    ("graph", "relations", "--to", "bob", "--type", "manages", "--json"),
    ("graph", "history", "1"),
    ("graph", "history", "1", "--json"),
    ("graph", "history", "99"),
    ("graph", "traverse", "alice", "--depth", "2"),
    ("graph", "traverse", "alice", "--depth", "2", "--json"),
    ("graph", "traverse", "nobody"),
    ("graph", "add", "carol", "works_at", "Globex", "--dry-run"),
    ("graph", "add", "carol", "works_at", "Globex", "--dry-run", "--json"),
    ("graph", "add", "alice", "manages", "bob", "--valid-at", "2021-01-01", "--json"),
    ("stats",),
]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_command_prints_the_same_from_the_server_and_in_process(
    served: Served, args: tuple[str, ...]
) -> None:
    remote = cli_process(*args, db=served.db, cwd=served.db.parent)
    local = cli_local(*args, db=served.db, cwd=served.db.parent)
    assert heavy(remote.modules) == [], "the fast path loaded the brain"
    assert remote.code == local.exit_code
    # the memory use is the answering process's own; a graph write is stamped with its time
    varies = {"stats": b"rss_bytes", "graph": b'  "at": '}.get(args[0])
    if varies is not None:
        assert _without(varies, remote.stdout) == _without(varies, local.stdout_bytes)
    else:
        assert remote.stdout == local.stdout_bytes
    assert remote.stderr == local.stderr


def _without(varies: bytes, output: bytes) -> list[bytes]:
    return [line for line in output.splitlines() if varies not in line]


def test_stats_json_is_the_same_but_for_the_memory_use(served: Served) -> None:
    remote = json.loads(cli_process("stats", "--json", db=served.db).stdout)
    local = json.loads(cli_local("stats", "--json", db=served.db).output)
    assert remote.pop("rss_bytes") > 0 and local.pop("rss_bytes") > 0
    assert remote == local


def test_brain_url_names_the_server_and_local_works_in_process(served: Served) -> None:
    by_url = cli_process("search", "signing key", "--json", db=None, BRAIN_URL=served.url + "/")
    assert by_url.code == 0 and heavy(by_url.modules) == []
    assert json.loads(by_url.stdout)["hits"][0]["uri"].endswith("deploy.md")
    local = cli_process("--local", "search", "signing key", db=served.db, BRAIN_EMBEDDER="hashing")
    assert local.code == 0 and "numpy" in local.modules


# What a search in process has no use for: writes, the graph, explain, stats, the server, and
# the HTTP client of model servers (a brain on the shipped models asks none).
NOT_FOR_SEARCH = (
    "yaml",
    "httpx",
    "psutil",
    "fastapi",
    "uvicorn",
    "mcp",
    "nexusbrain.ingest",
    "nexusbrain.graph",
    "nexusbrain.retrieval.explain",
    "nexusbrain.captures",
    "nexusbrain.api",
)


def test_a_search_in_process_loads_only_what_a_search_needs(served: Served) -> None:
    for args in (("search", "signing key", "--json"), ("recall", "signing key")):
        run = cli_process("--local", *args, db=served.db, BRAIN_EMBEDDER="hashing")
        assert run.code == 0, run.stderr
        assert heavy(run.modules, NOT_FOR_SEARCH) == []


def test_an_unreachable_brain_url_is_an_error_naming_it(tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{_closed_port()}"
    result = cli_process("search", "x", db=None, BRAIN_URL=closed)
    assert result.code == 1
    assert result.stderr.startswith(f"error: nothing answers at BRAIN_URL={closed}")
    bad = cli_process("search", "x", db=None, BRAIN_URL="127.0.0.1:8765")
    assert bad.code == 1 and "BRAIN_URL='127.0.0.1:8765' is not a server address" in bad.stderr


def test_a_stale_discovery_file_is_ignored(tmp_path: Path) -> None:
    db = tmp_path / "stale.db"
    with Brain.open(settings=Settings(db=db, embedder=Profile.HASHING)) as brain:
        brain.add_memory("the staging database moved to db-2")
    path = discovery.discovery_path(db)
    assert path is not None
    dead = subprocess.run([PYTHON, "-c", "import os; print(os.getpid())"], capture_output=True)
    for pid, url in ((int(dead.stdout), "http://127.0.0.1:9"), (os.getpid(), _closed_url())):
        record = {"url": url, "pid": pid, "db": str(db), "token_path": None}
        path.write_text(json.dumps(record))
        result = cli_process("search", "staging", db=db, BRAIN_EMBEDDER="hashing")
        assert result.code == 0, result.stderr
        assert b"db-2" in result.stdout and "numpy" in result.modules  # in process


def test_a_token_server_writes_its_token_for_its_owner_alone(tmp_path: Path) -> None:
    db = tmp_path / "guarded.db"
    with Brain.open(settings=Settings(db=db, embedder=Profile.HASHING)) as brain:
        brain.add_memory("the deploy key rotates every 90 days")
    process = start(db, env=environment(BRAIN_API_TOKEN="s3cret-token"))
    try:
        info = discovery.find(db)
        assert info is not None and info.token_path is not None
        assert os.stat(info.token_path).st_mode & 0o777 == 0o600
        assert info.token() == "s3cret-token"
        result = cli_process("search", "deploy key", "--json", db=db)
        assert result.code == 0 and heavy(result.modules) == []
        assert json.loads(result.stdout)["hits"][0]["text"].startswith("the deploy key")
    finally:
        out = stop(process)
    assert not Path(info.token_path).exists()
    assert discovery.find(db) is None
    assert f"API docs  {info.url}/docs" in out.decode()


def test_serve_says_where_its_ui_docs_and_mcp_are(tmp_path: Path) -> None:
    db = tmp_path / "where.db"
    process = start(db, "--mcp")
    url = discovery.find(db).url  # type: ignore[union-attr]
    out = stop(process).decode().splitlines()
    assert out[0].endswith(f"serving {db} at {url}")
    assert out[1:4] == [
        f"  web UI    {url}/app",
        f"  API docs  {url}/docs",
        f"  MCP       {url}/mcp",
    ]


def test_a_second_server_on_the_same_port_is_a_one_line_error(
    served: Served, tmp_path: Path
) -> None:
    # another brain: a second server on the same brain is refused before it binds
    # (tests/test_discovery.py)
    port = served.url.rsplit(":", 1)[1]
    result = subprocess.run(
        [PYTHON, "-m", "nexusbrain", "--db", str(tmp_path / "other.db"), "serve", "--port", port],
        env=environment(),
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.decode().startswith(f"error: cannot listen on 127.0.0.1:{port}")
    assert discovery.find(served.db).pid == served.process.pid  # type: ignore[union-attr]


def _closed_port() -> int:
    from .conftest import free_port

    return free_port()


def _closed_url() -> str:
    return f"http://127.0.0.1:{_closed_port()}"


@pytest.mark.parametrize("ref", ["~nobody-here/notes.md", "n" * 5_000])
def test_a_ref_that_cannot_be_a_path_here_is_not_found_from_the_server(
    served: Served, ref: str
) -> None:
    result = cli_process("get", ref, db=served.db)
    assert result.code == 1 and heavy(result.modules) == []
    assert result.stderr.startswith("error: no document with uri or path"), result.stderr
