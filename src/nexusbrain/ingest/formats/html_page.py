"""HTML (.html, .htm): the page's main text, laid out as plain text with its headings.

- Decoded by the byte order mark, else the charset the page declares in its first 1,024 bytes
  (``<meta charset>`` or ``http-equiv``), else as UTF-8; legacy Latin labels are read as
  windows-1252, as browsers read them. Entities are decoded.
- Dropped with everything inside: script, style, template, noscript, head, svg, canvas,
  iframe and object; nav, aside, form, button, select and textarea; a header or footer that is
  the page's (not inside an article, section, main or aside, as ARIA's banner and contentinfo
  are); and hidden elements (the ``hidden`` attribute, ``aria-hidden="true"``, an inline
  ``display: none`` or ``visibility: hidden``, a role of navigation, banner, contentinfo,
  complementary or search).
- When the page has a ``<main>``, only its text is kept; else, when it has ``<article>``s,
  only theirs; else the whole body's.
- Block elements (p, div, li, tr, blockquote, ...) are paragraphs, separated by a blank line;
  h1-h6 are headings and make the heading path; ``<pre>`` keeps its text as it is and is kept
  whole, as a markdown fence is; ``<br>`` is a line break; table cells are joined by `` | ``.
  Elsewhere runs of whitespace become one space.

The stored text is this laid-out text, and every span points into it. html.parser (the standard
library's, which never refuses a page) reads it: a broken page gives what text it holds.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from html.parser import HTMLParser

from nexusbrain.config import ChunkingConfig
from nexusbrain.errors import InvalidInput, TooLarge
from nexusbrain.ingest.chunking import Block, Kind, chunk_blocks
from nexusbrain.ingest.formats.base import Extracted, Outline

_DROPPED = frozenset(
    "script style template noscript head svg canvas iframe object nav aside form button select"
    " textarea dialog".split()
)
_PAGE_PARTS = frozenset({"header", "footer"})  # the page's banner and footer...
_SCOPES = frozenset({"article", "section", "main", "aside"})  # ...unless inside one of these
_HIDDEN_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_BLOCKS = frozenset(
    "address article aside blockquote body caption center dd details dialog div dl dt fieldset"
    " figcaption figure footer header hgroup hr html legend li main menu nav ol p section"
    " summary table tbody tfoot thead tr ul".split()
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
_CELLS = frozenset({"td", "th"})
_BREAK = "\n"  # inside a paragraph's pieces, <br>; whitespace in text is collapsed to spaces
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.I)
_LATIN = frozenset({"iso8859-1", "ascii", "latin-1", "cp1252"})  # codec names: windows-1252


@dataclass(frozen=True, slots=True)
class _Piece:
    """One paragraph, heading or pre block, and where it was found."""

    kind: Kind
    text: str
    level: int
    in_main: bool
    in_article: bool


def extract_html(data: bytes, *, name: str, config: ChunkingConfig, max_bytes: int) -> Extracted:
    if len(data) > max_bytes:
        raise TooLarge(f"{name}: {len(data)} bytes is over the limit of {max_bytes} bytes")
    reader = _Reader()
    reader.feed(_decoded(data, name))
    reader.close()
    text, blocks, outline = _laid_out(reader.chosen())
    spans = chunk_blocks(text, [blocks], config)
    if not spans:
        raise InvalidInput(
            f"{name}: has no text to index (no visible text outside scripts,"
            " navigation and hidden elements)"
        )
    title = outline.top or reader.title or outline.first
    return Extracted(text, tuple(spans), title=title)


def _decoded(data: bytes, name: str) -> str:
    """The page's text, read as its byte order mark or declared charset says, else as UTF-8."""
    encoding = "utf-8"
    for bom, codec in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (b"\xff\xfe", "utf-16"),
        (b"\xfe\xff", "utf-16"),
    ):
        if data.startswith(bom):
            encoding = codec
            break
    else:
        if declared := _CHARSET.search(data[:1024]):
            encoding = _codec(declared.group(1).decode("ascii"))
    try:
        return data.decode(encoding).replace("\0", "\ufffd")  # as browsers show a NUL
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{name}: not valid {encoding} (byte {exc.start}: {exc.reason}); declare its"
            " charset in a <meta charset> tag or convert it to UTF-8"
        ) from None


def _codec(label: str) -> str:
    try:
        codec = codecs.lookup(label).name
    except LookupError:
        return "utf-8"  # an unknown label: browsers fall back too
    if codec.startswith("utf-16"):
        return "utf-8"  # a page that says UTF-16 without a BOM is not: browsers read UTF-8
    return "cp1252" if codec in _LATIN else codec


class _Reader(HTMLParser):
    """Collects the page's paragraphs, headings and pre blocks, each marked with whether it
    lies in a <main> or an <article>, leaving out what is dropped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[tuple[str, bool]] = []  # open elements, and whether each is dropped
        self.dropped = 0  # how many open elements are dropped
        self.pieces: list[_Piece] = []
        self.parts: list[str] = []  # the text of the paragraph being read
        self.heading = 0  # the level of the heading being read
        self.pre = 0  # how many <pre> are open
        self.counts = {"main": 0, "article": 0}  # how many are open
        self.found = {"main": False, "article": False}
        self.title = ""
        self.in_title = False

    def chosen(self) -> list[_Piece]:
        self._flush()
        if self.found["main"]:
            return [p for p in self.pieces if p.in_main]
        if self.found["article"]:
            return [p for p in self.pieces if p.in_article]
        return self.pieces

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and all(name != "svg" for name, _ in self.open):
            self.in_title = True
        if tag in _VOID:
            if tag == "br" and not self.dropped:
                self.parts.append(_BREAK)
            elif tag == "hr":
                self._flush()
            return
        if tag in _HEADINGS and self.heading:  # a heading ends an open one, as browsers do
            self.handle_endtag(next(n for n, _ in reversed(self.open) if n in _HEADINGS))
        if tag in _BLOCKS or tag in _HEADINGS or tag == "pre":
            self._flush()
        drop = self._drops(tag, dict(attrs))
        self.open.append((tag, drop))
        self.dropped += drop
        if tag in self.counts:
            self.counts[tag] += 1
            self.found[tag] = self.found[tag] or not self.dropped
        if tag in _HEADINGS:
            self.heading = _HEADINGS[tag]
        elif tag == "pre":
            self.pre += 1
        elif tag in _CELLS and self.parts and not self.dropped:
            self.parts.append(" | ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if tag in _VOID or all(name != tag for name, _ in self.open):
            return  # a stray end tag: ignored, as browsers ignore it
        if tag in _BLOCKS or tag in _HEADINGS or tag == "pre":
            self._flush()
        while self.open:  # close what was left open inside it
            name, drop = self.open.pop()
            self.dropped -= drop
            if name in self.counts:
                self.counts[name] -= 1
            if name in _HEADINGS:
                self.heading = 0
            elif name == "pre":
                self.pre -= 1
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title = " ".join((self.title + " " + data).split())
        elif not self.dropped:
            self.parts.append(data)

    def _drops(self, tag: str, attrs: dict[str, str | None]) -> bool:
        if tag in _DROPPED or "hidden" in attrs:
            return True
        if tag in _PAGE_PARTS and not any(name in _SCOPES for name, _ in self.open):
            return True
        if (attrs.get("aria-hidden") or "").strip().lower() == "true":
            return True
        role = (attrs.get("role") or "").strip().lower()
        return role in _HIDDEN_ROLES or bool(_HIDDEN_STYLE.search(attrs.get("style") or ""))

    def _flush(self) -> None:
        raw, self.parts = "".join(self.parts), []
        kind: Kind
        if self.pre:
            text, kind = raw.strip("\n").rstrip(), "fence"
        else:
            lines = (" ".join(line.split()) for line in raw.split(_BREAK))
            text, kind = "\n".join(line for line in lines if line), "text"
        if self.heading:
            text, kind = " ".join(text.split()), "heading"
        if text.strip():
            main, article = self.counts["main"] > 0, self.counts["article"] > 0
            self.pieces.append(_Piece(kind, text, self.heading, main, article))


def _laid_out(pieces: list[_Piece]) -> tuple[str, list[Block], Outline]:
    """The pieces as one text (a blank line between each), its blocks, and its headings."""
    outline = Outline()
    blocks: list[Block] = []
    parts: list[str] = []
    pos = 0
    for piece in pieces:
        if parts:
            parts.append("\n\n")
            pos += 2
        if piece.kind == "heading":
            outline.enter(piece.level, piece.text)
        start = pos + len(piece.text) - len(piece.text.lstrip())
        parts.append(piece.text)
        pos += len(piece.text)
        blocks.append(Block(start, pos, piece.kind, outline.path, piece.level))
    return "".join(parts), blocks, outline
