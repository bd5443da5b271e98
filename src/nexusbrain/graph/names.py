"""Entity keys, relationship types and entity mentions in text (pure).

An entity's key is its name casefolded with whitespace collapsed, so "Bob  Smith" and
"bob smith" are one entity. A relationship type is casefolded with runs of spaces and
hyphens turned into one underscore ("Works at" -> "works_at").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from nexusbrain.errors import InvalidInput

if TYPE_CHECKING:
    from nexusbrain.graph.model import RelationshipInput

MAX_NAME_CHARS = 500
MAX_TYPE_CHARS = 100
_SPACE = re.compile(r"\s+")
_TYPE_SEP = re.compile(r"[\s\-]+")
_TYPE = re.compile(r"\w+")
_WORD = re.compile(r"\w+(?:['’\-]\w+)*")


def entity_key(name: str, what: str = "entity name") -> str:
    """The key of an entity name; InvalidInput if it is blank or too long."""
    key = _SPACE.sub(" ", name).strip().casefold()
    if not key:
        raise InvalidInput(f"{what} {name!r} is empty: give the entity a name")
    if len(key) > MAX_NAME_CHARS:
        raise InvalidInput(f"{what} {name[:40]!r}... is over {MAX_NAME_CHARS} characters")
    return key


def edge_keys(edges: Iterable[RelationshipInput]) -> list[str]:
    """The keys of the entities at the ends of these edges."""
    return [entity_key(name) for edge in edges for name in (edge.from_name, edge.to_name)]


def display_name(name: str) -> str:
    return _SPACE.sub(" ", name).strip()


def relationship_type(text: str) -> str:
    """The canonical form of a relationship type; InvalidInput unless it is word characters."""
    value = _TYPE_SEP.sub("_", text.strip().casefold())
    if not _TYPE.fullmatch(value) or len(value) > MAX_TYPE_CHARS:
        raise InvalidInput(
            f"relationship type {text!r} must be letters, digits and underscores"
            f" (up to {MAX_TYPE_CHARS}), e.g. works_at"
        )
    return value


def mention_keys(text: str, max_words: int = 4) -> list[str]:
    """Every run of 1..max_words words in `text` as an entity key, in order of appearance."""
    words = [m.group().casefold() for m in _WORD.finditer(text)]
    keys: dict[str, None] = {}
    for start in range(len(words)):
        for size in range(1, min(max_words, len(words) - start) + 1):
            keys[" ".join(words[start : start + size])] = None
    return list(keys)
