"""Rendering the UI's templates into compressed, locked-down HTML responses."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import Response

from nexusbrain.records import SearchMode
from nexusbrain.web.assets import Assets, negotiated

# Scripts and styles come from /app/static only; API calls go to this origin only.
PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
NAV = (
    ("search", "Search", "/app"),
    ("graph", "Graph", "/app/graph"),
    ("evals", "Evals", "/app/evals"),
    ("status", "Status", "/app/status"),
    ("api", "API", "/docs"),
)


class Pages:
    def __init__(self, assets: Assets, token_set: bool) -> None:
        self.env = Environment(
            loader=PackageLoader("nexusbrain.web", "templates"),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.globals.update(
            static=assets.url, nav=NAV, modes=[m.value for m in SearchMode], token_set=token_set
        )
        self.env.filters.update(metric=_metric, when=_when)

    def render(
        self,
        request: Request,
        template: str,
        *,
        csp: str = PAGE_CSP,
        status_code: int = 200,
        **context: Any,
    ) -> Response:
        html = self.env.get_template(template).render(**context).encode("utf-8")
        headers = {
            "Content-Security-Policy": csp,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-cache",
        }
        return negotiated(request, html, "text/html; charset=utf-8", headers, None, status_code)


def _metric(value: float | str) -> str:
    return f"{value:.4f}" if isinstance(value, float) else value


def _when(text: str) -> str:
    """An ISO-8601 time to the minute: 2026-01-02 03:04."""
    return text[:16].replace("T", " ") if len(text) >= 16 and text[10] == "T" else text
