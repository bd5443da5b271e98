"""Building document drafts and their chunks from text (pure: no I/O, no clock)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nexusbrain.config import ChunkingConfig
from nexusbrain.errors import InvalidInput, TooLarge
from nexusbrain.ingest.chunking import chunk_markdown
from nexusbrain.ingest.frontmatter import (
    FrontMatter,
    parse_front_matter,
    readable_title,
    title_from,
)
from nexusbrain.records import ChunkDraft, DocumentDraft, DocumentKind, json_problem


@dataclass(frozen=True, slots=True)
class Prepared:
    draft: DocumentDraft
    chunks: tuple[ChunkDraft, ...]
    front_matter: Mapping[str, Any]


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def decode_utf8(data: bytes, name: str, max_bytes: int) -> str:
    """The text of a file or field, or a clear error naming it and the reason."""
    if len(data) > max_bytes:
        raise TooLarge(f"{name}: {len(data)} bytes is over the limit of {max_bytes} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{name}: not valid UTF-8 (byte {exc.start}: {exc.reason}); convert it to UTF-8"
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise InvalidInput(f"{name}: is empty (nothing but whitespace)")
    return text


def prepare_markdown(
    text: str,
    *,
    uri: str,
    domain: str,
    config: ChunkingConfig,
    title: str | None = None,
    kind: DocumentKind = DocumentKind.MARKDOWN,
    metadata: Mapping[str, Any] | None = None,
    revision: str | None = None,
) -> Prepared:
    """A markdown document: front matter parsed (not indexed), body chunked."""
    try:
        front = parse_front_matter(text)
    except ValueError as exc:
        raise InvalidInput(f"{uri}: bad front matter: {exc}") from None
    spans = chunk_markdown(text, config, start=front.body_start)
    if not spans:
        raise InvalidInput(f"{uri}: has no text to index outside its front matter")
    problem = json_problem({"uri": uri, "title": title or "", "domain": domain})
    if problem:
        raise InvalidInput(problem)
    draft = DocumentDraft(
        uri=uri,
        title=readable_title(title or "") or title_from(text, front, fallback_title(uri)),
        domain=domain,
        kind=kind,
        revision=revision or content_hash(text.encode("utf-8")),
        content=text,
        metadata=_merged(front, metadata, uri),
    )
    return Prepared(draft, tuple(spans), front.data)


def _merged(front: FrontMatter, metadata: Mapping[str, Any] | None, uri: str) -> dict[str, Any]:
    """The front matter (as `front_matter`) and the given metadata; InvalidInput if the result
    cannot be stored as JSON and read back the same (see records.json_problem)."""
    merged: dict[str, Any] = {}
    if front.data:
        merged["front_matter"] = _jsonable(front.data)
    merged.update(metadata or {})
    problem = json_problem(merged)
    if problem:
        raise InvalidInput(f"{uri}: metadata cannot be stored: {problem}")
    return merged


def _jsonable(value: Any) -> Any:
    """YAML can hold dates and other values JSON lacks (integers beyond 64 bits, .nan, .inf):
    keep them as text."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | str) or json_problem(value) is None:
        return value
    return str(value)


def fallback_title(uri: str) -> str:
    name = uri.rstrip("/").rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name
