"""The MCP tools. Each one checks its arguments with pydantic, calls one Brain method and answers
with the JSON view HTTP returns for the same question (`recall` also with text ready to paste).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from nexusbrain import views
from nexusbrain.brain import Brain, Recall
from nexusbrain.errors import InvalidInput
from nexusbrain.graph.model import AsOf, inputs_from_json, parse_instant
from nexusbrain.records import Document, SearchFilters, SearchMode
from nexusbrain.retrieval.filters import make_filters
from nexusbrain.summaries import recall_summary

TIME = "ISO-8601 time, e.g. 2025-01-31 or 2025-01-31T09:30:00Z"


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FiltersArg(Args):
    domain: str | None = Field(None, description="only documents of this domain")
    path_prefix: str | None = Field(None, description="only documents whose path/uri starts so")
    document_id: int | None = Field(None, description="only this document")
    kind: str | None = Field(None, description="markdown, memory or conversation")
    updated_after: str | None = Field(None, description=TIME)
    updated_before: str | None = Field(None, description=TIME)


QUERY = Field(description="natural-language question or keywords")
K = Field(None, ge=1, le=1000, description="how many hits (default: the mode's)")
MODE = Field(
    SearchMode.BALANCED,
    description="conservative: few strict hits; balanced: hybrid; tokenmax: wide, with context",
)


class SearchArgs(Args):
    query: str = QUERY
    k: int | None = K
    mode: SearchMode = MODE
    filters: FiltersArg | None = None
    best_per_document: bool = Field(False, description="keep only each document's best chunk")


class RecallArgs(Args):
    query: str = QUERY
    budget_tokens: int | None = Field(
        None, ge=1, description="most tokens of passage text to return (default: the mode's)"
    )
    mode: SearchMode = MODE
    k: int | None = Field(None, ge=1, le=1000, description="hits to consider (default: the mode's)")
    filters: FiltersArg | None = None
    graph: bool | None = Field(
        None, description="add graph facts about entities the passages name (default: tokenmax)"
    )


class RememberArgs(Args):
    text: str = Field(description="the memory, in a sentence or a short paragraph")
    source: str | None = Field(None, max_length=4000, description="who or what said it")
    domain: str | None = Field(None, min_length=1, max_length=200, description="where to file it")
    tags: list[str] = Field(default_factory=list, max_length=100)


class DocumentArgs(Args):
    id: int | None = Field(None, ge=1, description="document id (from a hit's document_id)")
    path: str | None = Field(None, min_length=1, description="or its path/uri (a hit's uri)")
    line_start: int | None = Field(None, ge=1, description="first line to return (from 1)")
    line_end: int | None = Field(None, ge=1, description="last line to return (inclusive)")
    chunks: bool = Field(False, description="also list its chunks with their spans")


class RelationsArgs(Args):
    entity: str = Field(min_length=1, max_length=500, description="the entity's name")
    direction: Literal["outgoing", "incoming"] = Field(
        "outgoing", description="outgoing: entity is the subject; incoming: the object"
    )
    type: str | None = Field(None, max_length=100, description="only this relationship type")
    as_of_valid: str | None = Field(None, description=f"what held in the world then; {TIME}")
    as_of_known: str | None = Field(None, description=f"as the brain knew it then; {TIME}")


class HistoryArgs(Args):
    relationship_id: int = Field(ge=1, description="the id of any version of the relationship")


class TripleArg(Args):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    from_: str = Field(alias="from", min_length=1, max_length=500, description="subject")
    type: str = Field(min_length=1, max_length=100, description="e.g. works_at, manages")
    to: str = Field(min_length=1, max_length=500, description="object")
    valid_at: str | None = Field(None, description=f"when the fact began; {TIME}")
    invalid_at: str | None = Field(None, description=f"when it stopped; {TIME}")
    source: str | None = Field(None, max_length=2000, description="where the fact came from")


class EntityArg(Args):
    name: str = Field(min_length=1, max_length=500)
    type: str | None = Field(None, max_length=200)
    aliases: list[str] = Field(default_factory=list, max_length=100)


class GraphAddArgs(Args):
    relationships: list[TripleArg] = Field(default_factory=list, max_length=10_000)
    entities: list[EntityArg] = Field(default_factory=list, max_length=10_000)
    dry_run: bool = Field(False, description="report what would change; change nothing")


class NoArgs(Args):
    pass


@dataclass(frozen=True, slots=True)
class Answer:
    """A tool's answer: the JSON view, and the text for the model (None: the JSON itself)."""

    data: dict[str, Any]
    text: str | None = None


def _filters(value: FiltersArg | None) -> SearchFilters:
    return make_filters(**value.model_dump()) if value else SearchFilters()


def search(brain: Brain, args: SearchArgs) -> Answer:
    hits = brain.search(
        args.query,
        k=args.k,
        filters=_filters(args.filters),
        best_per_document=args.best_per_document,
        mode=args.mode,
    )
    return Answer(views.search(args.query, args.mode.value, hits))


def recall(brain: Brain, args: RecallArgs) -> Answer:
    result = brain.recall(
        args.query,
        k=args.k,
        budget_tokens=args.budget_tokens,
        filters=_filters(args.filters),
        mode=args.mode,
        graph=args.graph,
    )
    view = views.recall(result)
    return Answer(view, recall_text(result, view))


def recall_text(result: Recall, view: Mapping[str, Any]) -> str:
    """Passages to paste into a prompt, each headed by its citation: [n] path:lines (revision),
    after how many there are and how good a match they are."""
    said, match = recall_summary(view), view["match"]
    if not result.hits:
        return f"{said}. {match}"
    parts = [f"Memory for {result.query!r}: {said}. {match} Cite a passage by its [n]."]
    for n, hit in enumerate(result.hits, start=1):
        span = f"{hit.line_start}" + (f"-{hit.line_end}" if hit.line_end != hit.line_start else "")
        heading = f" {' > '.join(hit.heading_path)}" if hit.heading_path else ""
        cut = " (cut to fit the budget)" if hit.truncated else ""
        day = f" (said on {hit.trace.day}, as asked)" if hit.trace.day else ""
        cite = f"[{n}] {hit.uri}:{span} (revision {hit.revision[:12]}){heading}{day}{cut}"
        parts.append(f"{cite}\n{hit.text}")
    if result.graph_context:
        facts = "\n".join(f"- {fact.text}" for fact in result.graph_context)
        parts.append(f"Related facts from the knowledge graph:\n{facts}")
    return "\n\n".join(parts)


def remember(brain: Brain, args: RememberArgs) -> Answer:
    result = brain.add_memory(args.text, source=args.source, domain=args.domain, tags=args.tags)
    return Answer(views.write_result(result))


def get_document(brain: Brain, args: DocumentArgs) -> Answer:
    document = _document(brain, args.id, args.path)
    chunks = brain.document_chunks(document.id) if args.chunks else None
    out = views.document(document, chunks)
    if args.line_start is not None or args.line_end is not None:
        out.update(_lines(document, args.line_start or 1, args.line_end))
    return Answer(out)


def _document(brain: Brain, document_id: int | None, path: str | None) -> Document:
    if document_id is not None and path is None:
        return brain.get_document(document_id)
    if path is not None and document_id is None:
        return brain.document(path)
    raise InvalidInput("give the document's id or its path, not both and not neither")


def _lines(document: Document, start: int, end: int | None) -> dict[str, Any]:
    lines = document.content.splitlines()
    if end is not None and end < start:
        raise InvalidInput(f"line_end={end} is before line_start={start}")
    if start > len(lines):
        raise InvalidInput(
            f"line_start={start} is past the end of document {document.id}, "
            f"which has {len(lines)} lines"
        )
    last = len(lines) if end is None else min(end, len(lines))
    return {
        "content": "\n".join(lines[start - 1 : last]),
        "lines": {"start": start, "end": last, "total": len(lines)},
    }


def _as_of(valid: str | None, known: str | None) -> AsOf:
    return AsOf(parse_instant("as_of_valid", valid), parse_instant("as_of_known", known))


def graph_relations(brain: Brain, args: RelationsArgs) -> Answer:
    when = _as_of(args.as_of_valid, args.as_of_known)
    outgoing = args.direction == "outgoing"
    found = brain.graph.relations(
        args.entity if outgoing else None,
        to_name=None if outgoing else args.entity,
        type=args.type,
        as_of=when,
    )
    return Answer(views.relations(found, when))


def graph_history(brain: Brain, args: HistoryArgs) -> Answer:
    return Answer(views.relationship_history(brain.graph.history(args.relationship_id)))


def graph_add(brain: Brain, args: GraphAddArgs) -> Answer:
    body = args.model_dump(by_alias=True, include={"entities", "relationships"})
    entities, relationships = inputs_from_json(body)
    result = brain.graph.ingest(entities, relationships, dry_run=args.dry_run)
    return Answer(views.graph_ingest(result))


def status(brain: Brain, args: NoArgs) -> Answer:
    return Answer(views.stats(brain.stats()))


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    title: str
    description: str
    args: type[Args]
    run: Callable[[Brain, Any], Answer]
    read_only: bool = True


TOOLS = (
    Tool(
        "recall",
        "Recall context",
        "Passages from memory that answer a question, within a token budget, as text ready to "
        "paste. Each passage is headed [n] path:lines (revision ...) so you can cite it. Use "
        "this first when you need what the user's notes or earlier memories say. The text says "
        "whether the passages are a good match; when it says no good match, memory probably "
        "does not hold the answer: say so rather than guess from them.",
        RecallArgs,
        recall,
    ),
    Tool(
        "search",
        "Search memory",
        "Ranked hits for a query, each with its document, path, revision, line span, text and a "
        "trace of why it ranked (each retriever's rank and score), and `match`: in words, "
        "whether any hit is a good match (`confidence.value`: the estimated chance, 0 to 1, "
        "that one of the first five hits is relevant). Use it to explore or to choose a "
        "document to open with get_document.",
        SearchArgs,
        search,
    ),
    Tool(
        "remember",
        "Remember",
        "Store a short memory (a fact, decision or preference worth keeping) so later searches "
        "find it. The same text again is reported as a duplicate and stored once.",
        RememberArgs,
        remember,
        read_only=False,
    ),
    Tool(
        "get_document",
        "Get a document",
        "A whole document by id or path, or only some of its lines (line_start, line_end).",
        DocumentArgs,
        get_document,
    ),
    Tool(
        "graph_relations",
        "Entity relations",
        "An entity's relationships in the knowledge graph: the current ones, or those that held "
        "at as_of_valid as known at as_of_known.",
        RelationsArgs,
        graph_relations,
    ),
    Tool(
        "graph_history",
        "Relationship history",
        "Every version of one relationship, oldest first: when it held, when the brain learned "
        "it, and why each old version was retired.",
        HistoryArgs,
        graph_history,
    ),
    Tool(
        "graph_add",
        "Add graph facts",
        "Record facts as (from, type, to) triples with the time they held. A changed window, or "
        "a new value of a functional type such as works_at, retires the old version; nothing "
        "is deleted.",
        GraphAddArgs,
        graph_add,
        read_only=False,
    ),
    Tool(
        "status",
        "Status",
        "Counts of documents and chunks, database size and path, and the server's version.",
        NoArgs,
        status,
    ),
)
