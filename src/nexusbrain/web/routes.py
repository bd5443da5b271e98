"""The web UI at /app, served by the API's own process.

Pages are rendered on the server from autoescaped Jinja templates, and their small scripts
fetch the same JSON API every client uses (`/search`, `/explain`, `/documents/...`,
`/graph/...`, `/stats`), so the UI holds no logic beyond presentation. The evals page is
rendered here from the eval files, which have no API; the API's reference at /docs from the
app's OpenAPI schema. See docs/design/web.md.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response

from nexusbrain.brain import Brain
from nexusbrain.config import evals_dir
from nexusbrain.errors import NotFound
from nexusbrain.records import SearchMode
from nexusbrain.web import markdown
from nexusbrain.web.api_docs import api_docs
from nexusbrain.web.assets import Assets
from nexusbrain.web.eval_files import PLOTS, plot_path, read_eval_files
from nexusbrain.web.eval_intervals import report_intervals
from nexusbrain.web.login import login_routes
from nexusbrain.web.pages import Pages

PLOT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def web_routes(app: FastAPI, brain: Brain, token: str | None = None) -> None:
    """Serve the web UI under /app, and the API's reference at /docs, on `app`; `token` is
    the server's API token, if any. `app` is made with `docs_url=None, redoc_url=None`."""
    assets = Assets.from_package()
    pages = Pages(assets, token_set=bool(token))
    router = APIRouter(prefix="/app", include_in_schema=False)
    _search_pages(router, pages, brain)
    _info_pages(router, pages, brain)
    login_routes(router, pages, token)

    @router.get("/static/{name}")
    def static(name: str, request: Request) -> Response:
        return assets.response(name, request)

    @router.get("/{rest:path}")
    def unknown(request: Request, rest: str) -> Response:  # last: after every real page
        message = f"The web UI has no page /app/{rest}."
        return not_found(pages, request, "", "No such page", message)

    @app.get("/docs", include_in_schema=False)
    def reference(request: Request) -> Response:
        docs = api_docs(app.openapi(), str(request.base_url), bool(token))
        return pages.render(request, "api_docs.html", page="api", docs=docs)

    app.include_router(router)


def _search_pages(router: APIRouter, pages: Pages, brain: Brain) -> None:
    @router.get("")
    def search(
        request: Request,
        q: str = "",
        mode: str = SearchMode.BALANCED.value,
        k: str = "",
        domain: str = "",
        path_prefix: str = "",
    ) -> Response:
        store = brain.stats().store
        return pages.render(
            request,
            "search.html",
            page="search",
            q=q,
            mode=mode,
            k=k,
            domain=domain,
            path_prefix=path_prefix,
            documents=store.documents,
            chunks=store.chunks,
        )

    @router.get("/doc/{document_id}")
    def document(
        request: Request, document_id: str, chunk: int | None = None, q: str = "", mode: str = ""
    ) -> Response:
        try:
            found = brain.get_document(int(document_id))
        except (ValueError, NotFound):
            return not_found(
                pages,
                request,
                "search",
                "No such document",
                f"There is no document {document_id} in this brain.",
            )
        return pages.render(
            request,
            "document.html",
            page="search",
            document_id=found.id,
            chunk=chunk,
            q=q,
            mode=mode,
        )

    @router.get("/graph")
    def graph(request: Request, entity: str = "", as_of: str = "") -> Response:
        if entity.strip():
            try:
                entity = brain.graph.entity(entity.strip()).name
            except NotFound:
                message = f"No entity named “{entity.strip()}” is in the graph."
                return not_found(pages, request, "graph", "No such entity", message, entity=entity)
        return pages.render(request, "graph.html", page="graph", entity=entity, as_of=as_of)


def not_found(
    pages: Pages, request: Request, page: str, heading: str, message: str, entity: str = ""
) -> Response:
    """The UI's 404 page: what is missing, and where to go instead."""
    return pages.render(
        request,
        "not_found.html",
        status_code=404,
        page=page,
        heading=heading,
        message=message,
        entity=entity,
    )


def _info_pages(router: APIRouter, pages: Pages, brain: Brain) -> None:
    @router.get("/evals")
    def evals(request: Request) -> Response:
        files = read_eval_files(evals_dir())
        report = None if files.report is None else markdown.render(files.report, heading_shift=2)
        version = int(files.plot.stat().st_mtime) if files.plot else 0
        return pages.render(
            request,
            "evals.html",
            page="evals",
            files=files,
            report=report,
            intervals=report_intervals(files.report or ""),
            plot_version=version,
        )

    @router.get("/evals/plot")
    def plot() -> Response:
        folder = evals_dir()
        path = plot_path(folder)
        if path is None:
            raise NotFound(f"no eval compare plot in {folder}: run `nexusbrain eval compare`")
        headers = {
            "Content-Security-Policy": PLOT_CSP,
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-cache",
        }
        return Response(path.read_bytes(), media_type=PLOTS[path.name], headers=headers)

    @router.get("/status")
    def status(request: Request) -> Response:
        embedder = brain.stats().embedder
        return pages.render(
            request,
            "status.html",
            page="status",
            profile=embedder.profile.value,
            model_id=embedder.model_id,
            dim=embedder.dim,
        )
