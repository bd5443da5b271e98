"""Running the API under uvicorn."""

from __future__ import annotations

import logging

import uvicorn
from starlette.types import ASGIApp

from nexusbrain.api.app import create_app
from nexusbrain.api.guard import check_bind
from nexusbrain.brain import Brain
from nexusbrain.config import ServerSettings, server_settings

log = logging.getLogger(__name__)


def run(
    brain: Brain, *, host: str | None, port: int | None, log_level: str = "info", mcp: bool = False
) -> None:
    """Serve the API; with `mcp`, MCP over streamable HTTP at /mcp too, behind the same guard."""
    settings = server_settings(host, port, brain.settings.limits)
    check_bind(settings)
    embedded = brain.embed_missing()
    if embedded:
        log.info("embedded %d chunk(s) for %s before serving", embedded, brain.settings.embedder)
    brain.refresh_index()  # the first query does not wait for the index
    app = create_app(brain, settings)
    if mcp:
        from nexusbrain.mcp_server.http import mount_mcp

        mount_mcp(app, brain, settings)
    uvicorn.Server(uvicorn_config(app, settings, log_level)).run()


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
