"""Running the API under uvicorn, on a socket bound here: once it listens, the discovery file
beside the database tells command lines where it is (discovery.py), until the server stops.

By default one process per core answers (config.default_workers), forked once the socket
listens, each with a brain of its own on the same database: one process answers with one
core at a time (most of a request's work holds the GIL), so this is what lets answers use
every core. They share the dense index's cache file through the page cache (it is
memory-mapped) and see each other's writes as one process sees another's, through the
store's change sequence. Each keeps its own
rate limits and latency window, and they spread connections evenly between them (accept.py).
MCP at /mcp is stateless (mcp_server/http.py), so any worker answers any call of a session.
The first process supervises: it says where the server is, watches folders, and stops the
workers on SIGTERM or Ctrl-C, or when one of them ends; a worker whose supervisor is gone
(killed with SIGKILL) stops by itself within a second."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import replace
from types import FrameType

import uvicorn
from starlette.types import ASGIApp

from nexusbrain import discovery
from nexusbrain.api.accept import Acceptor, Shares, Tally
from nexusbrain.api.app import create_app
from nexusbrain.api.errors import MAX_HEAD_BYTES, ShapedH11
from nexusbrain.api.guard import check_bind
from nexusbrain.brain import Brain
from nexusbrain.config import ServerSettings, default_workers, server_settings
from nexusbrain.errors import ConfigError

log = logging.getLogger(__name__)


def run(
    brain: Brain,
    *,
    host: str | None,
    port: int | None,
    log_level: str = "info",
    mcp: bool = False,
    on_listen: Callable[[str], None] | None = None,
    workers: int | None = None,
    idle_exit: float | None = None,
    claim: discovery.Claim | None = None,
) -> None:
    """Serve the API; with `mcp`, MCP over streamable HTTP at /mcp too, behind the same guard.
    `on_listen` gets the server's address (http://host:port) once it listens; port 0 takes
    a free one. `workers`: processes answering (None: `default_workers()`). `idle_exit`: stop
    after that many seconds without a request (one worker only): a server the command line
    started by itself (cli/autoserve.py), which a server started by hand replaces. `claim`:
    the database's claim, when this process holds it already (that server's does, from its
    start: the command took it and handed it over)."""
    settings = server_settings(host, port, brain.settings.limits)
    check_bind(settings)
    workers = workers or default_workers()
    if idle_exit is not None and workers > 1:
        raise ConfigError(f"a server that stops when idle has one worker, not {workers}")
    # a second server refuses here, naming the first; one started by hand stops an idle one
    claim = claim or discovery.claim(brain.settings.db, replace_idle=idle_exit is None)
    try:
        _serve(brain, settings, log_level, mcp, on_listen, workers, claim, idle_exit)
    finally:
        if claim is not None:
            claim.close()


def _serve(
    brain: Brain,
    settings: ServerSettings,
    log_level: str,
    mcp: bool,
    on_listen: Callable[[str], None] | None,
    workers: int,
    claim: discovery.Claim | None,
    idle_exit: float | None,
) -> None:
    embedded = brain.admin.embed_missing(wait=False)  # a slow profile embeds in the background
    if embedded:
        log.info("embedded %d chunk(s) for %s before serving", embedded, brain.settings.embedder)
    brain.admin.refresh_index()  # the first query does not wait for the index
    listener = listen(settings.host, settings.port)
    bound = int(listener.getsockname()[1])
    settings = replace(settings, port=bound)  # port 0: the Host check knows the real one
    if workers > 1:
        _supervise(brain, settings, listener, log_level, (workers, mcp), on_listen, claim)
        return
    server = _Server(uvicorn_config(_app(brain, settings, mcp), settings, log_level))
    server.idle_exit = idle_exit
    url = local_url(settings.host, bound)
    # SIGTERM asks the server to stop, whenever it comes: before uvicorn runs (then it
    # returns once started), while it starts (its own handlers are not in place yet, and an
    # exception raised there would be swallowed by its lifespan), or once it is gone.
    previous = signal.signal(signal.SIGTERM, server.handle_exit)
    try:
        # Said before it is announced: a client that finds the discovery file, then stops
        # the server, has had its banner (SIGTERM, handled from here, lets stdout flush).
        if on_listen is not None:
            on_listen(url)
        discovery.announce(brain.settings.db, url, settings.token, mcp=mcp, idle_exit=idle_exit)
        _settle(brain)
        if not server.should_exit:
            server.run(sockets=[listener])
        log.info("stopped")
    finally:
        signal.signal(signal.SIGTERM, previous)
        discovery.withdraw(brain.settings.db)
        listener.close()


def _app(brain: Brain, settings: ServerSettings, mcp: bool) -> ASGIApp:
    app = create_app(brain, settings)
    if mcp:
        from nexusbrain.mcp_server.http import mount_mcp

        mount_mcp(app, brain, settings)
    return app


def _supervise(
    brain: Brain,
    settings: ServerSettings,
    listener: socket.socket,
    log_level: str,
    served: tuple[int, bool],
    on_listen: Callable[[str], None] | None,
    claim: discovery.Claim | None,
) -> None:
    """Fork `served[0]` workers (serving MCP too when `served[1]`) and wait, as the process
    the discovery file names, until SIGTERM or Ctrl-C, or until a worker ends."""
    workers, mcp = served
    url = local_url(settings.host, settings.port)
    shares = Shares(workers)
    signals = _Signals()  # before the fork: a SIGTERM from now on stops what was forked
    children: list[int] = []
    try:
        for slot in range(workers):
            share = (shares, slot)
            children.append(_fork(brain, settings, listener, (log_level, mcp), share, claim))
        if on_listen is not None:
            on_listen(url)
        discovery.announce(brain.settings.db, url, settings.token, mcp=mcp)
        ended = signals.wait(children)
        if ended is None:
            log.info("stopping %d workers", len(children))
        else:
            pid, status = ended
            children.remove(pid)
            log.error("worker %d ended (status %d): stopping the server", pid, status)
    finally:
        signals.close()
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        discovery.withdraw(brain.settings.db)
        listener.close()


class _Signals:
    """The supervisor's signals, read from a pipe: SIGTERM and SIGINT ask it to stop, SIGCHLD
    says a worker may have ended. Their handlers do nothing; the interpreter writes each
    signal's number to the pipe (signal.set_wakeup_fd), whichever thread the kernel chose,
    so the supervisor waits in a read that nothing raises out of (an exception raised from
    a handler can surface anywhere, or be swallowed)."""

    WATCHED = (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD)

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        self._handlers = {sig: signal.signal(sig, _ignore) for sig in self.WATCHED}
        self._wakeup = signal.set_wakeup_fd(self._write)

    def wait(self, children: list[int]) -> tuple[int, int] | None:
        """A worker that ended (its pid and status), or None once asked to stop."""
        while True:
            with contextlib.suppress(ChildProcessError):
                while (ended := os.waitpid(-1, os.WNOHANG))[0]:
                    if ended[0] in children:
                        return ended
            received = os.read(self._read, 64)
            if signal.SIGTERM in received or signal.SIGINT in received:
                return None

    def close(self) -> None:
        signal.set_wakeup_fd(self._wakeup)
        for sig, handler in self._handlers.items():
            signal.signal(sig, handler)
        os.close(self._read)
        os.close(self._write)

    @classmethod
    def forget(cls) -> None:
        """In a forked worker: its signals are its own again (uvicorn handles them), and none
        reaches the supervisor's pipe."""
        signal.set_wakeup_fd(-1)
        for sig in cls.WATCHED:
            signal.signal(sig, signal.SIG_DFL)


def _ignore(signum: int, frame: FrameType | None) -> None:
    """A handler that lets the signal's number reach the wakeup pipe and does nothing else."""


def _fork(
    brain: Brain,
    settings: ServerSettings,
    listener: socket.socket,
    serving: tuple[str, bool],
    share: tuple[Shares, int],
    claim: discovery.Claim | None,
) -> int:
    """A worker process answering on `listener` (at log level `serving[0]`, with MCP when
    `serving[1]`), counting its connections in slot `share[1]` of the shared counts; its
    pid. It opens a brain of its own and never touches the connections it inherits
    (closing one in a child could checkpoint or remove the write-ahead log from under the
    others), so it ends with os._exit. It lets go of its copy of the database's claim: the
    claim is the supervisor's, the process the discovery file names."""
    supervisor = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        if claim is not None:
            claim.close()
        _Signals.forget()
        # Ctrl-C reaches the whole group: the parent stops the workers
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        level, mcp = serving
        with Brain.open(settings=brain.settings) as own:
            config = uvicorn_config(_app(own, settings, mcp), settings, level)
            _settle(own)
            server = _Server(config, share)
            server.supervisor = supervisor
            server.run(sockets=[listener])
        code = 0
    except BaseException:
        log.exception("worker %d failed", os.getpid())
    finally:
        logging.shutdown()
        os._exit(code)


def _settle(brain: Brain) -> None:
    """Ready a process to answer: the brain warmed (Brain.warm), and what the process then
    holds left out of the collector's full passes. A full pass walks every object the
    process keeps (the brain, the framework, their modules), and searches make enough
    short-lived objects that one came every second or two under load, taking 30-40 ms while
    the requests queued in that process waited; frozen, those objects are skipped, and a
    full pass walks only what was made since."""
    brain.admin.warm()
    gc.collect()
    gc.freeze()


def uvicorn_config(app: ASGIApp, settings: ServerSettings, log_level: str) -> uvicorn.Config:
    """How uvicorn serves the app. X-Forwarded-For and X-Forwarded-Proto are believed only from
    BRAIN_TRUSTED_PROXIES (uvicorn's own default trusts them from 127.0.0.1, and any local
    client could then name itself anyone to the rate limiter)."""
    trusted = list(settings.trusted_proxies)
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=log_level,
        access_log=False,
        http=ShapedH11,  # its refusals in the error shape
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        proxy_headers=bool(trusted),
        forwarded_allow_ips=trusted or None,
    )


class _Server(uvicorn.Server):
    """uvicorn's server, idle when nothing happens: its own main loop wakes ten times a
    second to see whether it should stop, where this one wakes once a second (for the Date
    header, which has that resolution) and at once when a signal asks it to stop. Given a
    worker's `share` (the shared counts and its slot), it accepts on its sockets itself,
    evenly with its siblings (accept.py), instead of through asyncio's servers."""

    supervisor: int | None = None  # a worker's: it stops once that process is gone
    idle_exit: float | None = None  # stop after this many seconds without a request

    def __init__(self, config: uvicorn.Config, share: tuple[Shares, int] | None = None) -> None:
        super().__init__(config)
        self._acceptors: list[Acceptor] = []
        self._requests = 0
        self._active = time.monotonic()
        self._tally = None if share is None else Tally(*share)
        if self._tally is not None:
            self.server_state.connections = self._tally

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        if self._tally is None or not sockets:
            await super().startup(sockets)
            return
        await super().startup([])  # the lifespan, and no asyncio server
        config, loop = self.config, asyncio.get_running_loop()

        def protocol() -> asyncio.Protocol:  # what uvicorn's own startup hands asyncio
            return config.http_protocol_class(  # type: ignore[call-arg]
                config=config,
                server_state=self.server_state,
                app_state=self.lifespan.state,
                _loop=loop,
            )

        self._acceptors = [Acceptor(sock, self._tally, protocol) for sock in sockets]

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for acceptor in self._acceptors:
            acceptor.close()
        await super().shutdown(sockets)

    async def main_loop(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        ticks = 0
        # on_tick does its once-a-second work when its counter is a multiple of 10
        while not await self.on_tick(ticks):
            ticks = (ticks + 10) % 864_000
            if self._orphaned() or self._idle():
                self.should_exit = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 1.0)

    def _orphaned(self) -> bool:
        """A worker whose supervisor ended (killed with SIGKILL: it could not stop us) has
        been handed to another parent."""
        if self.supervisor is None or os.getppid() == self.supervisor:
            return False
        log.warning("the supervisor (pid %d) is gone: stopping", self.supervisor)
        return True

    def _idle(self) -> bool:
        """No request, and no connection open, for `idle_exit` seconds."""
        if self.idle_exit is None:
            return False
        now, state = time.monotonic(), self.server_state
        if state.total_requests != self._requests or state.connections:
            self._requests, self._active = state.total_requests, now
        if now - self._active < self.idle_exit:
            return False
        log.info("no request for %.0f s: stopping", self.idle_exit)
        return True

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        loop = getattr(self, "_loop", None)
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._wake.set)


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (IPv6 when the host is an IPv6 address). Its
    protocol is named: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on accepted
    sockets whose proto is IPPROTO_TCP, and with it on, a response's body waited for the
    client's delayed ACK of its headers, 40 ms a request."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror}; is a server already running? "
            "Choose another --port, or BIND_PORT"
        ) from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def local_url(host: str, port: int) -> str:
    """The address a client on this machine reaches the server by (a wildcard bind is reached
    on loopback)."""
    bare = host.strip("[]")
    if bare in ("0.0.0.0", ""):
        bare = "127.0.0.1"
    elif bare == "::":
        bare = "::1"
    return f"http://[{bare}]:{port}" if ":" in bare else f"http://{bare}:{port}"
