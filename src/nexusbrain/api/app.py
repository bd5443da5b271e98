"""The ASGI application: routes that parse input, call one Brain method and format the answer."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

import orjson
from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.responses import JSONResponse as FrameworkJSONResponse
from fastapi.responses import StreamingResponse

from nexusbrain import __version__, views
from nexusbrain.api.capture_routes import capture_routes
from nexusbrain.api.errors import install_error_handlers
from nexusbrain.api.graph_routes import graph_routes
from nexusbrain.api.guard import Guard
from nexusbrain.api.monitor import LatencyWindow, Monitor, lifespan
from nexusbrain.api.openapi import BODY, NDJSON_BODY, PARAMETERS, WRITES, answers, document_answers
from nexusbrain.api.responses import (
    BatchOut,
    ConversationOut,
    DeletedOut,
    DocumentHistoryOut,
    DocumentOut,
    ExplanationOut,
    HealthOut,
    ImportOut,
    RecallOut,
    SearchOut,
    StatsOut,
    VersionOut,
    WriteOut,
)
from nexusbrain.api.schemas import (
    FILTER_KINDS,
    HAS_WORDS,
    MAX_QUERY_CHARS,
    TIME,
    TIME_SCHEMA,
    ConversationIn,
    FiltersIn,
    MarkdownBatchIn,
    MarkdownIn,
    MemoryIn,
    RecallIn,
)
from nexusbrain.brain import Brain
from nexusbrain.config import ServerSettings
from nexusbrain.errors import InvalidInput
from nexusbrain.ingest.conversation import sessions_from_json
from nexusbrain.jsonlines import parse_line
from nexusbrain.records import MAX_ID, MarkdownNote, SearchFilters, SearchMode, WriteStatus
from nexusbrain.retrieval.filters import make_filters
from nexusbrain.web import web_routes

DESCRIPTION = (
    "Local-first memory and knowledge server. Every search hit carries its source, span and a "
    'trace of why it ranked. Errors come as `{"error": {"code", "message"}}`.'
)


class JSONResponse(FrameworkJSONResponse):
    """JSON by orjson (a JSON response to the framework, so OpenAPI declares JSON bodies).

    A route that returns a dict has it walked by the framework's jsonable_encoder first, on
    the event loop, holding the GIL: for a search's answer that was ~17% of the server's GIL
    time under 8 clients. The views already build plain JSON values, so the search routes
    return this response, made in their worker thread."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def _filters(body: FiltersIn | None) -> SearchFilters:
    return make_filters(**body.model_dump()) if body else SearchFilters()


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
    _system_routes(app, brain, monitor)
    _ingest_routes(app, brain)
    _search_routes(app, brain)
    _document_routes(app, brain)
    graph_routes(app, brain)
    capture_routes(app, brain)
    web_routes(app, brain, settings.token)
    return app


def _system_routes(app: FastAPI, brain: Brain, monitor: Monitor) -> None:
    @app.get("/health", tags=["system"], **answers(HealthOut, token=False))
    def health() -> dict[str, str]:
        brain.check_database()  # a 503 in the error shape when the database cannot be reached
        return {"status": "ok"}

    @app.get("/version", tags=["system"], **answers(VersionOut))
    def version() -> dict[str, Any]:
        return {"version": __version__, "schema": brain.stats().store.schema_version}

    @app.get("/stats", tags=["system"], **answers(StatsOut))
    def stats() -> dict[str, Any]:
        value = brain.stats()
        store = value.store
        envelope = monitor.envelope_status(store.documents, store.db_bytes, value.rss_bytes)
        return {**views.stats(value), "envelope": envelope}

    @app.get("/export", tags=["system"], **answers(None))
    def export() -> StreamingResponse:
        def lines() -> Iterator[bytes]:
            for record in brain.admin.export():
                yield orjson.dumps(record) + b"\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")

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


def _ingest_routes(app: FastAPI, brain: Brain) -> None:
    @app.post("/ingest/markdown", tags=["ingest"], **answers(WriteOut, *BODY, *WRITES))
    def ingest_markdown(body: MarkdownIn) -> dict[str, Any]:
        result = brain.ingest_markdown(
            body.content,
            title=body.title,
            uri=body.uri,
            domain=body.domain,
            metadata=body.metadata,
        )
        return views.write_result(result)

    @app.post("/ingest/markdown/batch", tags=["ingest"], **answers(BatchOut, *BODY, *WRITES))
    def ingest_markdown_batch(body: MarkdownBatchIn) -> dict[str, Any]:
        """Up to 1,000 documents in one transaction: the fast way to load many."""
        notes = [
            MarkdownNote(d.content, title=d.title, uri=d.uri, domain=d.domain, metadata=d.metadata)
            for d in body.documents
        ]
        results = brain.ingest_markdown_batch(notes)
        counts = {status.value: 0 for status in WriteStatus}
        for result in results:
            counts[result.status.value] += 1
        return {
            "results": [views.write_result(r) for r in results],
            "counts": counts,
            "chunks": sum(r.chunks for r in results),
        }

    @app.post("/add", tags=["ingest"], **answers(WriteOut, *BODY, *WRITES))
    def add(body: MemoryIn) -> dict[str, Any]:
        result = brain.add_memory(body.text, source=body.source, domain=body.domain, tags=body.tags)
        return views.write_result(result)

    @app.post("/ingest/conversation", tags=["ingest"], **answers(ConversationOut, *BODY, *WRITES))
    def ingest_conversation(body: ConversationIn) -> dict[str, Any]:
        sessions = sessions_from_json([s.model_dump(exclude_none=True) for s in body.sessions])
        results = brain.ingest_conversation(
            sessions, domain=body.domain, index_roles=body.index_roles
        )
        return {"results": [views.write_result(r) for r in results]}


Time = Annotated[str | None, Query(description=TIME, json_schema_extra=TIME_SCHEMA)]


def filter_params(
    domain: str | None = None,
    path_prefix: str | None = None,
    document_id: Annotated[int | None, Query(ge=1, le=MAX_ID)] = None,
    kind: Annotated[str | None, Query(json_schema_extra={"enum": FILTER_KINDS})] = None,
    updated_after: Time = None,
    updated_before: Time = None,
) -> SearchFilters:
    return make_filters(
        domain=domain,
        path_prefix=path_prefix,
        document_id=document_id,
        kind=kind,
        updated_after=updated_after,
        updated_before=updated_before,
    )


Filters = Annotated[SearchFilters, Depends(filter_params)]
K = Annotated[int | None, Query(ge=1, le=1000, description="hits; default: the mode's")]
DocumentId = Annotated[int, Path(ge=1, le=MAX_ID, description="the document's id")]
Words = Query(
    description="natural-language query",
    examples=["who rotates the deploy key"],
    json_schema_extra={**HAS_WORDS, "maxLength": MAX_QUERY_CHARS},
)


def _search_routes(app: FastAPI, brain: Brain) -> None:
    @app.get("/search", tags=["retrieval"], **answers(SearchOut, *PARAMETERS, *WRITES))
    def search(
        q: Annotated[str, Words],
        filters: Filters,
        k: K = None,
        mode: SearchMode = SearchMode.BALANCED,
        best_per_document: bool = False,
        graph: Annotated[bool, Query(description="add the top hits' graph context")] = False,
    ) -> JSONResponse:
        hits = brain.search(q, k=k, filters=filters, best_per_document=best_per_document, mode=mode)
        out = views.search(q, mode.value, hits)
        if graph:
            out["graph_context"] = [views.graph_fact(f) for f in brain.graph_context(hits)]
        return JSONResponse(out)

    @app.post("/recall", tags=["retrieval"], **answers(RecallOut, *BODY, *WRITES))
    def recall(body: RecallIn) -> JSONResponse:
        result = brain.recall(
            body.query,
            k=body.k,
            budget_tokens=body.budget_tokens,
            filters=_filters(body.filters),
            mode=body.mode,
            graph=body.graph,
        )
        return JSONResponse(views.recall(result))

    @app.get("/explain", tags=["retrieval"], **answers(ExplanationOut, 404, *PARAMETERS))
    def explain(
        q: Annotated[str, Words],
        doc: Annotated[
            str,
            Query(min_length=1, description="document id, uri or path", examples=["alice.md"]),
        ],
        filters: Filters,
        k: K = None,
        mode: SearchMode = SearchMode.BALANCED,
        best_per_document: bool = False,
    ) -> dict[str, Any]:
        found = brain.explain(
            q, doc, k=k, filters=filters, mode=mode, best_per_document=best_per_document
        )
        return views.explanation(found)


def _document_routes(app: FastAPI, brain: Brain) -> None:
    @app.get("/documents", tags=["documents"], **answers(DocumentOut, 404, *PARAMETERS))
    def find_document(uri: str, chunks: bool = False) -> dict[str, Any]:
        document = brain.find_document(uri)
        return views.document(document, brain.document_chunks(document.id) if chunks else None)

    @app.get(
        "/documents/{document_id}", tags=["documents"], **answers(DocumentOut, 404, *PARAMETERS)
    )
    def get_document(document_id: DocumentId, chunks: bool = False) -> dict[str, Any]:
        document = brain.get_document(document_id)
        return views.document(document, brain.document_chunks(document_id) if chunks else None)

    @app.get(
        "/documents/{document_id}/history",
        tags=["documents"],
        **answers(DocumentHistoryOut, 404, *PARAMETERS),
    )
    def document_history(document_id: DocumentId) -> dict[str, Any]:
        return {"id": document_id, "revisions": brain.document_history(document_id)}

    @app.delete(
        "/documents/{document_id}",
        tags=["documents"],
        **answers(DeletedOut, 404, 415, *PARAMETERS, *WRITES),
    )
    def delete_document(document_id: DocumentId) -> dict[str, Any]:
        retired = brain.delete_document(document_id)
        return {"id": document_id, "status": "retired" if retired else "already_retired"}
