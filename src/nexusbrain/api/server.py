"""Running the API under uvicorn, on a socket bound here: once it listens, the discovery file
beside the database tells command lines where it is (discovery.py), until the server stops."""

from __future__ import annotations

import logging
import signal
import socket
from collections.abc import Callable
from dataclasses import replace

import uvicorn
from starlette.types import ASGIApp

from nexusbrain import discovery
from nexusbrain.api.app import create_app
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
) -> None:
    """Serve the API; with `mcp`, MCP over streamable HTTP at /mcp too, behind the same guard.
    `on_listen` gets the server's address (http://host:port) once it listens; port 0 takes
    a free one."""
    settings = server_settings(host, port, brain.settings.limits)
    check_bind(settings)
    embedded = brain.embed_missing()
    if embedded:
        log.info("embedded %d chunk(s) for %s before serving", embedded, brain.settings.embedder)
    brain.refresh_index()  # the first query does not wait for the index
    listener = listen(settings.host, settings.port)
    bound = int(listener.getsockname()[1])
    settings = replace(settings, port=bound)  # port 0: the Host check knows the real one
    app = create_app(brain, settings)
    if mcp:
        from nexusbrain.mcp_server.http import mount_mcp

        mount_mcp(app, brain, settings)
    config = uvicorn_config(app, settings, log_level)
    url = local_url(settings.host, bound)
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        # Said before it is announced: a client that finds the discovery file, then stops
        # the server, has had its banner (SIGTERM, handled from here, lets stdout flush).
        if on_listen is not None:
            on_listen(url)
        discovery.announce(brain.settings.db, url, settings.token, mcp=mcp)
        uvicorn.Server(config).run(sockets=[listener])
    except _Stopped:
        log.info("stopped by SIGTERM")
    finally:
        signal.signal(signal.SIGTERM, previous)
        discovery.withdraw(brain.settings.db)
        listener.close()


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
        proxy_headers=bool(trusted),
        forwarded_allow_ips=trusted or None,
    )


class _Stopped(Exception):
    """SIGTERM, once uvicorn has shut down gracefully (uvicorn then raises the signal again:
    its default would end the process before the discovery file is removed)."""


def _stop(signum: int, frame: object) -> None:
    raise _Stopped


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (IPv6 when the host is an IPv6 address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio turns Nagle's algorithm off only on sockets that say
    # so, and without that a kept-alive connection's answers each wait ~40 ms for an ACK.
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
