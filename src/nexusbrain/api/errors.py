"""One error shape for every failure: `{"error": {"code": ..., "message": ...}}`."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import h11
import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException
from starlette.routing import Match
from uvicorn.protocols.http.h11_impl import H11Protocol

from nexusbrain.errors import (
    BrainError,
    Busy,
    ConfigError,
    Conflict,
    Full,
    InvalidInput,
    MissingExtra,
    ModelUnavailable,
    NotFound,
    StorageError,
    TooLarge,
    Unavailable,
)
from nexusbrain.records import MAX_JSON_DEPTH

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 64 * 1024  # a request's line and headers: what h11 buffers of them

STATUS: dict[type[BrainError], int] = {
    Busy: 503,
    Unavailable: 503,
    Full: 507,
    NotFound: 404,
    TooLarge: 413,
    InvalidInput: 400,
    Conflict: 409,
    ConfigError: 500,
    MissingExtra: 501,
    ModelUnavailable: 503,
    StorageError: 500,
}
_HTTP_CODES = {
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
}
RETRY_BUSY = {"Retry-After": "1"}  # seconds: a busy writer holds the lock for moments


def error_response(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    # A message that echoes a lone surrogate ("\ud800") is sent with it escaped.
    text = message.encode("utf-8", "backslashreplace").decode("utf-8")
    body = orjson.dumps({"error": {"code": code, "message": text}})
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def status_of(exc: BrainError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = err.get("loc", ())
        kind = err.get("type")
        if kind == "json_invalid":  # loc is ("body", character offset)
            at = loc[1] if len(loc) > 1 else "?"
            reason = (err.get("ctx") or {}).get("error", "not JSON")
            parts.append(f"the body is not valid JSON: {reason} at character {at}")
            continue
        where = ".".join(str(p) for p in loc if p != "body") or "body"
        if kind in ("model_attributes_type", "dict_type"):
            got = type(err.get("input")).__name__
            parts.append(f"{where}: expected a JSON object, got {_JSON_NAMES.get(got, got)}")
            continue
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


_JSON_NAMES = {"list": "an array", "str": "a string", "int": "a number", "float": "a number"}
_JSON_NAMES |= {"bool": "true or false", "NoneType": "null", "bytes": "bytes"}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(BrainError)
    async def brain_error(_: Request, exc: BrainError) -> Response:
        status = status_of(exc)
        if isinstance(exc, Busy):
            return _busy(exc.message)
        if status == 503:
            return error_response(503, exc.code, exc.message, RETRY_BUSY)
        if status >= 500:
            log.error("%s: %s", exc.code, exc.message)
        return error_response(status, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> Response:
        return error_response(422, "invalid_input", _validation_message(exc))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        if exc.status_code == 400 and isinstance(exc.__cause__, RecursionError):
            return error_response(
                400,
                "invalid_input",
                "the body's JSON is nested too deeply to read: a request may nest values at"
                f" most {MAX_JSON_DEPTH} levels deep",
            )
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        headers = exc.headers
        if exc.status_code == 405:
            headers = {**(headers or {}), "Allow": allowed_methods(request)}
        return error_response(exc.status_code, code, str(exc.detail), headers)

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> Response:
        log.exception("unexpected error")
        return error_response(500, "internal_error", f"internal error: {type(exc).__name__}")


def allowed_methods(request: Request) -> str:
    """Every method the request's path takes, for a 405's Allow header (RFC 9110 says it must
    list them). The framework names only those of the first route on the path: a path with
    GET and DELETE routes answered OPTIONS with `Allow: GET`."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches(request.scope)
        if match is not Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return ", ".join(sorted(methods))


def _busy(message: str) -> Response:
    text = f"the database is busy with another writer, nothing was changed: retry ({message})"
    return error_response(503, Busy.code, text, RETRY_BUSY)


class ShapedH11(H11Protocol):
    """uvicorn's HTTP/1.1, its refusals of what is not a request (a request line or headers
    over MAX_HEAD_BYTES, bytes that are not HTTP) in the error shape instead of plain text."""

    def send_400_response(self, msg: str) -> None:
        buffered = len(self.conn.trailing_data[0])
        if buffered >= MAX_HEAD_BYTES:
            message = (
                f"the request line and headers are over the limit of {MAX_HEAD_BYTES:,} bytes:"
                " send long text in a JSON body (POST), not in the URL"
            )
        else:
            message = "the request is not valid HTTP/1.1"
        shaped = error_response(400, "invalid_input", message)
        headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=bytes(shaped.body)),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event) or b"")
        self.transport.close()
