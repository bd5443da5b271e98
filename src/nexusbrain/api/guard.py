"""The gate in front of every route: per-client rate limits, bearer auth when a token is set,
and request size limits. It also times searches and recalls for the envelope status.

A pure ASGI middleware, so it also guards streamed bodies whose size is not declared."""

from __future__ import annotations

import hmac
import time
from collections.abc import Mapping
from urllib.parse import urlencode

from starlette.exceptions import HTTPException
from starlette.requests import cookie_parser
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nexusbrain.api.errors import error_response
from nexusbrain.api.monitor import TIMED_PATHS, LatencyWindow
from nexusbrain.api.ratelimit import RateLimiter, is_loopback, retry_after_header
from nexusbrain.config import ServerSettings
from nexusbrain.errors import ConfigError
from nexusbrain.web.login import LOGIN_PATH, OPEN_PATHS, TOKEN_COOKIE

__all__ = ["Guard", "check_bind", "is_loopback"]


def check_bind(settings: ServerSettings) -> None:
    """Refuse to listen beyond this machine without a token to guard it."""
    if not is_loopback(settings.host) and not settings.token:
        raise ConfigError(
            f"refusing to bind {settings.host}: it is not a loopback address and no API token is "
            "set. Set BRAIN_API_TOKEN (clients then send 'Authorization: Bearer <token>'), "
            "or bind 127.0.0.1"
        )


class Guard:
    def __init__(
        self, app: ASGIApp, settings: ServerSettings, latencies: LatencyWindow | None = None
    ) -> None:
        self.app = app
        self.settings = settings
        self.limiter = RateLimiter(settings.rate_limit)
        self.latencies = latencies

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        wait = self.limiter.retry_after(client[0] if client else None)
        if wait > 0:
            await self._rate_limited(wait)(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        if self.settings.token and not self._authorised(scope, headers):
            await self._unauthorised(scope)(scope, receive, send)
            return
        limit = self._limit(scope)
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._too_large(limit)(scope, receive, send)
            return
        if self.latencies is not None and scope["path"] in TIMED_PATHS:
            await self._call_timed(scope, receive, send, limit)
        else:
            await self._call_limited(scope, receive, send, limit)

    def _authorised(self, scope: Scope, headers: Mapping[bytes, bytes]) -> bool:
        """The bearer header; or, for reads only, the cookie the web UI's sign-in page sets
        (see web/login.py). The sign-in pages themselves are open."""
        if scope["path"] in OPEN_PATHS:
            return True
        expected = f"Bearer {self.settings.token}".encode()
        if hmac.compare_digest(headers.get(b"authorization", b""), expected):
            return True
        cookie = cookie_parser(headers.get(b"cookie", b"").decode("latin-1")).get(TOKEN_COOKIE)
        if cookie is None or scope["method"] not in ("GET", "HEAD"):
            return False
        return hmac.compare_digest(f"Bearer {cookie}".encode(), expected)

    @staticmethod
    def _unauthorised(scope: Scope) -> Response:
        path: str = scope["path"]
        if scope["method"] == "GET" and (path == "/app" or path.startswith("/app/")):
            query = scope.get("query_string", b"").decode("latin-1")
            target = f"{path}?{query}" if query else path
            return RedirectResponse(f"{LOGIN_PATH}?{urlencode({'next': target})}", 303)
        return error_response(
            401,
            "unauthorized",
            "missing or wrong API token: send 'Authorization: Bearer <BRAIN_API_TOKEN>'",
            {"WWW-Authenticate": "Bearer"},
        )

    def _limit(self, scope: Scope) -> int:
        limits = self.settings.limits
        return limits.max_import_bytes if scope["path"] == "/import" else limits.max_request_bytes

    def _rate_limited(self, wait: float) -> Response:
        limit = self.settings.rate_limit
        return error_response(
            429,
            "rate_limited",
            f"too many requests: the limit is {limit.rate:g} per second (bursts of "
            f"{limit.burst}) per client; retry after {wait:.2f}s",
            {"Retry-After": retry_after_header(wait)},
        )

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

    async def _call_timed(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        """Record the latency of successful answers (errors would flatter the p95)."""
        assert self.latencies is not None
        started = time.perf_counter()
        status = 0

        async def sent(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await self._call_limited(scope, receive, sent, limit)
        if 200 <= status < 300:
            self.latencies.record((time.perf_counter() - started) * 1000)
