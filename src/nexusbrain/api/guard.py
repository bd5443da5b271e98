"""The gate in front of every route: the server's own Host and Origin only (api/hosts.py),
per-client rate limits, bearer auth when a token is set, no simple-request content types on
JSON endpoints, and request size limits. It also times searches and recalls for the envelope
status.

A pure ASGI middleware, so it also guards streamed bodies whose size is not declared."""

from __future__ import annotations

import hmac
import time
from collections.abc import Mapping
from urllib.parse import unquote_to_bytes, urlencode

from starlette.exceptions import HTTPException
from starlette.requests import cookie_parser
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nexusbrain.api.errors import error_response
from nexusbrain.api.hosts import AllowedHosts, simple_content_type
from nexusbrain.api.monitor import TIMED_PATHS, LatencyWindow
from nexusbrain.api.ratelimit import RateLimiter, is_loopback, retry_after_header
from nexusbrain.config import ServerSettings
from nexusbrain.errors import ConfigError
from nexusbrain.web.login import LOGIN_PATH, OPEN_PATHS, TOKEN_COOKIE

__all__ = ["Guard", "check_bind", "is_loopback"]

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


MIN_TOKEN_CHARS = 32
MIN_TOKEN_DISTINCT = 8  # 32 random hex digits hold about 14 different ones, under 8 ~never
# Liveness probes carry no token; /health answers {"status": "ok"} and nothing else.
OPEN_PATH = "/health"
MAKE_TOKEN = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"


def check_bind(settings: ServerSettings) -> None:
    """Refuse to listen beyond this machine without a real secret to guard it."""
    if is_loopback(settings.host):
        return
    if not settings.token:
        raise ConfigError(
            f"refusing to bind {settings.host}: it is not a loopback address and no API token is "
            "set. Set BRAIN_API_TOKEN to a secret (clients then send 'Authorization: Bearer "
            f"<token>'); make one with: {MAKE_TOKEN}. Or bind 127.0.0.1"
        )
    weakness = token_weakness(settings.token)
    if weakness:
        raise ConfigError(
            f"refusing to bind {settings.host} with a weak BRAIN_API_TOKEN: {weakness}. "
            f"Make a real secret with: {MAKE_TOKEN}"
        )


def token_weakness(token: str) -> str | None:
    """Why `token` is too easy to guess for a server others can reach, or None. (It is never
    echoed.)"""
    distinct = len(set(token))
    if any(c.isspace() or not c.isprintable() for c in token):
        return "it holds spaces or control characters"
    if len(token) < MIN_TOKEN_CHARS:
        return f"it has {len(token)} characters, fewer than {MIN_TOKEN_CHARS}"
    if distinct < MIN_TOKEN_DISTINCT:
        return f"it has only {distinct} different characters (at least {MIN_TOKEN_DISTINCT})"
    return None


class Guard:
    def __init__(
        self, app: ASGIApp, settings: ServerSettings, latencies: LatencyWindow | None = None
    ) -> None:
        self.app = app
        self.settings = settings
        self.limiter = RateLimiter(settings.rate_limit)
        self.latencies = latencies
        self.hosts = AllowedHosts.of_server(settings.host, settings.port, settings.allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        refused = (
            self._foreign(headers)
            or self._simple_request(scope, headers)
            or self._unreadable_query(scope)
        )
        if refused is not None:
            await refused(scope, receive, send)
            return
        client = scope.get("client")
        wait = self.limiter.retry_after(client[0] if client else None)
        if wait > 0:
            await self._rate_limited(wait)(scope, receive, send)
            return
        if (
            self.settings.token
            and scope["path"] != OPEN_PATH
            and not self._authorised(scope, headers)
        ):
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

    def _foreign(self, headers: Mapping[bytes, bytes]) -> Response | None:
        """A refusal if the request names a host or comes from a page that is not this
        server's (DNS rebinding, cross-site requests): see api/hosts.py."""
        host = headers.get(b"host", b"").decode("latin-1")
        if host and not self.hosts.host_ok(host):
            return error_response(
                421,
                "host_not_allowed",
                f"Host {host!r} is not a name of this server ({self.hosts.names()}); a page of "
                "another site may be trying DNS rebinding. To reach the server by this name, "
                "add it to BRAIN_ALLOWED_HOSTS",
            )
        origin = headers.get(b"origin")
        # A page whose Referrer-Policy is no-referrer (the web UI's) posts its forms with
        # `Origin: null`; the browser's own Sec-Fetch-Site, which no page can set, vouches.
        same_origin = headers.get(b"sec-fetch-site") == b"same-origin"
        if origin == b"null" and same_origin:
            return None
        if origin is not None and not self.hosts.origin_ok(origin.decode("latin-1"), host):
            return error_response(
                403,
                "origin_not_allowed",
                f"Origin {origin.decode('latin-1')!r} is not this server's: requests from pages "
                "of other sites are refused. For a page served under another name of this "
                "server, add that name to BRAIN_ALLOWED_HOSTS",
            )
        return None

    @staticmethod
    def _simple_request(scope: Scope, headers: Mapping[bytes, bytes]) -> Response | None:
        """A refusal of a body in a content type any page may post to any site without a
        CORS preflight (text/plain, forms); the sign-in form of the web UI is the exception."""
        content_type = headers.get(b"content-type", b"").decode("latin-1")
        if scope["method"] not in _BODY_METHODS or not simple_content_type(content_type):
            return None
        if scope["path"] in OPEN_PATHS:
            return None
        expected = "application/x-ndjson" if scope["path"] == "/import" else "application/json"
        return error_response(
            415,
            "unsupported_media_type",
            f"Content-Type {content_type!r} is not accepted here: send {expected} (any web "
            "page may post text/plain and forms to any site, so JSON endpoints refuse them)",
        )

    @staticmethod
    def _unreadable_query(scope: Scope) -> Response | None:
        """A refusal of a query string whose percent-decoded bytes are not UTF-8 (the
        framework would replace them with U+FFFD and search for that)."""
        raw: bytes = scope.get("query_string", b"")
        if raw.isascii() and b"%" not in raw:
            return None
        try:
            unquote_to_bytes(raw.replace(b"+", b" ")).decode("utf-8")
        except UnicodeDecodeError as exc:
            return error_response(
                400,
                "invalid_input",
                f"the query string is not valid UTF-8 ({exc.reason} at byte {exc.start} once "
                "decoded): percent-encode text as UTF-8, e.g. café as caf%C3%A9",
            )
        return None

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
