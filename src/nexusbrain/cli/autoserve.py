"""A server the command line starts by itself, in the background, the way build daemons do.

A command that reads (search, recall, explain, get, stats, graph's reads) and finds no server
for its brain starts one, detached, answers its own call in process, and says on stderr where
the server lives; the commands after it find the server through the discovery file
(discovery.py) and send it one request each. The server stops after BRAIN_AUTOSERVE_IDLE
seconds without a request (15 minutes by default), and a server started by hand replaces it.

It starts only for a SQLite file that exists and may be written (the server writes its
discovery file beside it), and that no process serves or is starting to serve (the claim's
lock is free); never with BRAIN_AUTOSERVE=0 or --local. It runs as `python -m
nexusbrain.cli.autoserve DB PORT IDLE`: one worker on loopback, its log in `<db>.server.log`.
"""

from __future__ import annotations

import os
import socket
import stat
import sys
from pathlib import Path

import click

from nexusbrain import discovery
from nexusbrain.environment import autoserve_idle, resolve_db

HOST = "127.0.0.1"
LOG_SUFFIX = ".server.log"


def start(db: str | None) -> int | None:
    """Start a server for this command's brain, if it should have one; its pid."""
    idle = autoserve_idle()
    if idle is None:
        return None
    file = discovery.database_file(resolve_db(db))
    if file is None or not _writable(file) or discovery.claimed(file):
        return None
    port = _free_port()
    log = file.with_name(file.name + LOG_SUFFIX)
    pid = _spawn([sys.executable, "-m", __name__, str(file), str(port), repr(idle)], log)
    click.echo(
        f"nexusbrain: started a server for {file} at http://{HOST}:{port} (pid {pid}); the next"
        f" commands use it, and it stops after {_duration(idle)} without one (log: {log};"
        " BRAIN_AUTOSERVE=0 or --local: no server)",
        err=True,
    )
    return pid


def _writable(file: Path) -> bool:
    """A brain a server may serve: it exists, and its file and folder are ours to write. A
    file that nobody may write (chmod a-w) is read-only even to root, who may write anything."""
    try:
        mode = file.stat().st_mode
    except OSError:
        return False
    return (
        stat.S_ISREG(mode)
        and bool(mode & 0o222)
        and os.access(file, os.W_OK)
        and os.access(file.parent, os.W_OK)
    )


def _free_port() -> int:
    """A port free on loopback now, which the command names in what it says."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _spawn(argv: list[str], log: Path) -> int:
    """Start `argv` in a session of its own (no terminal's Ctrl-C or hang-up reaches it),
    reading nothing, adding to `log` (a server that loses the race for the claim to another
    must not wipe the winner's lines); its pid. No Popen: nothing here waits for it."""
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(log), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    return os.posix_spawn(argv[0], argv, os.environ, file_actions=actions, setsid=True)


def _duration(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:g} s"


def main(argv: list[str]) -> int:
    """Serve the brain at argv[0] on loopback port argv[1] until argv[2] seconds pass with no
    request; the exit code."""
    import logging

    from nexusbrain.api.server import run
    from nexusbrain.brain import Brain
    from nexusbrain.errors import BrainError

    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s: %(message)s"
    )
    db, port, idle = argv[0], int(argv[1]), float(argv[2])
    try:
        with Brain.open(db, create=False) as brain:
            run(brain, host=HOST, port=port, log_level="warning", workers=1, idle_exit=idle)
    except BrainError as exc:  # another server took the database first, say
        logging.getLogger(__name__).error("not serving %s: %s", db, exc.message)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
