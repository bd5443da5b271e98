"""A server the command line starts by itself, in the background, the way build daemons do.

A command that reads (search, recall, explain, get, stats, graph's reads) and finds no server
for its brain answers its own call in process, then starts one, detached, and says on stderr
where the server lives; the commands after it find the server through the discovery file
(discovery.py) and send it one request each. The server stops after BRAIN_AUTOSERVE_IDLE
seconds without a request (15 minutes by default), and a server started by hand replaces it.

It starts only for a SQLite file that exists and may be written (the server writes its
discovery file beside it), and that no process serves or is starting to serve: the command
takes the database's claim (discovery.py) before it answers and hands it to the server it
starts, so a command run meanwhile, or while that server loads, finds the claim held and
starts none. Never with BRAIN_AUTOSERVE=0 or --local. It runs as `python -m
nexusbrain.cli.autoserve DB PORT IDLE` with the claim on descriptor 3: one worker on
loopback, its log in `<db>.server.log`.
"""

from __future__ import annotations

import os
import socket
import stat
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import click

from nexusbrain import discovery
from nexusbrain.environment import autoserve_idle, resolve_db
from nexusbrain.errors import Conflict

HOST = "127.0.0.1"
LOG_SUFFIX = ".server.log"
CLAIM_FD = 3  # the server's copy of the claim the command took for it


def reserve(db: str | None) -> Callable[[], None] | None:
    """Take the claim for a server for this command's brain, if it should have one: then
    the function that starts the server and says so, to call once the command has answered
    (started sooner, the server's start-up takes the cores that the answer needs)."""
    idle = autoserve_idle()
    if idle is None:
        return None
    file = discovery.database_file(resolve_db(db))
    if file is None or not _writable(file):
        return None
    try:  # taken now and handed to the server: no second command starts one meanwhile
        claim = discovery.claim(file, patience=0)
    except Conflict:  # another process serves it, or is starting to
        return None
    assert claim is not None and claim.descriptor is not None  # a SQLite file
    return partial(_start, file, idle, claim)


def _start(file: Path, idle: float, claim: discovery.Claim) -> None:
    """Start the server for `file` and hand it the claim (let go if it cannot start)."""
    assert claim.descriptor is not None
    port = _free_port()
    log = file.with_name(file.name + LOG_SUFFIX)
    argv = [sys.executable, "-m", __name__, str(file), str(port), repr(idle)]
    try:
        pid = _spawn(argv, log, claim.descriptor)
    except OSError:
        claim.close()
        return
    claim.hand_over(pid)
    click.echo(
        f"nexusbrain: started a server for {file} at http://{HOST}:{port} (pid {pid}); the next"
        f" commands use it, and it stops after {_duration(idle)} without one (log: {log};"
        " BRAIN_AUTOSERVE=0 or --local: no server)",
        err=True,
    )


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


def _spawn(argv: list[str], log: Path, claim: int) -> int:
    """Start `argv` in a session of its own (no terminal's Ctrl-C or hang-up reaches it),
    reading nothing, adding to `log`, holding the claim's descriptor as CLAIM_FD; its pid.
    No Popen: nothing here waits for it."""
    actions: list[tuple[Any, ...]] = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(log), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    if claim == CLAIM_FD:  # dup2 onto itself would leave it closed on exec
        os.set_inheritable(claim, True)
    else:
        actions.append((os.POSIX_SPAWN_DUP2, claim, CLAIM_FD))
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
    claim = discovery.Claim(CLAIM_FD)
    try:
        with Brain.open(db, create=False) as brain:
            run(
                brain,
                host=HOST,
                port=port,
                log_level="warning",
                workers=1,
                idle_exit=idle,
                claim=claim,
            )
    except BrainError as exc:  # the brain cannot be opened, or the port was taken
        logging.getLogger(__name__).error("not serving %s: %s", db, exc.message)
        return 1
    finally:
        claim.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
