"""What an answer holds, said in words, from its JSON view (views.py): for a person at the CLI
and an agent reading an MCP tool's text. Standard library only, so that the CLI's client path
(which prints a server's views) can use it without loading the brain."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n:,} " + (noun if n == 1 else plural or noun + "s")


def recall_summary(view: Mapping[str, Any]) -> str:
    """A recall (views.recall): how many passages, the tokens they use, whether the last was
    cut to fit, and how many lower hits were left out; or why nothing came back."""
    hits, left_out, budget = view["hits"], view["left_out"], view["budget_tokens"]
    if not hits:
        if not left_out:
            return f"No memory matched {view['query']!r}"
        return (
            f"{count(left_out, 'hit')} matched {view['query']!r}, but not even the best one's"
            f" first word fits in {budget} tokens: raise the budget"
        )
    told = [f"{count(len(hits), 'passage')}, {view['tokens_used']} of {budget} tokens"]
    if view["truncated"]:
        told.append(f"passage {len(hits)} cut to fit")
    if left_out:
        told.append(f"{count(left_out, 'lower hit')} left out")
    return "; ".join(told)


def relationship_line(
    source: str, kind: str, target: str, start: str, end: str, rid: int, *, cite: bool = True
) -> str:
    """'alice manages bob (valid 2020-01-01..2023-01-01) [relationship 7]' (the id if cite);
    start and end are the window's ends as they are to be shown, '' when open."""
    if start and end:
        window = f" (valid {start}..{end})"
    elif start or end:
        window = f" (valid from {start})" if start else f" (valid until {end})"
    else:
        window = ""
    text = f"{source} {kind} {target}{window}"
    return f"{text} [relationship {rid}]" if cite else text


def recall_text(view: Mapping[str, Any]) -> str:
    """A recall (views.recall) as passages to paste into a prompt, each headed by its
    citation: [n] path:lines (revision), after how many there are and how good a match."""
    said, match = recall_summary(view), view["match"]
    if not view["hits"]:
        return f"{said}. {match}"
    parts = [f"Memory for {view['query']!r}: {said}. {match} Cite a passage by its [n]."]
    for n, hit in enumerate(view["hits"], start=1):
        copies = f"\n({also_in(hit)})" if hit["also_in"] else ""
        parts.append(f"{_citation(n, hit)}{copies}\n{hit['text']}")
    if view["graph_context"]:
        facts = "\n".join(f"- {fact['text']}" for fact in view["graph_context"])
        parts.append(f"Related facts from the knowledge graph:\n{facts}")
    return "\n\n".join(parts)


def _citation(n: int, hit: Mapping[str, Any]) -> str:
    heading = f" {' > '.join(hit['heading_path'])}" if hit["heading_path"] else ""
    day = hit["trace"].get("day")
    said = f" (said on {day}, as asked)" if day else ""
    cut = " (cut to fit the budget)" if hit["truncated"] else ""
    return f"[{n}] {origin(hit)} (revision {hit['revision'][:12]}){heading}{said}{cut}"


def origin(hit: Mapping[str, Any]) -> str:
    """Where a hit comes from, for a person or an agent: uri:lines (`place`), or for a memory,
    whose uri is a hash, its document id (which `get` and `get_document` take) and its tags."""
    if hit["kind"] != "memory":
        return place(hit)
    tags = hit.get("tags") or ()
    return f"memory {hit['document_id']}" + (f", tagged {', '.join(tags)}" if tags else "")


def place(item: Mapping[str, Any]) -> str:
    """A hit's or a copy's view as uri:lines ("notes/a.md:3-9", "notes/a.md:4"), and its page
    when it has one ("report.pdf:40-52, page 4")."""
    start, end = item["span"]["line_start"], item["span"]["line_end"]
    page = f", page {item['page']}" if item.get("page") is not None else ""
    return f"{item['uri']}:{f'{start}-{end}' if end != start else start}{page}"


def pages_of_lines(chunks: Sequence[Mapping[str, Any]], start: int, end: int) -> list[int]:
    """The pages lines `start` to `end` are on, from a document's chunk views (views.chunk):
    a PDF's chunks each lie within one page and keep it in `meta`; other chunks have none."""
    found = {
        c["meta"].get("page")
        for c in chunks
        if c["span"]["line_start"] <= end and c["span"]["line_end"] >= start
    }
    return sorted(page for page in found if isinstance(page, int))


def pages_text(pages: Sequence[int]) -> str:
    """'page 4', 'pages 4-5', 'pages 4, 6'."""
    if len(pages) == 1:
        return f"page {pages[0]}"
    if list(pages) == list(range(pages[0], pages[-1] + 1)):
        return f"pages {pages[0]}-{pages[-1]}"
    return "pages " + ", ".join(str(p) for p in pages)


def also_in(hit: Mapping[str, Any], shown: int = 3) -> str:
    """Where else a hit's text lives: 'also in: a.md:3-9, b.md:1-7 and 2 more'."""
    copies = hit["also_in"]
    places = ", ".join(place(c) for c in copies[:shown])
    more = f" and {len(copies) - shown} more" if len(copies) > shown else ""
    return f"also in: {places}{more}"
