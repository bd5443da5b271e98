"""The discovery file: how a command line finds the server that is running for its database.

One server serves a SQLite file at a time. Before it listens, `nexusbrain serve` claims the
database: an exclusive lock on `<db>.server.lock` (which holds its pid), kept while the
process lives and dropped by the kernel when it ends, however it ends. A second server finds
the lock held and refuses, naming the first (`claim`). Once it listens, the server writes
`<db>.server.json` beside the SQLite file (atomically: readers never see half of it), and
removes it when it stops, if it still names this process:

    {"url": "http://127.0.0.1:8765", "pid": 4242, "db": "/home/me/brain.db",
     "token_path": null, "mcp": true, "idle_exit": null}

`idle_exit` (seconds) marks a server that stops by itself when idle: the one a command line
started in the background (cli/autoserve.py). A server started by hand replaces it: `claim`
asks it to stop (SIGTERM) and takes the claim once it has.

With a bearer token, the server also writes the token to `<db>.server-token` (mode 0600: it
opens nothing that the database beside it does not already hold) and names it in
`token_path`. A reader ignores the file when it is stale: when no server holds the claim or
its pid is not alive (a server killed by SIGKILL leaves the file behind, and the next server
replaces it), and `locate` when nothing answers at its address (one connect); the command
line and the MCP relay then work in process.

Standard library only (and config for BRAIN_URL): the command line's fast path imports it.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from nexusbrain import wire
from nexusbrain.environment import api_token, resolve_db, server_url
from nexusbrain.errors import BrainError, Conflict

SUFFIX = ".server.json"
TOKEN_SUFFIX = ".server-token"
LOCK_SUFFIX = ".server.lock"
# A reader tests the lock for an instant (`find`): a server claiming the database meanwhile
# tries again for this long before it concludes that another server holds it.
CLAIM_PATIENCE_SECONDS = 0.5
# How long a server started by hand waits for an idle server it asked to stop to let go.
REPLACE_PATIENCE_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What a running server says about itself."""

    url: str  # http://host:port, no trailing slash
    pid: int
    db: str  # the database file it serves, absolute
    token_path: str | None = None
    mcp: bool = False  # it serves MCP at /mcp (serve --mcp)
    idle_exit: float | None = None  # it stops after this many idle seconds

    def token(self) -> str | None:
        """The bearer token the server requires, if it wrote one and it can be read."""
        if self.token_path is None:
            return None
        try:
            return Path(self.token_path).read_text(encoding="utf-8").strip() or None
        except OSError:
            return None


def database_file(db: str | Path) -> Path | None:
    """The SQLite file of a --db value (a path or sqlite:///path); None for other URLs."""
    text = str(db)
    if text.startswith("sqlite:///"):
        text = text.removeprefix("sqlite://")
    elif "://" in text:
        return None
    return Path(text).expanduser().resolve()


def discovery_path(db: str | Path) -> Path | None:
    """Where the discovery file of this database lives (None: not a SQLite file)."""
    file = database_file(db)
    return file.with_name(file.name + SUFFIX) if file is not None else None


@dataclass(frozen=True, slots=True)
class Located:
    """A server that answers, and how to talk to it."""

    url: str
    token: str | None
    mcp: bool | None  # serves MCP at /mcp; None: not known (BRAIN_URL)


def locate(db: str | None) -> Located | None:
    """The server for a command: BRAIN_URL when no --db is given (an error if nothing answers
    there), else the one that the discovery file beside the database names, if it answers.
    None: work in process."""
    if db is None and (url := server_url()) is not None:
        if not _answers(url):
            raise BrainError(
                f"nothing answers at BRAIN_URL={url}: start `nexusbrain serve` there, "
                "or unset BRAIN_URL to work in process"
            )
        return Located(url, api_token(), None)
    info = find(resolve_db(db))
    if info is None or not _answers(info.url):
        return None
    return Located(info.url, info.token() or api_token(), info.mcp)


def _answers(url: str) -> bool:
    try:
        wire.connect(url).close()
    except (OSError, ValueError):
        return False
    return True


def announce(
    db: str | Path,
    url: str,
    token: str | None = None,
    *,
    mcp: bool = False,
    idle_exit: float | None = None,
) -> Path | None:
    """Write the discovery file (and the token file) for a server of this process. Returns
    its path, None for a database that is not a SQLite file."""
    file = database_file(db)
    if file is None:
        return None
    token_path = None
    if token:
        token_path = file.with_name(file.name + TOKEN_SUFFIX)
        _write_private(token_path, token + "\n")
    info = {
        "url": url,
        "pid": os.getpid(),
        "db": str(file),
        "token_path": _text(token_path),
        "mcp": mcp,
        "idle_exit": idle_exit,
    }
    path = file.with_name(file.name + SUFFIX)
    _write_private(path, json.dumps(info) + "\n")
    return path


class Claim:
    """This process's claim to serve one database: the open lock file. Closing it (`close`)
    gives the claim up; a process forked from the holder closes its copy of the descriptor,
    which leaves the holder's claim standing (flock belongs to the open file, shared by every
    copy of its descriptor, and ends with the last one)."""

    def __init__(self, descriptor: int) -> None:
        self._descriptor: int | None = descriptor

    @property
    def descriptor(self) -> int | None:
        return self._descriptor

    def hand_over(self, pid: int) -> None:
        """Name `pid` the holder: a process started with a copy of the lock's descriptor,
        which holds the claim while it lives; then let go of this process's copy."""
        if self._descriptor is not None:
            os.ftruncate(self._descriptor, 0)
            os.pwrite(self._descriptor, f"{pid}\n".encode(), 0)
        self.close()

    def close(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None


def claim(
    db: str | Path, *, replace_idle: bool = False, patience: float = CLAIM_PATIENCE_SECONDS
) -> Claim | None:
    """Claim the database for a server of this process (None: not a SQLite file, which any
    number of servers may share). Conflict, naming the running server (its address and pid),
    when another process still holds it after `patience` seconds; with `replace_idle`, a
    server that would stop when idle is asked to stop now, and the claim taken once it has."""
    file = database_file(db)
    if file is None:
        return None
    path = file.with_name(file.name + LOCK_SUFFIX)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    deadline = time.monotonic() + patience
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if replace_idle and _stop_idle(file):
                replace_idle = False
                deadline = time.monotonic() + REPLACE_PATIENCE_SECONDS
            if time.monotonic() >= deadline:
                os.close(descriptor)
                raise Conflict(_held_by(file)) from None
            time.sleep(0.02)
    os.ftruncate(descriptor, 0)
    os.write(descriptor, f"{os.getpid()}\n".encode())
    return Claim(descriptor)


def _stop_idle(file: Path) -> bool:
    """Ask the server holding this file's claim to stop, if it is one that stops when idle
    (its discovery file says so, and names the pid the lock file holds)."""
    info = _read(file.with_name(file.name + SUFFIX))
    if info is None or info.idle_exit is None or info.pid != _holder(file):
        return False
    try:
        os.kill(info.pid, signal.SIGTERM)
    except OSError:
        return False
    return True


def _held_by(file: Path) -> str:
    """The one-line refusal of a second server: the running one's address and pid."""
    info = _read(file.with_name(file.name + SUFFIX))
    holder = _holder(file)
    if info is not None and info.pid == holder:
        where = f"is already running at {info.url} (pid {info.pid})"
    else:
        where = f"is starting (pid {holder})" if holder else "is already running"
    return (
        f"a server for {file} {where}: use it (commands find it by themselves), "
        "or stop it before serving this database again"
    )


def _holder(file: Path) -> int | None:
    """The pid the claim's lock file holds (the last process that claimed it)."""
    try:
        return int(file.with_name(file.name + LOCK_SUFFIX).read_text(encoding="utf-8").split()[0])
    except (OSError, ValueError, IndexError):
        return None


def withdraw(db: str | Path) -> None:
    """Remove this process's discovery and token files; a newer server's are left alone."""
    path = discovery_path(db)
    if path is None:
        return
    info = _read(path)
    if info is None or info.pid != os.getpid():
        return
    path.unlink(missing_ok=True)
    if info.token_path is not None:
        Path(info.token_path).unlink(missing_ok=True)


def find(db: str | Path) -> ServerInfo | None:
    """The server running for this database, if its discovery file names a live process
    that holds the database's claim."""
    path = discovery_path(db)
    if path is None:
        return None
    info = _read(path)
    if info is None or not _alive(info.pid) or not _claimed(path):
        return None
    return info


def _claimed(discovery: Path) -> bool:
    """Whether a server holds the claim beside this discovery file. Without a lock file (a
    server from before claims) only the pid can tell, and it did."""
    lock = discovery.with_name(discovery.name.removesuffix(SUFFIX) + LOCK_SUFFIX)
    try:
        descriptor = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    except OSError:
        return True  # unreadable: the pid is all there is
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)  # closing also drops a lock taken here
    return False


def _read(path: Path) -> ServerInfo | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        token_path = raw.get("token_path")
        return ServerInfo(
            url=str(raw["url"]).rstrip("/"),
            pid=int(raw["pid"]),
            db=str(raw["db"]),
            token_path=str(token_path) if token_path else None,
            mcp=raw.get("mcp") is True,
            idle_exit=float(raw["idle_exit"]) if raw.get("idle_exit") is not None else None,
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, but another user's
        return True
    except OSError:
        return False
    return True


def _write_private(path: Path, text: str) -> None:
    """Write a file readable by its owner only, atomically (readers never see half of it)."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.part")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(partial, path)


def _text(path: Path | None) -> str | None:
    return str(path) if path is not None else None
