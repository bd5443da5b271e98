"""YAML front matter at the top of a markdown document, and the document's title (pure).

A block is ``---`` alone on the very first line (after an optional BOM), then YAML, then a
line holding only ``---`` or ``...`` (trailing spaces or tabs allowed on both fence lines).
Without a closing line there is no block: the text may simply open with a thematic break.

YAML aliases (``*name``, merge keys ``<<: *name`` too) are refused: an alias can make a value
hold itself, and a few hundred bytes of nested aliases expand to gigabytes. Front matter is a
few properties; writing a value out twice costs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import yaml  # type: ignore[import-untyped, unused-ignore]

from nexusbrain.ingest.chunking import iter_headings

_OPEN = re.compile(r"\ufeff?---[ \t]*(?:\r\n|\r|\n)")
_CLOSE = re.compile(r"(?:---|\.\.\.)[ \t]*")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class FrontMatter:
    data: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    body_start: int = 0  # offset in the text where the body begins


def parse_front_matter(text: str) -> FrontMatter:
    """The front matter of `text`; ValueError naming the reason and line if it is not a mapping.

    Top-level keys that YAML reads as other types (``2024:``, ``true:``) become strings.
    """
    opening = _OPEN.match(text)
    if opening is None:
        return FrontMatter()
    closing = _closing(text, opening.end())
    if closing is None:
        return FrontMatter()
    yaml_end, body_start = closing
    data = _load(text[opening.end() : yaml_end])
    return FrontMatter(MappingProxyType({str(k): v for k, v in data.items()}), body_start)


MAX_TITLE_CHARS = 200  # a title is a line a person reads, and the name of the note's entity
_IMAGE = re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)")
_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\n]*\)")
_SPACES = re.compile(r"\s+")


def title_from(text: str, front: FrontMatter, fallback: str) -> str:
    """Front matter `title` if a non-blank string, else the first h1, else the first heading;
    as `readable_title` makes it."""
    title = front.data.get("title")
    if isinstance(title, str) and readable_title(title):
        return readable_title(title)
    first = ""
    for heading in iter_headings(text, start=front.body_start):
        shown = readable_title(heading.text)
        if shown and heading.level == 1:
            return shown
        first = first or shown
    return first or readable_title(fallback) or fallback


def readable_title(title: str) -> str:
    """A title as one readable line: badges (images) dropped, links as their text, spaces
    collapsed, and over MAX_TITLE_CHARS cut at a word boundary, with an ellipsis."""
    text = _SPACES.sub(" ", _LINK.sub(r"\1", _IMAGE.sub("", title))).strip()
    if len(text) <= MAX_TITLE_CHARS:
        return text
    cut = text[: MAX_TITLE_CHARS - 1]
    word = cut.rsplit(" ", 1)[0] if " " in cut[MAX_TITLE_CHARS // 2 :] else cut
    return word.rstrip(" ,;:-") + "…"


def _closing(text: str, start: int) -> tuple[int, int] | None:
    """Where the closing fence line (from line start `start` on) begins, and the body after it."""
    pos = start
    for m in _LINE_BREAK.finditer(text, start):
        if _CLOSE.fullmatch(text, pos, m.start()):
            return pos, m.end()
        pos = m.end()
    return (pos, len(text)) if _CLOSE.fullmatch(text, pos) else None


class _NoAliasLoader(yaml.SafeLoader):
    """The safe loader, refusing aliases before they are resolved."""

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None,
                None,
                f"an alias (*{event.anchor}) is not allowed in front matter; write the value out",
                event.start_mark,
            )
        return super().compose_node(parent, index)


def _load(source: str) -> Mapping[object, object]:
    """The YAML mapping in `source` (its line 1 is line 2 of the document)."""
    try:
        data = yaml.load(source, Loader=_NoAliasLoader)  # a SafeLoader
    except yaml.YAMLError as exc:
        raise ValueError(_yaml_message(exc)) from None
    except RecursionError:
        raise ValueError("invalid YAML in front matter: nested too deeply") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ValueError(f"front matter at line 2 is a {type(data).__name__}, not a mapping")
    return data


def _yaml_message(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    line = f" at line {mark.line + 2}" if mark is not None else ""
    return f"invalid YAML in front matter{line}: {reason}"
