"""The web UI's static files, served from package data.

Each file's URL carries a hash of its content (`/app/static/app.js?v=...`), so a browser may
keep it until the file changes. Bodies are gzip-compressed once, at start, and sent compressed
to browsers that accept gzip; HTML pages are compressed per response the same way.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response

from nexusbrain.errors import NotFound

STATIC_PATH = "/app/static"
MEDIA_TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
FOREVER = "private, max-age=31536000, immutable"


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    gzipped: bytes
    media_type: str
    version: str  # the first 12 hex digits of the body's sha256


class Assets:
    """The static files by name (`app.css`), loaded once."""

    def __init__(self, files: Mapping[str, bytes]) -> None:
        self._assets = {
            name: Asset(
                body,
                gzip.compress(body, compresslevel=9, mtime=0),
                MEDIA_TYPES[name[name.rfind(".") :]],
                hashlib.sha256(body).hexdigest()[:12],
            )
            for name, body in files.items()
        }

    @classmethod
    def from_package(cls) -> Assets:
        folder = resources.files("nexusbrain.web") / "static"
        return cls(
            {
                item.name: item.read_bytes()
                for item in folder.iterdir()
                if item.is_file() and item.name[item.name.rfind(".") :] in MEDIA_TYPES
            }
        )

    def url(self, name: str) -> str:
        return f"{STATIC_PATH}/{name}?v={self._assets[name].version}"

    def response(self, name: str, request: Request) -> Response:
        asset = self._assets.get(name)
        if asset is None:
            raise NotFound(f"no static file {name!r} in the web UI")
        fresh = request.query_params.get("v") == asset.version
        headers = {"Cache-Control": FOREVER if fresh else "no-cache"}
        return negotiated(request, asset.body, asset.media_type, headers, asset.gzipped)


def accepts_gzip(request: Request) -> bool:
    for part in request.headers.get("accept-encoding", "").split(","):
        coding, _, params = part.strip().partition(";")
        if coding.strip().lower() in ("gzip", "*"):
            quality = params.strip().removeprefix("q=").strip()
            return quality == "" or _positive(quality)
    return False


def negotiated(
    request: Request,
    body: bytes,
    media_type: str,
    headers: Mapping[str, str] | None = None,
    gzipped: bytes | None = None,
    status_code: int = 200,
) -> Response:
    """`body` as it is, or gzip-compressed when the request accepts gzip."""
    out = {**(headers or {}), "Vary": "Accept-Encoding"}
    if accepts_gzip(request):
        out["Content-Encoding"] = "gzip"
        body = gzipped if gzipped is not None else gzip.compress(body, mtime=0)
    return Response(body, status_code=status_code, media_type=media_type, headers=out)


def _positive(quality: str) -> bool:
    try:
        return float(quality) > 0
    except ValueError:
        return False
