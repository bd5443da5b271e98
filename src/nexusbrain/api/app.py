"""The ASGI application: the operations' routes (api/routes.py), the streams of records
(export, import, captures) and the web UI."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from nexusbrain import __version__, views
from nexusbrain.api.errors import install_error_handlers
from nexusbrain.api.guard import Guard
from nexusbrain.api.monitor import LatencyWindow, Monitor, lifespan
from nexusbrain.api.openapi import BODY, NDJSON_BODY, WRITES, answers, document_answers
from nexusbrain.api.responses import ImportOut
from nexusbrain.api.routes import JSONResponse, operation_routes
from nexusbrain.brain import Brain
from nexusbrain.config import ServerSettings
from nexusbrain.errors import InvalidInput
from nexusbrain.jsonlines import parse_line
from nexusbrain.operations.spec import View
from nexusbrain.web import web_routes

DESCRIPTION = (
    "Local-first memory and knowledge server. Every search hit carries its source, span and a "
    'trace of why it ranked. Errors come as `{"error": {"code", "message"}}`.'
)


def create_app(brain: Brain, settings: ServerSettings | None = None) -> FastAPI:
    settings = settings or ServerSettings()
    latencies = LatencyWindow()
    monitor = Monitor(brain, settings.envelope, latencies)
    app = FastAPI(
        title="nexusbrain",
        version=__version__,
        description=DESCRIPTION,
        default_response_class=JSONResponse,
        docs_url=None,  # web_routes serves /docs itself, with no CDN (web/api_docs.py)
        redoc_url=None,
        lifespan=lifespan(monitor, settings.envelope_check_seconds),
    )
    document_answers(app, token=bool(settings.token))
    install_error_handlers(app)
    app.add_middleware(Guard, settings=settings, latencies=latencies)
    app.state.brain = brain

    def envelope(view: View) -> View:
        """The server's own status beside the brain's counts."""
        status = monitor.envelope_status(view["documents"], view["db_bytes"], view["rss_bytes"])
        return {**view, "envelope": status}

    operation_routes(app, brain, {"stats": envelope})
    _record_routes(app, brain)
    web_routes(app, brain, settings.token)
    return app


def _record_routes(app: FastAPI, brain: Brain) -> None:
    """The streams of records: NDJSON, one JSON object a line."""

    @app.get("/export", tags=["system"], **answers(None))
    def export() -> StreamingResponse:
        return _lines(brain.admin.export)

    @app.post(
        "/import",
        tags=["system"],
        openapi_extra=NDJSON_BODY,
        **answers(ImportOut, 409, *BODY, *WRITES),
    )
    async def import_(request: Request) -> dict[str, Any]:
        records = [record async for record in _ndjson(request)]
        if not records:
            raise InvalidInput("the import stream is empty: send the lines of an export")
        return views.import_result(brain.admin.import_records(records))

    @app.get("/captures", tags=["system"], **answers(None))
    def captures() -> StreamingResponse:
        """Captured queries, one JSON object a line, results with stable ids: the searches
        and recalls the server captured (BRAIN_CAPTURE=1), for `nexusbrain eval replay`."""
        return _lines(brain.admin.captured)


def _lines(records: Callable[[], Iterator[dict[str, Any]]]) -> StreamingResponse:
    """The records as NDJSON, read as the response is sent."""

    def lines() -> Iterator[bytes]:
        for record in records():
            yield orjson.dumps(record) + b"\n"

    return StreamingResponse(lines(), media_type="application/x-ndjson")


async def _ndjson(request: Request) -> AsyncIterator[dict[str, Any]]:
    """The records of an NDJSON body as it arrives. A piece without a line break is only
    appended (splitting the whole buffer each time made one long line quadratic)."""
    buffer = bytearray()
    line_number = 0
    async for piece in request.stream():
        buffer += piece
        if b"\n" not in piece:
            continue
        *lines, rest = bytes(buffer).split(b"\n")
        buffer = bytearray(rest)
        for line in lines:
            line_number += 1
            if line.strip():
                yield parse_line(line, line_number)
    if buffer.strip():
        yield parse_line(bytes(buffer), line_number + 1)
