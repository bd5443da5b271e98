"""Markdown-aware chunking: cut a document into retrieval-sized spans (pure, linear time).

The rules, in the order they apply:

1. Blocks. From `start` on, lines (ended by ``\n``, ``\r\n`` or ``\r``) group into blocks:
   an ATX heading line (``#``..``######``, at most 3 leading spaces) is one block; a fenced
   code block (``` or ~~~, 3+ characters, closed by a fence of the same character at least as
   long; unclosed, it runs to the end) is one atomic block, blank and ``#`` lines included;
   other lines form paragraphs, split at blank lines. A paragraph followed by a ``===`` or
   ``---`` underline is a setext heading (level 1 or 2) and becomes one heading block, unless
   the paragraph opens like a list item or quote; a ``---``/``***``/``___`` line that is not
   an underline is a thematic break, a block of its own. Blocks are trimmed of surrounding
   whitespace, so chunks are too. Headings before `start` are not seen.
2. Long blocks. A non-fence block over `max_chars` is cut at sentence ends (``.``, ``?`` or
   ``!`` followed by whitespace), a sentence still over `max_chars` at whitespace, and a word
   still over it into `max_chars` slices; the pieces are blocks for packing. A fence is never
   cut, however long.
3. Packing. Blocks join the open chunk while it stays within `target_chars`; a block that does
   not fit starts a new chunk (so a block between `target_chars` and `max_chars` is a chunk of
   its own). A heading starts a new chunk and is its first line. There is no tail merging:
   the last chunk of a section may be small.
4. Headings are never left alone. While a chunk holds only heading lines, the next block
   (heading or not) joins it whatever `target_chars` says, as long as the chunk stays within
   `max_chars` (or the block is a fence over `max_chars` by itself). So a heading directly
   followed by a sub-heading shares a chunk with the sub-heading and its first text; a
   heading-only chunk remains only at the end of the text or before a block too big to join.
5. Heading path. Headings form a stack (a new level-n heading pops levels >= n). A chunk's
   `heading_path` is the stack at its last block: a chunk that starts with its own heading
   ends its path with that heading's text, and a chunk of glued headings (rule 4) has the
   path of the last of them.

6. Markup. A paragraph that shows no words when rendered (link reference definitions,
   badges and images, HTML tags and comments) or only points elsewhere (a list whose items
   are links: tables of contents, "See also"; ingest/markup.py) is in no chunk. It ends the
   open chunk; a list's visible words become that chunk's `context` (the next chunk's, when
   it comes first), which the lexical index weighs low and the embedder never sees. A text
   that is all markup is chunked as it is, so nothing is refused for it.

Hence: spans are ordered, never overlap, cover every non-whitespace character from `start`
on outside the markup of rule 6, and none is over `max_chars` unless it holds a fence that
is over `max_chars` by itself.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from nexusbrain.config import ChunkingConfig
from nexusbrain.ingest.markup import Markup, classify, visible
from nexusbrain.records import ChunkDraft

_BREAK = re.compile(r"\r\n|\r|\n")
_ATX_OPEN = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*")
_THEMATIC = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*")  # thematic break
_NOT_SETEXT = re.compile(r" {0,3}(?:[-+*>]|\d{1,9}[.)])(?:[ \t]|$)")
_SENTENCE_GAP = re.compile(r"(?<=[.?!])\s+")
_WORD_GAP = re.compile(r"\s+")
# a line break, then one or more blank lines: what separates paragraphs
_BLANK_LINES = re.compile(r"(?:\r\n|\r|\n)(?:[^\S\r\n]*(?:\r\n|\r|\n))+")

Kind = Literal["heading", "text", "fence", "hidden", "navigation"]
_MARKUP: dict[Markup, Kind] = {Markup.HIDDEN: "hidden", Markup.NAVIGATION: "navigation"}
DEFAULT_CHUNKING = ChunkingConfig()


@dataclass(frozen=True, slots=True)
class Heading:
    level: int  # 1..6
    text: str  # without markers, stripped
    char_start: int


@dataclass(frozen=True, slots=True)
class Block:
    """A stretch of the text that packing (rules 2-5) takes as one piece: a heading, a
    paragraph, a fence (never cut), or markup that no chunk takes in (rule 6). Other formats
    (ingest/formats/) cut their text into blocks of their own and pack them the same way."""

    start: int
    end: int  # exclusive; the block's text is trimmed of surrounding whitespace
    kind: Kind
    path: tuple[str, ...]  # the heading path in force at the block (its own, for a heading)
    level: int = 0  # heading level; 0 for other blocks
    shown: str = ""  # a navigation block's visible words


@dataclass(frozen=True, slots=True)
class _Open:
    """The chunk being packed."""

    start: int
    end: int
    path: tuple[str, ...]
    headings_only: bool
    context: tuple[str, ...] = ()


def chunk_markdown(
    text: str, config: ChunkingConfig = DEFAULT_CHUNKING, *, start: int = 0
) -> list[ChunkDraft]:
    """The chunks of `text` from offset `start` on (offsets and lines are into all of `text`)."""
    if not 0 <= start <= len(text):
        raise ValueError(f"start={start} is outside the text (length {len(text)})")
    return chunk_blocks(text, [_blocks(text, start)], config)


def chunk_blocks(
    text: str, sections: Iterable[Iterable[Block]], config: ChunkingConfig = DEFAULT_CHUNKING
) -> list[ChunkDraft]:
    """The chunks packed from each section's blocks (in text order) by rules 2-6; no chunk
    takes in blocks of two sections (a PDF's pages). Ordinals run on across sections."""
    line_ends = [m.end() for m in _BREAK.finditer(text)]
    packed = (
        chunk
        for blocks in sections
        for chunk in _pack(_split_long(_indexed(blocks), text, config.max_chars), config)
    )
    return [_span(text, line_ends, ordinal, chunk) for ordinal, chunk in enumerate(packed)]


def paragraphs(
    text: str, start: int = 0, end: int | None = None, path: tuple[str, ...] = ()
) -> Iterator[Block]:
    """The paragraphs of text[start:end] (runs of lines between blank lines, trimmed) as text
    blocks: plain text has no other structure."""
    stop = len(text) if end is None else end
    for s, e in _between(_BLANK_LINES, text, start, stop):
        body = text[s:e]
        head, tail = len(body) - len(body.lstrip()), len(body.rstrip())
        if head < tail:
            yield Block(s + head, s + tail, "text", path)


def line_bounds(text: str) -> list[tuple[int, int]]:
    """The (start, end) offsets of each line of `text`, its break left out; lines end at
    ``\n``, ``\r\n`` or ``\r``, as every span counts them."""
    bounds, pos = [], 0
    for m in _BREAK.finditer(text):
        bounds.append((pos, m.start()))
        pos = m.end()
    if pos < len(text):
        bounds.append((pos, len(text)))
    return bounds


def _indexed(blocks: Iterable[Block]) -> Iterator[Block]:
    """The blocks, or, when every one of them is markup, all of them as text: a text that is
    all markup is indexed as it is (rule 6), so nothing is refused for it."""
    found = list(blocks)
    if not any(b.kind in ("heading", "text", "fence") for b in found):
        found = [replace(b, kind="text") for b in found]
    return iter(found)


def iter_markup(text: str, *, start: int = 0) -> Iterator[tuple[int, int]]:
    """The (start, end) offsets of the hidden and navigation blocks that `chunk_markdown`
    leaves out of every chunk's span."""
    found = list(_blocks(text, start))
    if any(b.kind in ("heading", "text", "fence") for b in found):
        yield from ((b.start, b.end) for b in found if b.kind in _MARKUP.values())


def iter_headings(text: str, *, start: int = 0) -> Iterator[Heading]:
    """The ATX and setext headings of `text` from `start` on, skipping fenced code."""
    for block in _blocks(text, start):
        if block.kind == "heading":
            yield Heading(block.level, block.path[-1], block.start)


def _span(text: str, line_ends: Sequence[int], ordinal: int, chunk: _Open) -> ChunkDraft:
    context = "\n".join(chunk.context)
    return span_of(text, line_ends, ordinal, (chunk.start, chunk.end), chunk.path, context)


def span_of(
    text: str,
    line_ends: Sequence[int],
    ordinal: int,
    bounds: tuple[int, int],
    path: tuple[str, ...],
    context: str = "",
) -> ChunkDraft:
    """The chunk text[start:end] with its lines; `line_ends` are the offsets just past each
    line break of `text` (where each line after the first starts), in order."""
    start, end = bounds
    return ChunkDraft(
        ordinal=ordinal,
        char_start=start,
        char_end=end,
        line_start=bisect_right(line_ends, start) + 1,
        line_end=bisect_right(line_ends, end - 1) + 1,
        heading_path=path,
        text=text[start:end],
        context=context,
    )


# --- packing ---------------------------------------------------------------------------


def _pack(blocks: Iterator[Block], config: ChunkingConfig) -> Iterator[_Open]:
    current: _Open | None = None
    waiting: tuple[str, ...] = ()  # navigation words met before any chunk
    for block in blocks:
        if block.kind in ("hidden", "navigation"):
            shown = (block.shown,) if block.shown else ()
            if current is None:
                waiting += shown
                continue
            yield replace(current, context=current.context + shown)
            current = None  # a chunk's span never takes in a block left out
            continue
        if current is not None and _joins(current, block, config):
            headings_only = current.headings_only and block.kind == "heading"
            current = replace(current, end=block.end, path=block.path, headings_only=headings_only)
            continue
        if current is not None:
            yield current
        current = _Open(block.start, block.end, block.path, block.kind == "heading", waiting)
        waiting = ()
    if current is not None:
        yield current


def _joins(current: _Open, block: Block, config: ChunkingConfig) -> bool:
    size = block.end - current.start
    if current.headings_only:
        huge_fence = block.kind == "fence" and block.end - block.start > config.max_chars
        return size <= config.max_chars or huge_fence
    return block.kind != "heading" and size <= config.target_chars


# --- long blocks -----------------------------------------------------------------------


def _split_long(blocks: Iterator[Block], text: str, max_chars: int) -> Iterator[Block]:
    for block in blocks:
        if block.kind not in ("text", "heading") or block.end - block.start <= max_chars:
            yield block
            continue
        for start, end in _pieces(text, block.start, block.end, max_chars, 0):
            yield Block(start, end, block.kind, block.path, block.level)


def _pieces(
    text: str, start: int, end: int, max_chars: int, depth: int
) -> Iterator[tuple[int, int]]:
    """Non-whitespace-bounded pieces of text[start:end], none over `max_chars`."""
    if end - start <= max_chars:
        yield start, end
    elif depth == 2:
        yield from ((s, min(s + max_chars, end)) for s in range(start, end, max_chars))
    else:
        gap = _SENTENCE_GAP if depth == 0 else _WORD_GAP
        for s, e in _between(gap, text, start, end):
            yield from _pieces(text, s, e, max_chars, depth + 1)


def _between(gap: re.Pattern[str], text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """The stretches of text[start:end] between matches of `gap`."""
    pos = start
    for m in gap.finditer(text, start, end):
        yield pos, m.start()
        pos = m.end()
    yield pos, end


# --- blocks ----------------------------------------------------------------------------


def _blocks(text: str, start: int) -> Iterator[Block]:
    scanner = _Scanner(text)
    pos = start
    for m in _BREAK.finditer(text, start):
        yield from scanner.line(pos, m.start())
        pos = m.end()
    if pos < len(text):
        yield from scanner.line(pos, len(text))
    yield from scanner.finish()


class _Scanner:
    """Line-by-line block recogniser; lives for one call, so the functions using it stay pure."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.stack: list[tuple[int, str]] = []
        self.path: tuple[str, ...] = ()
        self.para: tuple[int, int] | None = None  # open paragraph (trimmed start, end)
        self.para_may_be_setext = False
        self.fence: tuple[int, int, str, int] | None = None  # start, end, char, length

    def line(self, ls: int, le: int) -> Iterator[Block]:
        line = self.text[ls:le]
        if self.fence is not None:
            yield from self._fence_line(self.fence, line, ls)
            return
        head = len(line) - len(line.lstrip())
        if head == len(line):
            yield from self._close_para()
            return
        start, end = ls + head, ls + len(line.rstrip())
        if atx := _ATX_OPEN.match(line):
            yield from self._close_para()
            yield self._heading(len(atx.group(1)), _atx_text(line[atx.end() :]), start, end)
        elif fence := _fence_open(line):
            yield from self._close_para()
            self.fence = (start, end, fence[0], len(fence))
        elif self.para is None and _THEMATIC.fullmatch(line):
            yield Block(start, end, "text", self.path)
        else:
            yield from self._text_line(line, start, end)

    def finish(self) -> Iterator[Block]:
        if self.fence is not None:
            yield Block(self.fence[0], self.fence[1], "fence", self.path)
            self.fence = None
        yield from self._close_para()

    def _text_line(self, line: str, start: int, end: int) -> Iterator[Block]:
        if self.para is None:
            self.para = (start, end)
            self.para_may_be_setext = _NOT_SETEXT.match(line) is None
        elif self.para_may_be_setext and (underline := _SETEXT.fullmatch(line)):
            level = 1 if underline.group(1)[0] == "=" else 2
            para_start, para_end = self.para
            self.para = None
            yield self._heading(level, _joined(self.text[para_start:para_end]), para_start, end)
        elif _THEMATIC.fullmatch(line):
            yield from self._close_para()
            yield Block(start, end, "text", self.path)
        else:
            self.para = (self.para[0], end)

    def _fence_line(self, fence: tuple[int, int, str, int], line: str, ls: int) -> Iterator[Block]:
        fence_start, fence_end, char, length = fence
        close = _FENCE_CLOSE.fullmatch(line)
        if line.strip():
            fence_end = ls + len(line.rstrip())
        if close and close.group(1)[0] == char and len(close.group(1)) >= length:
            self.fence = None
            yield Block(fence_start, fence_end, "fence", self.path)
        else:
            self.fence = (fence_start, fence_end, char, length)

    def _close_para(self) -> Iterator[Block]:
        if self.para is not None:
            start, end = self.para
            paragraph = self.text[start:end]
            markup = classify(paragraph)
            kind = _MARKUP.get(markup, "text")
            shown = visible(paragraph) if markup is Markup.NAVIGATION else ""
            yield Block(start, end, kind, self.path, shown=shown)
            self.para = None

    def _heading(self, level: int, title: str, start: int, end: int) -> Block:
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        self.stack.append((level, title))
        self.path = tuple(t for _, t in self.stack)
        return Block(start, end, "heading", self.path, level)


def _fence_open(line: str) -> str:
    """The opening fence run of `line` ('' when the line opens no fence)."""
    m = _FENCE_OPEN.fullmatch(line)
    if m is None or (m.group(1)[0] == "`" and "`" in m.group(2)):
        return ""
    return m.group(1)


def _atx_text(rest: str) -> str:
    """Heading text after the opening '#'s, without an optional closing run of '#'s."""
    body = rest.strip(" \t")
    bare = body.rstrip("#")
    if not bare or (bare != body and bare[-1] in " \t"):
        body = bare
    return body.strip()


def _joined(paragraph: str) -> str:
    return " ".join(line.strip() for line in _BREAK.split(paragraph))
