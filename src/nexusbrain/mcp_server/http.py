"""MCP over streamable HTTP, mounted at /mcp on the REST app: behind the same Guard (Host and
Origin, bearer token, request size limits), with the MCP session manager running in the app's
lifespan.

Stateless (the SDK's stateless mode): the server hands out no session id and keeps nothing
between requests, so each call is answered by whichever worker of `serve` takes it. Nothing
of nexusbrain's MCP needs a session: its tools and resources answer from the brain, and it
sends the client no requests of its own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import Route

from nexusbrain.brain import Brain
from nexusbrain.config import ServerSettings
from nexusbrain.mcp_server.server import build_server

MCP_PATH = "/mcp"


def mount_mcp(app: FastAPI, brain: Brain, settings: ServerSettings) -> None:
    """Serve MCP at /mcp on `app`, whose lifespan then also runs the MCP sessions."""
    manager = StreamableHTTPSessionManager(
        app=build_server(brain),
        json_response=True,
        stateless=True,
        security_settings=_security(settings),
        max_request_body_size=settings.limits.max_request_bytes,
    )
    app.router.routes.append(Route(MCP_PATH, endpoint=StreamableHTTPASGIApp(manager)))
    outer = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(asgi: Any) -> AsyncIterator[Any]:
        async with manager.run(), outer(asgi) as state:
            yield state

    app.router.lifespan_context = lifespan


def _security(settings: ServerSettings) -> TransportSecuritySettings:
    """The Guard in front of the app checks Host and Origin on every route, /mcp included
    (api/hosts.py), so the SDK's own check of them stays off: one check, one answer."""
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)
