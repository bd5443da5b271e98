"""The ASGI application: the operations' routes (api/routes.py), the streams of records
(export, import, captures) and the web UI."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anyio
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
from nexusbrain.errors import BrainError, InvalidInput
from nexusbrain.jsonlines import parse_lines, split_lines
from nexusbrain.operations.spec import View
from nexusbrain.records import ImportResult
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
        """The body is read as the import checks and stages its records, in a worker thread:
        the event loop stays free, and the server's memory does not grow with the body."""
        body = request.stream()

        def pieces() -> Iterator[bytes]:
            while True:
                try:
                    yield anyio.from_thread.run(body.__anext__)
                except StopAsyncIteration:
                    return

        def run() -> ImportResult:
            return brain.admin.import_records(parse_lines(split_lines(pieces())))

        try:
            result = await anyio.to_thread.run_sync(run)
        except BrainError:
            async for _ in body:  # refused early: the rest is read, so the client hears why
                pass
            raise
        if not result.records:
            raise InvalidInput("the import stream is empty: send the lines of an export")
        return views.import_result(result)

    @app.get("/captures", tags=["system"], **answers(None))
    def captures() -> StreamingResponse:
        """Captured queries, one JSON object a line, results with stable ids: the searches
        and recalls the server captured (BRAIN_CAPTURE=1), for `nexusbrain eval replay`."""
        return _lines(brain.admin.captured)


PIECE_BYTES = 256 * 1024  # NDJSON sent at a time


def _lines(records: Callable[[], Iterator[dict[str, Any]]]) -> StreamingResponse:
    """The records as NDJSON, read as the response is sent, in pieces of many lines: the
    server fetches each piece from a worker thread and sends it through the middleware, and
    a piece a line made /export ten times slower than the CLI's export."""

    def lines() -> Iterator[bytes]:
        piece = bytearray()
        for record in records():
            piece += orjson.dumps(record)
            piece += b"\n"
            if len(piece) >= PIECE_BYTES:
                yield bytes(piece)
                piece.clear()
        if piece:
            yield bytes(piece)

    return StreamingResponse(lines(), media_type="application/x-ndjson")
