"""What every extractor gives, and the checks that the text formats share (pure: no I/O).

An extractor turns a file's bytes into the text a document stores and the chunks cut from it;
every chunk's span points into that text. It raises InvalidInput naming the file and the reason
when it cannot read one (the folder's run reports it and goes on), and MissingExtra when the
library it needs is not installed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from nexusbrain.config import ChunkingConfig
from nexusbrain.errors import InvalidInput
from nexusbrain.ingest.documents import decode_utf8
from nexusbrain.records import ChunkDraft


@dataclass(frozen=True, slots=True)
class Extracted:
    """A file as a document: `text` is what the document stores (for HTML and PDF, the text
    taken out of the file), and each chunk's text is text[char_start:char_end]."""

    text: str
    chunks: tuple[ChunkDraft, ...]
    title: str = ""  # "" for the file's name
    metadata: Mapping[str, Any] = field(default_factory=dict)  # e.g. the language, the pages


class Extractor(Protocol):
    def __call__(
        self, data: bytes, *, name: str, config: ChunkingConfig, max_bytes: int
    ) -> Extracted: ...


def text_of(data: bytes, name: str, max_bytes: int) -> str:
    """The text of a file in a text format: as documents.decode_utf8 reads it (within the size
    limit, UTF-8, no BOM, not blank), and not binary: text never holds a NUL byte."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InvalidInput(f"{name}: is UTF-16 text; convert it to UTF-8")
    if b"\0" in data:
        raise InvalidInput(f"{name}: holds NUL bytes, so it is a binary file, not text")
    return decode_utf8(data, name, max_bytes)


class Outline:
    """The heading path while a scanner walks a document: a level-n heading closes the
    headings of level n and deeper, then opens itself."""

    def __init__(self) -> None:
        self._open: list[tuple[int, str]] = []
        self.first = ""  # the first heading's text: the title when nothing names one
        self.top = ""  # the first level-1 heading's text

    def enter(self, level: int, title: str) -> tuple[str, ...]:
        while self._open and self._open[-1][0] >= level:
            self._open.pop()
        self._open.append((level, title))
        self.first = self.first or title
        self.top = self.top or (title if level == 1 else "")
        return self.path

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(title for _, title in self._open)
