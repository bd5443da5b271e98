"""Edges stated by a markdown note (pure): its [[wikilinks]] and its front matter `relations:`.

The note's own entity is its title.
- `[[Bob Smith]]`, `[[Bob Smith|shown text]]`, `[[Bob Smith#Heading]]`, `[[people/Bob Smith.md]]`
  all give the edge `(title) links_to (Bob Smith)`. Embeds (`![[...]]`), links to the note
  itself and links inside code (fenced blocks and inline code spans) are skipped. Links in the
  front matter's values count, as they do in Obsidian's properties.
- Front matter `relations:` is a list whose items are any of
      - {type: works_at, to: Acme, valid_at: 2020-01-01, invalid_at: 2023-06-30}
      - works_at: Acme            (YAML reads this as a one-key mapping)
      - "works_at: Acme"          (a string)
  valid_at and invalid_at are optional ISO-8601 dates or times.
A triple stated twice with the same window counts once; with two different windows it is an
error, since a triple holds one window at a time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from nexusbrain.errors import InvalidInput
from nexusbrain.graph.model import RelationshipInput, parse_instant
from nexusbrain.graph.names import entity_key, relationship_type
from nexusbrain.graph.rules import checked_window

_WIKILINK = re.compile(r"(?<!!)\[\[([^\[\]|#^\n]*)(?:[#^][^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]")
_FENCE = re.compile(r"[ ]{0,3}(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_RELATION_FIELDS = {"type", "to", "valid_at", "invalid_at"}


def note_edges(
    title: str, front_matter: Mapping[str, Any], text: str, link_type: str
) -> tuple[RelationshipInput, ...]:
    """The edges a note states, each once; InvalidInput naming the note for a bad relation."""
    edges: dict[tuple[str, str, str], RelationshipInput] = {}
    found = [*_relations(title, front_matter), *_links(title, text, link_type)]
    for edge in found:
        key = (entity_key(edge.from_name), relationship_type(edge.type), entity_key(edge.to_name))
        earlier = edges.setdefault(key, edge)
        if (earlier.valid_at, earlier.invalid_at) != (edge.valid_at, edge.invalid_at):
            raise InvalidInput(
                f"note {title!r}: relation {edge.type} {edge.to_name!r} is given twice with"
                " different windows; a relation holds one window at a time"
            )
    return tuple(edges.values())


def wikilink_targets(text: str) -> list[str]:
    """The entity names the note links to, in order, outside code."""
    targets = []
    for match in _WIKILINK.finditer(_outside_code(text)):
        target = match.group(1).strip().rsplit("/", 1)[-1].strip()
        if target.lower().endswith(".md"):
            target = target[:-3].strip()
        if target:
            targets.append(target)
    return targets


def _links(title: str, text: str, link_type: str) -> Iterator[RelationshipInput]:
    own = entity_key(title, "note title")
    for target in wikilink_targets(text):
        if entity_key(target) != own:
            yield RelationshipInput(title, link_type, target)


def _outside_code(text: str) -> str:
    """The text with fenced code blocks and inline code spans blanked out."""
    kept: list[str] = []
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        opening = _FENCE.match(line)
        if fence is not None:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None if not line[opening.end() :].strip() else fence
            kept.append("\n")
        elif opening:
            fence = opening.group(1)
            kept.append("\n")
        else:
            kept.append(_INLINE_CODE.sub("", line))
    return "".join(kept)


def _relations(title: str, front_matter: Mapping[str, Any]) -> Iterator[RelationshipInput]:
    raw = front_matter.get("relations")
    if raw is None:
        return
    if not isinstance(raw, list):
        raise InvalidInput(
            f"note {title!r}: front matter relations must be a list, got {type(raw).__name__}"
        )
    for i, item in enumerate(raw):
        where = f"note {title!r}: front matter relations[{i}]"
        kind, target, fields = _relation_parts(item, where)
        valid_at = parse_instant(f"{where}.valid_at", fields.get("valid_at"))
        invalid_at = parse_instant(f"{where}.invalid_at", fields.get("invalid_at"))
        checked_window(valid_at, invalid_at, f"{where}: ")
        yield RelationshipInput(title, kind, target, valid_at, invalid_at)


def _relation_parts(item: object, where: str) -> tuple[str, str, Mapping[str, Any]]:
    """(type, to, fields) of one relations item, in any of its three forms."""
    if isinstance(item, str):
        kind, sep, target = item.partition(":")
        if sep and kind.strip() and target.strip():
            return kind.strip(), target.strip(), {}
    elif isinstance(item, Mapping) and "type" in item:
        unknown = sorted(str(k) for k in item if k not in _RELATION_FIELDS)
        if unknown:
            raise InvalidInput(f"{where} has unknown field(s) {', '.join(unknown)}")
        if isinstance(item.get("type"), str) and isinstance(item.get("to"), str):
            return item["type"], item["to"], item
    elif isinstance(item, Mapping) and len(item) == 1:
        [(kind, target)] = item.items()
        if isinstance(target, str):
            return str(kind), target, {}
    raise InvalidInput(
        f"{where} is {item!r}; write it as {{type: works_at, to: Acme}} or 'works_at: Acme'"
    )
