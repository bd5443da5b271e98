"""Running the API under uvicorn, on a socket bound here: once it listens, the discovery file
beside the database tells command lines where it is (discovery.py), until the server stops.

With `workers` above 1, that many processes are forked once the socket listens, each with a
brain of its own on the same database: one process answers with one core at a time (most of
a request's work holds the GIL), so this is what lets answers use every core. They share the
dense index's cache file through the page cache (it is memory-mapped) and see each other's
writes as one process sees another's, through the store's change sequence. Each keeps its own
rate limits and latency window, and they spread connections evenly between them (accept.py).
The first process supervises: it says where the server is, watches folders, and stops the
workers on SIGTERM or Ctrl-C, or when one of them ends."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import socket
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
from nexusbrain.config import ServerSettings, server_settings
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
    workers: int = 1,
) -> None:
    """Serve the API; with `mcp`, MCP over streamable HTTP at /mcp too, behind the same guard.
    `on_listen` gets the server's address (http://host:port) once it listens; port 0 takes
    a free one."""
    settings = server_settings(host, port, brain.settings.limits)
    check_bind(settings)
    if workers > 1 and mcp:
        raise ConfigError(
            f"--workers {workers} with --mcp: an MCP session lives in one process; "
            "serve MCP from a server with one worker"
        )
    claim = discovery.claim(brain.settings.db)  # a second server refuses here, naming the first
    try:
        _serve(brain, settings, log_level, mcp, on_listen, workers, claim)
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
) -> None:
    embedded = brain.admin.embed_missing(wait=False)  # a slow profile embeds in the background
    if embedded:
        log.info("embedded %d chunk(s) for %s before serving", embedded, brain.settings.embedder)
    brain.admin.refresh_index()  # the first query does not wait for the index
    listener = listen(settings.host, settings.port)
    bound = int(listener.getsockname()[1])
    settings = replace(settings, port=bound)  # port 0: the Host check knows the real one
    if workers > 1:
        _supervise(brain, settings, listener, log_level, workers, on_listen, claim)
        return
    app = create_app(brain, settings)
    if mcp:
        from nexusbrain.mcp_server.http import mount_mcp

        mount_mcp(app, brain, settings)
    server = _Server(uvicorn_config(app, settings, log_level))
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
        discovery.announce(brain.settings.db, url, settings.token, mcp=mcp)
        _settle(brain)
        if not server.should_exit:
            server.run(sockets=[listener])
        log.info("stopped")
    finally:
        signal.signal(signal.SIGTERM, previous)
        discovery.withdraw(brain.settings.db)
        listener.close()


def _supervise(
    brain: Brain,
    settings: ServerSettings,
    listener: socket.socket,
    log_level: str,
    workers: int,
    on_listen: Callable[[str], None] | None,
    claim: discovery.Claim | None,
) -> None:
    url = local_url(settings.host, settings.port)
    shares = Shares(workers)
    children = [
        _fork(brain, settings, listener, log_level, (shares, slot), claim)
        for slot in range(workers)
    ]
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        if on_listen is not None:
            on_listen(url)
        discovery.announce(brain.settings.db, url, settings.token, mcp=False)
        pid, status = os.wait()  # until a worker ends: then the server is not whole
        children.remove(pid)
        log.error("worker %d ended (status %d): stopping the server", pid, status)
    except (_Stopped, KeyboardInterrupt):
        log.info("stopping %d workers", len(children))
    finally:
        signal.signal(signal.SIGTERM, previous)
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        discovery.withdraw(brain.settings.db)
        listener.close()


def _fork(
    brain: Brain,
    settings: ServerSettings,
    listener: socket.socket,
    level: str,
    share: tuple[Shares, int],
    claim: discovery.Claim | None,
) -> int:
    """A worker process answering on `listener`, counting its connections in slot `share[1]`
    of the shared counts; its pid. It opens a brain of its own and never touches the
    connections it inherits (closing one in a child could checkpoint or remove the
    write-ahead log from under the others), so it ends with os._exit. It lets go of its copy
    of the database's claim: the claim is the supervisor's, the process the discovery file
    names."""
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        if claim is not None:
            claim.close()
        # Ctrl-C reaches the whole group: the parent stops the workers
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with Brain.open(settings=brain.settings) as own:
            config = uvicorn_config(create_app(own, settings), settings, level)
            _settle(own)
            _Server(config, share).run(sockets=[listener])
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

    def __init__(self, config: uvicorn.Config, share: tuple[Shares, int] | None = None) -> None:
        super().__init__(config)
        self._acceptors: list[Acceptor] = []
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
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 1.0)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        loop = getattr(self, "_loop", None)
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._wake.set)


class _Stopped(Exception):
    """SIGTERM to the supervisor of several workers."""


def _stop(signum: int, frame: object) -> None:
    """The supervisor's SIGTERM: it waits in os.wait for its workers, which this interrupts
    (the default would end the process before the discovery file is removed)."""
    raise _Stopped


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
