"""AsciiDoc (.adoc, .asciidoc): section titles make the heading path; delimited blocks are kept
whole.

- A section title is a line at column 0 of 1 to 6 ``=`` then a space and the title (a closing
  run of ``=`` is dropped): ``= Document title`` is level 1, ``== Section`` level 2, and so on.
- A delimited block opens with a line of ``----`` (listing), ``....`` (literal), ``====``
  (example), ``****`` (sidebar), ``____`` (quote), ``++++`` (passthrough), ``--`` (open),
  ``|===`` (table), or a ```` ``` ```` fence, and closes at the same line; what lies between
  is one block, kept whole as a markdown fence is. A ``////`` block is a comment, in no chunk.
- Block attribute, anchor and title lines (``[source,python]``, ``[[id]]``, ``.Title``) just
  above a delimited block belong to it. A paragraph of nothing but such lines, attribute
  entries (``:toc:``) or ``//`` comments shows no words and is in no chunk.
- Other lines form paragraphs, split at blank lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from nexusbrain.config import ChunkingConfig
from nexusbrain.ingest.chunking import Block, Kind, chunk_blocks, line_bounds
from nexusbrain.ingest.formats.base import Extracted, Outline, text_of

_TITLE = re.compile(r"(={1,6})[ \t]+(\S.*?)(?:[ \t]+=+)?[ \t]*")
_DELIMITER = re.compile(r"(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|--|\|={3,}|```)[ \t]*")
_FENCE = re.compile(r"```[\w+.-]*[ \t]*")  # a ``` fence may name its language
_META = re.compile(r"\[.*\]|\.[^.\s].*|:[\w-]+!?:.*|//(?!//).*")  # attributes, titles, entries


def extract_asciidoc(
    data: bytes, *, name: str, config: ChunkingConfig, max_bytes: int
) -> Extracted:
    text = text_of(data, name, max_bytes)
    outline = Outline()
    spans = chunk_blocks(text, [_blocks(text, outline)], config)
    return Extracted(text, tuple(spans), title=outline.first)


def _blocks(text: str, outline: Outline) -> Iterator[Block]:
    lines = line_bounds(text)
    para: tuple[int, int] | None = None  # the open paragraph's first and last line
    i = 0
    while i < len(lines):
        start, end = lines[i]
        line = text[start:end]
        delimiter = _delimiter(line)
        ends = not line.strip() or delimiter or _TITLE.fullmatch(line)
        if ends and para is not None and not (delimiter and _all_meta(text, lines, para)):
            yield _block(text, lines, para, _paragraph_kind(text, lines, para), outline)
            para = None
        if delimiter:
            close = _closing(text, lines, i, delimiter)
            first = para[0] if para is not None else i
            kind: Kind = "hidden" if delimiter == "////" else "fence"
            yield _block(text, lines, (first, close), kind, outline)
            para, i = None, close + 1
            continue
        if title := _TITLE.fullmatch(line):
            path = outline.enter(len(title.group(1)), " ".join(title.group(2).split()))
            yield Block(start, start + len(line.rstrip()), "heading", path)
        elif line.strip():
            para = (para[0] if para is not None else i, i)
        i += 1
    if para is not None:
        yield _block(text, lines, para, _paragraph_kind(text, lines, para), outline)


def _delimiter(line: str) -> str:
    if _FENCE.fullmatch(line):
        return "```"
    found = _DELIMITER.fullmatch(line)
    return found.group(1) if found else ""


def _closing(text: str, lines: list[tuple[int, int]], i: int, delimiter: str) -> int:
    """The line that closes the block opened at line `i` (the last line when none does)."""
    for j in range(i + 1, len(lines)):
        if text[lines[j][0] : lines[j][1]].rstrip() == delimiter:
            return j
    return len(lines) - 1


def _all_meta(text: str, lines: list[tuple[int, int]], para: tuple[int, int]) -> bool:
    return all(_META.fullmatch(text[s:e].strip()) for s, e in lines[para[0] : para[1] + 1])


def _paragraph_kind(text: str, lines: list[tuple[int, int]], para: tuple[int, int]) -> Kind:
    return "hidden" if _all_meta(text, lines, para) else "text"


def _block(
    text: str, lines: list[tuple[int, int]], span: tuple[int, int], kind: Kind, outline: Outline
) -> Block:
    start, end = lines[span[0]][0], lines[span[1]][1]
    body = text[start:end]
    head, tail = len(body) - len(body.lstrip()), len(body) - len(body.rstrip())
    return Block(start + head, end - tail, kind, outline.path)
