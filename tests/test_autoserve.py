"""The server a read starts in the background (cli/autoserve.py): real `nexusbrain` processes,
the real detached server they start on loopback, its discovery file and its idle exit. Every
test stops the servers it starts, and the `brain_db` fixture fails a test that leaves one."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from nexusbrain import discovery
from nexusbrain.brain import Brain
from nexusbrain.cli.answers import READS
from nexusbrain.config import Profile, Settings
from nexusbrain.environment import autoserve_idle
from nexusbrain.errors import ConfigError
from nexusbrain.operations import OPERATIONS

from .conftest import background_servers, no_background_server
from .test_cli_client import HEAVY, PYTHON, Run, cli_process, environment, heavy, start, stop
from .test_readme import REWRITE, VARYING, console_steps, rewrite_console
from .test_readme_warm import demo_notes

STARTED = re.compile(
    r"nexusbrain: started a server for (?P<db>\S+) at (?P<url>http://127\.0\.0\.1:\d+) "
    r"\(pid (?P<pid>\d+)\); the next commands use it, and it stops after (?P<idle>.+?) "
    r"without one \(log: (?P<log>\S+); BRAIN_AUTOSERVE=0 or --local: no server\)\n"
)
QUERY = ("search", "signing key", "-k", "1")
ON = {"BRAIN_AUTOSERVE": "1", "BRAIN_AUTOSERVE_IDLE": "60", "BRAIN_EMBEDDER": "hashing"}


@pytest.fixture
def brain_db(tmp_path: Path) -> Iterator[Path]:
    """A brain with two notes; no background server for it may outlive the test."""
    db = tmp_path / "brain.db"
    with Brain.open(settings=Settings(db=db, embedder=Profile.HASHING)) as brain:
        brain.add_memory("the signing key is in the vault")
        brain.add_memory("backups run nightly to the NAS")
    yield db
    no_background_server(tmp_path)


def read(db: Path, *args: str, **env: str) -> Run:
    """A read as its own process, with background servers on (idle a minute unless told)."""
    return cli_process(*(args or QUERY), db=db, cwd=None, **(ON | env))


def serving(db: Path, pid: int) -> discovery.ServerInfo:
    """The discovery file once it names `pid` (the background server has started)."""
    deadline = time.monotonic() + 60
    while (info := discovery.find(db)) is None or info.pid != pid:
        assert psutil.pid_exists(pid), (db.parent / "brain.db.server.log").read_text()
        assert time.monotonic() < deadline, "the background server did not start"
        time.sleep(0.05)
    return info


def stop_background(db: Path) -> None:
    """Stop the background servers of this brain, and wait until they are gone."""
    servers = background_servers(db.parent)
    for process in servers:
        process.send_signal(signal.SIGTERM)
    _, alive = psutil.wait_procs(servers, timeout=30)
    assert not alive


def test_a_read_starts_a_server_that_the_next_reads_use(brain_db: Path) -> None:
    local = cli_process("--local", *QUERY, db=brain_db, BRAIN_EMBEDDER="hashing")
    try:
        first = read(brain_db)
        said = STARTED.fullmatch(first.stderr)
        assert said is not None, first.stderr
        assert first.code == 0 and first.stdout == local.stdout  # answered in process
        assert said["db"] == str(brain_db) and said["idle"] == "1 min"
        assert said["log"] == f"{brain_db}.server.log"
        info = serving(brain_db, int(said["pid"]))
        assert info.url == said["url"] and info.idle_exit == 60.0
        for _ in range(3):
            later = read(brain_db)
            assert later.code == 0 and later.stdout == local.stdout
            assert later.stderr == ""  # said once, by the read that started it
            # answered by the server: no brain loaded here, nor the code that starts servers
            assert heavy(later.modules, (*HEAVY, "nexusbrain.cli.autoserve")) == []
        assert len(background_servers(brain_db.parent)) == 1
    finally:
        stop_background(brain_db)
    assert discovery.find(brain_db) is None


def test_the_read_answers_before_it_starts_the_server(brain_db: Path) -> None:
    """Started sooner, the server's start-up would take the cores that the answer needs: on
    one stream, the answer comes first, then the line that says where the server lives."""
    done = subprocess.run(
        [PYTHON, "-m", "nexusbrain", "--db", str(brain_db), *QUERY],
        env=environment(**ON),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=120,
    )
    try:
        printed = done.stdout.decode()
        said = STARTED.search(printed)
        assert done.returncode == 0 and said is not None, printed
        assert "the signing key is in the vault" in printed[: said.start()]
        assert printed.endswith(said.group(0))
        serving(brain_db, int(said["pid"]))
    finally:
        stop_background(brain_db)


def test_the_server_stops_after_its_idle_time(brain_db: Path) -> None:
    try:
        first = read(brain_db, BRAIN_AUTOSERVE_IDLE="3")
        said = STARTED.fullmatch(first.stderr)
        assert said is not None, first.stderr
        assert said["idle"] == "3 s"
        serving(brain_db, int(said["pid"]))
        assert read(brain_db, BRAIN_AUTOSERVE_IDLE="3").stderr == ""  # a request: idle again
        server = psutil.Process(int(said["pid"]))
        started = time.monotonic()
        server.wait(timeout=30)
        assert time.monotonic() - started >= 2  # not before its idle time
    finally:
        stop_background(brain_db)
    assert not discovery.discovery_path(brain_db).exists()  # type: ignore[union-attr]
    log = Path(said["log"]).read_text(encoding="utf-8")
    assert "no request for 3 s: stopping" in log


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("--local", *QUERY), {}),
        (QUERY, {"BRAIN_AUTOSERVE": "0"}),
        (("add", "a write is no read"), {}),
        (("delete", "2"), {}),
    ],
    ids=["--local", "BRAIN_AUTOSERVE=0", "add", "delete"],
)
def test_no_server_when_turned_off_or_for_a_write(
    brain_db: Path, args: tuple[str, ...], env: dict[str, str]
) -> None:
    done = read(brain_db, *args, **env)
    assert done.code == 0, done.stderr
    assert "started a server" not in done.stderr
    assert background_servers(brain_db.parent) == []
    assert not discovery.discovery_path(brain_db).exists()  # type: ignore[union-attr]


def test_the_reads_are_the_commands_that_read() -> None:
    commands = {op.cli.name for op in OPERATIONS if op.name in READS and op.cli is not None}
    assert commands == {
        "search",
        "recall",
        "explain",
        "get",
        "stats",
        "graph relations",
        "graph history",
        "graph traverse",
    }
    assert not any(op.stores for op in OPERATIONS if op.name in READS)


def test_no_server_for_a_read_only_brain(brain_db: Path) -> None:
    os.chmod(brain_db, 0o444)
    try:
        done = read(brain_db)
    finally:
        os.chmod(brain_db, 0o644)
    assert done.code == 0 and b"the signing key is in the vault" in done.stdout
    assert done.stderr == ""
    assert background_servers(brain_db.parent) == []


def test_no_server_for_a_brain_another_process_serves_or_is_about_to(brain_db: Path) -> None:
    served = start(brain_db, "--workers", "1")
    try:
        done = read(brain_db)
        assert done.code == 0 and done.stderr == "" and heavy(done.modules) == []
    finally:
        stop(served)
    claim = discovery.claim(brain_db)  # a server starting: claimed, not yet announced
    try:
        done = read(brain_db)
        assert done.code == 0 and done.stderr == ""
        assert "numpy" in done.modules  # answered in process
    finally:
        assert claim is not None
        claim.close()
    assert background_servers(brain_db.parent) == []


def test_a_server_started_by_hand_replaces_the_background_one(brain_db: Path) -> None:
    try:
        said = STARTED.fullmatch(read(brain_db).stderr)
        assert said is not None
        background = psutil.Process(int(said["pid"]))
        serving(brain_db, background.pid)
        by_hand = start(brain_db, "--workers", "1")
        try:
            background.wait(timeout=30)
            info = discovery.find(brain_db)
            assert info is not None and info.pid == by_hand.pid and info.idle_exit is None
            done = read(brain_db)
            assert done.code == 0 and done.stderr == "" and heavy(done.modules) == []
        finally:
            assert stop(by_hand).startswith(b"nexusbrain ")
    finally:
        stop_background(brain_db)


def test_reads_at_once_start_one_server(brain_db: Path) -> None:
    runs: list[Run] = []
    readers = [threading.Thread(target=lambda: runs.append(read(brain_db))) for _ in range(3)]
    try:
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join()
        assert all(run.code == 0 for run in runs), [run.stderr for run in runs]
        # the first to take the claim starts the server; the others find the claim held
        [pid] = [int(m["pid"]) for run in runs if (m := STARTED.fullmatch(run.stderr))]
        assert [run.stderr for run in runs].count("") == 2
        serving(brain_db, pid)
        assert [p.pid for p in background_servers(brain_db.parent)] == [pid]
    finally:
        stop_background(brain_db)


PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
SESSION = PAGE.read_text(encoding="utf-8").split("\n### Warm from the second call\n")[1]
BLOCK = re.search(r"```console\n(.*?)```", SESSION, re.S).group(1)  # type: ignore[union-attr]
DEMO = "/tmp/demo"  # the folder the block was run in
# what differs from run to run: the port and pid of the server, and how long an ingest took
VARIES = [(re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT"), (re.compile(r"pid \d+"), "pid N")]


def masked(lines: list[str], folder: Path) -> list[str]:
    lines = [VARYING.sub("…", line.replace(str(folder), DEMO)) for line in lines]
    for pattern, mask in VARIES:
        lines = [pattern.sub(mask, line) for line in lines]
    return lines


def test_the_docs_session_prints_what_it_shows(tmp_path: Path) -> None:
    """docs/cli.md's session, run for real: what each command prints on stderr, then stdout."""
    demo_notes(tmp_path)
    env = environment(BRAIN_AUTOSERVE="1", BRAIN_EMBEDDER="edge")
    written: list[tuple[str, list[str], list[str]]] = []
    try:
        for command, shown in console_steps(BLOCK):
            done = subprocess.run(
                [PYTHON, "-m", "nexusbrain", *shlex.split(command)[1:]],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
            printed = (done.stderr + done.stdout).decode().splitlines()
            if REWRITE:
                written.append((command, shown, [x.replace(str(tmp_path), DEMO) for x in printed]))
            else:
                assert masked(printed, tmp_path) == masked(shown, tmp_path), command
            if said := STARTED.search(done.stderr.decode() + "\n"):
                serving(tmp_path / "brain.db", int(said["pid"]))  # the next command asks it
    finally:
        stop_background(tmp_path / "brain.db")
        no_background_server(tmp_path)
    if REWRITE:
        rewrite_console(PAGE, written)


def test_the_idle_time_and_the_switch_come_from_the_environment() -> None:
    assert autoserve_idle({}) == 900.0
    assert autoserve_idle({"BRAIN_AUTOSERVE_IDLE": "30"}) == 30.0
    for off in ("0", "false", "off", "no"):
        assert autoserve_idle({"BRAIN_AUTOSERVE": off, "BRAIN_AUTOSERVE_IDLE": "x"}) is None
    for bad in ("x", "0", "-5", "inf", "nan"):
        with pytest.raises(ConfigError, match=f"BRAIN_AUTOSERVE_IDLE='{bad}' is not a number"):
            autoserve_idle({"BRAIN_AUTOSERVE_IDLE": bad})
