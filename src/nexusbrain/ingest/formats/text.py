"""Plain text (.txt): paragraphs, and nothing read as markup.

A .txt file is not markdown, so none of markdown's syntax applies: a line opening with ``#``
(a shell comment, "#1 priority") is not a heading, a ``---`` first line does not open front
matter (read as markdown, a file that opens with a rule and has a second one further down loses
its first lines to "front matter", or is refused when they are not YAML), a paragraph of
``<angle brackets>`` is not hidden, and fenced code is not kept whole. Its paragraphs (runs of
lines between blank lines) are packed into chunks as markdown's are, long ones cut at sentence
ends (ingest/chunking.py, rules 2 and 3).
"""

from __future__ import annotations

from nexusbrain.config import ChunkingConfig
from nexusbrain.ingest.chunking import chunk_blocks, paragraphs
from nexusbrain.ingest.formats.base import Extracted, text_of


def extract_text(data: bytes, *, name: str, config: ChunkingConfig, max_bytes: int) -> Extracted:
    text = text_of(data, name, max_bytes)
    spans = chunk_blocks(text, [paragraphs(text)], config)
    return Extracted(text, tuple(spans))
