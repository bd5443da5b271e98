"""PDF (.pdf): the text layer, page by page, read by pypdf (the `pdf` install extra).

- The stored text is the pages' text in order, a blank line between pages (a page with no
  text adds nothing). Each page is cut into paragraphs as plain text is and packed on its
  own, so every chunk lies within one page; its page (from 1) is the chunk's
  ``meta["page"]``, and the document's metadata holds ``pages``, the page count.
- Text is kept as pypdf gives it, with trailing spaces on each line, carriage returns and
  control characters other than tab and line feed taken out (a text layer can hold them, and
  they are no words).
- Refused, with the reason: a file pypdf cannot parse; an encrypted file that does not open
  with the empty password (one locked only against editing opens and is read); a file whose
  pages hold no text (scanned: run OCR first); text over the size limit. The size limit is
  on the stored text, since a PDF's bytes are mostly fonts and images.
- The title is the file's own (its /Title), else its name.
"""

from __future__ import annotations

import io
import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from nexusbrain.config import ChunkingConfig
from nexusbrain.errors import InvalidInput, MissingExtra, TooLarge
from nexusbrain.ingest.chunking import chunk_blocks, paragraphs
from nexusbrain.ingest.formats.base import Extracted

if TYPE_CHECKING:
    from pypdf import PdfReader

_NOISE = re.compile(r"[^\S\n]+(?=\n|$)|[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")
NO_TEXT = "no text layer: scanned? OCR it first (for example: ocrmypdf IN.pdf OUT.pdf)"
ENCRYPTED = (
    "is encrypted and needs a password; save a copy without one"
    " (for example: qpdf --decrypt --password=PASSWORD IN.pdf OUT.pdf)"
)


def extract_pdf(data: bytes, *, name: str, config: ChunkingConfig, max_bytes: int) -> Extracted:
    reader_of = _pypdf()
    try:
        reader = reader_of(io.BytesIO(data))
        locked = reader.is_encrypted and not reader.decrypt("")
        pages = [] if locked else list(_page_texts(reader, name, max_bytes))
        title = "" if locked else _own_title(reader)
    except TooLarge:
        raise
    except Exception as exc:  # pypdf fails on a damaged file in many ways: that file's problem
        raise InvalidInput(f"{name}: cannot read this PDF ({type(exc).__name__}: {exc})") from None
    if locked:
        raise InvalidInput(f"{name}: {ENCRYPTED}")
    text, starts = _joined(pages)
    sections = [paragraphs(text, s, s + len(page)) for s, page in zip(starts, pages, strict=True)]
    spans = chunk_blocks(text, sections, config)
    if not spans:
        raise InvalidInput(f"{name}: {NO_TEXT}")
    numbers = [number for number, page in enumerate(pages, start=1) if page]
    firsts = [starts[number - 1] for number in numbers]
    chunks = tuple(
        replace(s, meta={"page": numbers[bisect_right(firsts, s.char_start) - 1]}) for s in spans
    )
    return Extracted(text, chunks, title=title, metadata={"pages": len(pages)})


def _pypdf() -> type[PdfReader]:
    try:
        from pypdf import PdfReader
    except ImportError:
        raise MissingExtra("pdf", "pypdf") from None
    return PdfReader


def _page_texts(reader: PdfReader, name: str, max_bytes: int) -> Iterator[str]:
    size = 0
    for number, page in enumerate(reader.pages, start=1):
        text = _NOISE.sub("", page.extract_text().replace("\r\n", "\n").replace("\r", "\n"))
        size += len(text.encode("utf-8"))
        if size > max_bytes:
            raise TooLarge(
                f"{name}: its text is over the limit of {max_bytes} bytes"
                f" by page {number} of {len(reader.pages)}"
            )
        yield text if text.strip() else ""


def _own_title(reader: PdfReader) -> str:
    info = reader.metadata
    title = info.title if info is not None else None
    return " ".join(title.split()) if isinstance(title, str) else ""


def _joined(pages: list[str]) -> tuple[str, list[int]]:
    """The pages' text, a blank line between pages, and where each page starts in it."""
    parts: list[str] = []
    starts: list[int] = []
    pos = 0
    for page in pages:
        if page and parts:
            parts.append("\n\n")
            pos += 2
        starts.append(pos)
        parts.append(page)
        pos += len(page)
    return "".join(parts), starts
