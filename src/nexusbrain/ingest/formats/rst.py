"""reStructuredText (.rst): section titles make the heading path; directives and literal blocks
are kept whole.

- A section title is a line of text at column 0 under which an adornment line stands (one
  punctuation character repeated, as long as the title or at least 4 long), or an adornment
  line, a title (it may be inset) and a second adornment line like the first. Levels are
  given by the order in which each style (the character, with or without an overline) first
  appears, as docutils gives them.
- Explicit markup, a line opening with ``..`` at column 0 and the indented lines after it,
  is one block: a directive (``.. code-block:: python``, ``.. note::``) is kept whole as a
  markdown fence is; a comment, a hyperlink target (``.. _name: url``) or a substitution
  definition (``.. |name| image:: ...``) shows no words and is in no chunk; a footnote or
  citation (``.. [1] text``) is text.
- A paragraph that ends with ``::`` introduces a literal block: the indented lines after it,
  blank lines included, kept whole.
- Other lines form paragraphs, split at blank lines; an adornment line of 4 or more alone is
  a transition and stays as text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from nexusbrain.config import ChunkingConfig
from nexusbrain.ingest.chunking import Block, Kind, chunk_blocks, line_bounds
from nexusbrain.ingest.formats.base import Extracted, Outline, text_of

_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1+[ \t]*")
_EXPLICIT = re.compile(r"\.\.(?:[ \t]|$)")
_DIRECTIVE = re.compile(r"\.\.[ \t]+[\w:+.-]+::")
_NOTE = re.compile(r"\.\.[ \t]+\[[^\]\s]+\]")  # a footnote or citation


def extract_rst(data: bytes, *, name: str, config: ChunkingConfig, max_bytes: int) -> Extracted:
    text = text_of(data, name, max_bytes)
    scanner = _Scanner(text)
    spans = chunk_blocks(text, [scanner.blocks()], config)
    return Extracted(text, tuple(spans), title=scanner.outline.first)


class _Scanner:
    """Walks the lines once; lives for one call."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = line_bounds(text)
        self.outline = Outline()
        self.styles: list[tuple[str, bool]] = []

    def line(self, i: int) -> str:
        start, end = self.lines[i]
        return self.text[start:end]

    def blocks(self) -> Iterator[Block]:
        i, para, literal_next = 0, -1, False  # para: the open paragraph's first line
        while i < len(self.lines):
            line = self.line(i)
            if not line.strip():
                if para >= 0:
                    literal_next = self.line(i - 1).rstrip().endswith("::")
                    yield self._block(para, i - 1, "text")
                    para = -1
                i += 1
                continue
            step = 0 if para >= 0 else self._title(i)
            if step:
                yield from self._heading(i, step)
            elif para < 0 and ((literal_next and line[0] in " \t") or _EXPLICIT.match(line)):
                step = self._indented(i)
                yield self._block(i, i + step - 1, _explicit_kind(line))
            else:
                para, step = (i if para < 0 else para), 1
            literal_next = False
            i += step
        if para >= 0:
            yield self._block(para, len(self.lines) - 1, "text")

    def _title(self, i: int) -> int:
        """How many lines the section title at line `i` takes (0: none there)."""
        line = self.line(i)
        over = _ADORNMENT.fullmatch(line)
        if over and i + 2 < len(self.lines):
            title, under = self.line(i + 1).strip(), self.line(i + 2).rstrip()
            if title and under == line.rstrip() and len(under) >= len(title):
                return 3
        if line[0] in " \t" or i + 1 >= len(self.lines):
            return 0
        underline = _ADORNMENT.fullmatch(self.line(i + 1))
        width = len(self.line(i + 1).rstrip())
        return 2 if underline and not over and (width >= len(line.rstrip()) or width >= 4) else 0

    def _heading(self, i: int, step: int) -> Iterator[Block]:
        last = self.line(i + step - 1)
        style = (last[0], step == 3)
        if style not in self.styles:
            self.styles.append(style)
        level = self.styles.index(style) + 1
        title = self.line(i + step - 2).strip()
        self.outline.enter(level, " ".join(title.split()))
        yield self._block(i, i + step - 1, "heading")

    def _indented(self, i: int) -> int:
        """How many lines the block opened at line `i` takes: it and every line after it that
        is blank or indented, up to its last non-blank one."""
        end = i
        for j in range(i + 1, len(self.lines)):
            line = self.line(j)
            if line.strip():
                if line[0] not in " \t":
                    break
                end = j
        return end - i + 1

    def _block(self, first: int, last: int, kind: Kind) -> Block:
        start = self.lines[first][0]
        end = self.lines[last][1]
        body = self.text[start:end]
        head, tail = len(body) - len(body.lstrip()), len(body) - len(body.rstrip())
        return Block(start + head, end - tail, kind, self.outline.path)


def _explicit_kind(line: str) -> Kind:
    if not _EXPLICIT.match(line) or _DIRECTIVE.match(line):
        return "fence"  # a literal block or a directive
    return "text" if _NOTE.match(line) else "hidden"
