"""The gate in front of every route: bearer auth when a token is set, and request size limits.

A pure ASGI middleware, so it also guards streamed bodies whose size is not declared."""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass, field

from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nexusbrain.api.errors import error_response
from nexusbrain.config import DEFAULT_HOST, DEFAULT_PORT, Limits
from nexusbrain.errors import ConfigError


@dataclass(frozen=True, slots=True)
class ServerSettings:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = None
    limits: Limits = field(default_factory=Limits)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(settings: ServerSettings) -> None:
    """Refuse to listen beyond this machine without a token to guard it."""
    if not is_loopback(settings.host) and not settings.token:
        raise ConfigError(
            f"refusing to bind {settings.host}: it is not a loopback address and no API token is "
            "set. Set BRAIN_API_TOKEN (clients then send 'Authorization: Bearer <token>'), "
            "or bind 127.0.0.1"
        )


class Guard:
    def __init__(self, app: ASGIApp, settings: ServerSettings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        if self.settings.token and not self._authorised(headers.get(b"authorization", b"")):
            response = error_response(
                401,
                "unauthorized",
                "missing or wrong API token: send 'Authorization: Bearer <BRAIN_API_TOKEN>'",
                {"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        limit = self._limit(scope)
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._too_large(limit)(scope, receive, send)
            return
        await self._call_limited(scope, receive, send, limit)

    def _authorised(self, header: bytes) -> bool:
        expected = f"Bearer {self.settings.token}".encode()
        return hmac.compare_digest(header, expected)

    def _limit(self, scope: Scope) -> int:
        limits = self.settings.limits
        return limits.max_import_bytes if scope["path"] == "/import" else limits.max_request_bytes

    @staticmethod
    def _too_large(limit: int) -> Response:
        return error_response(413, "too_large", f"request body is over the limit of {limit} bytes")

    async def _call_limited(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # An HTTPException passes through the framework's body parsing untouched
                    # and is rendered in the standard error shape.
                    raise HTTPException(413, f"request body is over the limit of {limit} bytes")
            return message

        await self.app(scope, counted, send)
