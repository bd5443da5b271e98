"""The file formats a folder's ingest reads besides markdown, each chosen by its suffix.

Markdown (.md, .markdown) keeps its own path (ingest/documents.py: front matter, the
markdown chunker, the graph edges a note states). Every other format has an extractor
(base.Extractor) that gives the stored text and its chunks; `prepared` makes the document.
A format's `version` goes into each document's revision, so a change to what an extractor
gives re-reads the files it read before, once.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import PurePath

from nexusbrain.config import ChunkingConfig
from nexusbrain.errors import InvalidInput
from nexusbrain.ingest.documents import Prepared, content_hash, fallback_title
from nexusbrain.ingest.formats.asciidoc import extract_asciidoc
from nexusbrain.ingest.formats.base import Extracted, Extractor
from nexusbrain.ingest.formats.code import LANGUAGES, extract_code
from nexusbrain.ingest.formats.html_page import extract_html
from nexusbrain.ingest.formats.pdf import extract_pdf
from nexusbrain.ingest.formats.rst import extract_rst
from nexusbrain.ingest.formats.text import extract_text
from nexusbrain.records import DocumentDraft, DocumentKind, json_problem

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})


@dataclass(frozen=True, slots=True)
class Format:
    kind: DocumentKind
    label: str  # as a reason names it: "install nexusbrain[pdf] to read PDF files"
    extract: Extractor
    version: int = 1  # raise it when the extractor's output changes

    def revision(self, data: bytes) -> str:
        """The revision of a file's document: its bytes as this extractor read them."""
        return content_hash(f"{self.kind.value}/{self.version}\n".encode() + data)


_TEXT = Format(DocumentKind.TEXT, "plain text", extract_text)
_RST = Format(DocumentKind.RST, "reStructuredText", extract_rst)
_ASCIIDOC = Format(DocumentKind.ASCIIDOC, "AsciiDoc", extract_asciidoc)
_HTML = Format(DocumentKind.HTML, "HTML", extract_html)
_PDF = Format(DocumentKind.PDF, "PDF", extract_pdf)

FORMATS: dict[str, Format] = {
    ".txt": _TEXT,
    ".rst": _RST,
    ".adoc": _ASCIIDOC,
    ".asciidoc": _ASCIIDOC,
    ".html": _HTML,
    ".htm": _HTML,
    ".pdf": _PDF,
    **{
        suffix: Format(
            DocumentKind.CODE,
            f"{language} source",
            functools.partial(extract_code, language=language),
        )
        for suffix, language in LANGUAGES.items()
    },
}
SUFFIXES = MARKDOWN_SUFFIXES | FORMATS.keys()


def format_of(path: str | PurePath) -> Format | None:
    """The format of a file other than markdown, by its suffix (None for markdown)."""
    return FORMATS.get(PurePath(path).suffix.lower())


def prepared(
    extracted: Extracted, *, uri: str, domain: str, kind: DocumentKind, revision: str
) -> Prepared:
    """The document of an extracted file (InvalidInput if its fields cannot be stored)."""
    problem = json_problem({"uri": uri, "domain": domain, "metadata": dict(extracted.metadata)})
    if problem:
        raise InvalidInput(f"{uri}: cannot be stored: {problem}")
    draft = DocumentDraft(
        uri=uri,
        title=extracted.title or fallback_title(uri),
        domain=domain,
        kind=kind,
        revision=revision,
        content=extracted.text,
        metadata=extracted.metadata,
    )
    return Prepared(draft, extracted.chunks, {})


def read_file(
    data: bytes, fmt: Format, *, uri: str, domain: str, config: ChunkingConfig, max_bytes: int
) -> Prepared:
    """A file's document, read as its format says; InvalidInput naming it when it cannot be,
    MissingExtra when the format's library is not installed."""
    extracted = fmt.extract(data, name=uri, config=config, max_bytes=max_bytes)
    return prepared(extracted, uri=uri, domain=domain, kind=fmt.kind, revision=fmt.revision(data))
