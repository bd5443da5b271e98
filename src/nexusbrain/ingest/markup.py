"""Paragraphs that are markup rather than prose (pure): what a reader of the rendered page
does not see as text, and lists that only point elsewhere.

- **Hidden**: nothing is left to read once link reference definitions (`[npm]: https://…`),
  images and badges (`[![build](…svg)](…)`), HTML tags and comments are taken away. Rendered,
  such a paragraph shows no words, so none of it is indexed.
- **Navigation**: every line is a list item that opens with a link, and at least
  `NAV_LINK_SHARE` (a quarter) of the list's words are link text (a table of contents, "See also", a
  list of links with short notes: "- [npm ci](ci.md) – clean install"). Its words belong to
  the pages it points to, which answer questions about them; the list does not. Its visible
  words are kept, but at the low weight of a chunk's context (chunking.py), so a list can be
  found when nothing else holds its words and never outranks the prose that answers. A list
  of people and what they do ("- [Ana](ana.md) owns the billing service and its on-call")
  is mostly its own words, so it stays prose.

Fenced code is never markup (the chunker keeps fences apart before this is asked).
"""

from __future__ import annotations

import re
from enum import StrEnum

# Of a navigation list's words, at least this share are link text: a "See also" list is
# titles with a short phrase each, where a list that says in a sentence what each item does
# is mostly prose (docs/tuning.md, "Markup at ingest", has the measured shares).
NAV_LINK_SHARE = 0.25

_DEFINITION = re.compile(
    r" {0,3}\[[^\]\n]+\]:[ \t]*\S+(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^)\n]*\)))?[ \t]*"
)
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_IMAGE = re.compile(r"!\[[^\]\n]*\](?:\([^)\n]*\)|\[[^\]\n]*\])")
_TAG = re.compile(r"</?[A-Za-z][^>\n]*>")
_LINK = re.compile(r"\[([^\]\n]*)\](?:\([^)\n]*\)|\[[^\]\n]*\])|<(https?://[^>\s]+)>")
_ITEM = re.compile(r"[ \t]*(?:[-+*]|\d{1,9}[.)])[ \t]+(.*)")
_OPENS_WITH_LINK = re.compile(r"(?:\*\*|__)?(?:\[[^\]\n]*\]\(|\[[^\]\n]*\]\[|<https?://)")
_WORD = re.compile(r"\w+")


class Markup(StrEnum):
    PROSE = "prose"
    HIDDEN = "hidden"
    NAVIGATION = "navigation"


def classify(paragraph: str) -> Markup:
    """What kind of paragraph this is (a block of lines without blank ones)."""
    if "[" not in paragraph and "<" not in paragraph:
        return Markup.PROSE  # every kind of markup above needs one of them: most prose is quick
    if _hidden(paragraph):
        return Markup.HIDDEN
    lines = [line for line in paragraph.splitlines() if line.strip()]
    items = [_ITEM.fullmatch(line) for line in lines]
    if not lines or not all(item and _OPENS_WITH_LINK.match(item[1]) for item in items):
        return Markup.PROSE
    shown = [item[1] for item in items if item]
    linked = sum(len(_WORD.findall(m[1] or m[2] or "")) for s in shown for m in _LINK.finditer(s))
    every = sum(len(_WORD.findall(_LINK.sub(_link_text, s))) for s in shown)
    return Markup.NAVIGATION if linked >= NAV_LINK_SHARE * every else Markup.PROSE


def visible(paragraph: str) -> str:
    """The words a reader sees: links by their text, list markers, images, tags dropped."""
    out = []
    for line in paragraph.splitlines():
        item = _ITEM.fullmatch(line)
        shown = _LINK.sub(_link_text, _TAG.sub(" ", _IMAGE.sub(" ", item[1] if item else line)))
        if shown.strip():
            out.append(" ".join(shown.split()))
    return "\n".join(out)


def _hidden(paragraph: str) -> bool:
    lines = [line for line in paragraph.splitlines() if not _DEFINITION.fullmatch(line)]
    rest = _COMMENT.sub(" ", "\n".join(lines))
    rest = _TAG.sub(" ", _IMAGE.sub(" ", rest))
    rest = _LINK.sub(_link_text, rest)
    return rest != paragraph and not rest.strip()


def _link_text(m: re.Match[str]) -> str:
    return m[1] if m[1] is not None else m[2]
