"""Writing documents: a memory, a markdown note, a batch of notes, a conversation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nexusbrain.operations.args import HAS_TEXT, NO_NUL, Arg, Kind, Option, Positional
from nexusbrain.operations.spec import Command, Http, Operation, Tool, View

if TYPE_CHECKING:
    from nexusbrain.brain import Brain

DOMAIN = Arg("domain", min_length=1, max_length=200, help="the domain to file it under")
MAX_BATCH_DOCUMENTS = 1000


def add(
    brain: Brain, *, text: str, source: str | None, domain: str | None, tags: Sequence[str]
) -> View:
    from nexusbrain import views

    return views.write_result(brain.add_memory(text, source=source, domain=domain, tags=tags))


def ingest_markdown(
    brain: Brain,
    *,
    title: str,
    content: str,
    uri: str | None,
    domain: str | None,
    metadata: Mapping[str, Any] | None,
) -> View:
    from nexusbrain import views

    result = brain.ingest_markdown(content, title=title, uri=uri, domain=domain, metadata=metadata)
    return views.write_result(result)


def ingest_markdown_batch(brain: Brain, *, documents: Sequence[Mapping[str, Any]]) -> View:
    from nexusbrain import views
    from nexusbrain.records import MarkdownNote

    return views.batch(brain.ingest_markdown_batch([MarkdownNote(**d) for d in documents]))


def ingest_conversation(
    brain: Brain,
    *,
    sessions: Sequence[Mapping[str, Any]],
    domain: str | None,
    index_roles: Sequence[str] | None,
) -> View:
    from nexusbrain import views
    from nexusbrain.ingest.conversation import sessions_from_json

    parsed = sessions_from_json(list(sessions), max_turns=brain.settings.limits.max_session_turns)
    results = brain.ingest_conversation(parsed, domain=domain, index_roles=index_roles)
    return views.write_results(results)


ADD = Operation(
    "add",
    add,
    (
        Arg(
            "text",
            required=True,
            help="the memory, in a sentence or a short paragraph",
            schema=HAS_TEXT,
            cli=Positional(),
        ),
        Arg(
            "source",
            max_length=4000,
            schema=NO_NUL,
            help="who or what said it (an agent, a url...)",
            cli=Option(("--source",), "Where the memory came from (an agent, a url...)."),
        ),
        DOMAIN.replace(cli=Option(("--domain",), "Domain to file it under.")),
        Arg(
            "tags",
            Kind.TEXTS,
            default=(),
            max_length=100,
            schema={"items": {"type": "string", **NO_NUL}},
            help="tags to file it under",
            cli=Option(("--tag",), "A tag; repeat for more."),
        ),
    ),
    http=Http("POST", "/add", "ingest", "WriteOut", body="MemoryIn", writes=True),
    mcp=Tool(
        "remember",
        "Remember",
        "Store a short memory (a fact, decision or preference worth keeping) so later searches "
        "find it. The same text again is reported as a duplicate and stored once.",
        read_only=False,
    ),
    cli=Command(
        "add",
        """Remember a short piece of text. The same text again is a duplicate.

        \b
        Example:
          nexusbrain add "The staging db moved to db-2 on 2025-03-01" --tag infra
        """,
    ),
    stores=True,
)

INGEST_MARKDOWN = Operation(
    "ingest_markdown",
    ingest_markdown,
    (
        Arg("title", required=True, min_length=1, max_length=1000, schema=NO_NUL),
        Arg(
            "content",
            required=True,
            help="markdown, front matter allowed (no aliases)",
            schema=HAS_TEXT,
        ),
        Arg("uri", min_length=1, max_length=4000, schema=NO_NUL),
        DOMAIN.replace(help=""),
        Arg("metadata", Kind.OBJECT),
    ),
    http=Http("POST", "/ingest/markdown", "ingest", "WriteOut", body="MarkdownIn", writes=True),
)

INGEST_MARKDOWN_BATCH = Operation(
    "ingest_markdown_batch",
    ingest_markdown_batch,
    (
        Arg(
            "documents",
            Kind.ITEMS,
            required=True,
            items="MarkdownIn",
            min_length=1,
            max_length=MAX_BATCH_DOCUMENTS,
        ),
    ),
    http=Http(
        "POST",
        "/ingest/markdown/batch",
        "ingest",
        "BatchOut",
        body="MarkdownBatchIn",
        writes=True,
        doc="Up to 1,000 documents in one transaction: the fast way to load many.",
    ),
)

INGEST_CONVERSATION = Operation(
    "ingest_conversation",
    ingest_conversation,
    (
        Arg("sessions", Kind.ITEMS, required=True, items="SessionIn", min_length=1),
        DOMAIN.replace(help=""),
        Arg("index_roles", Kind.TEXTS),
    ),
    http=Http(
        "POST",
        "/ingest/conversation",
        "ingest",
        "ConversationOut",
        body="ConversationIn",
        writes=True,
    ),
)

OPERATIONS = (ADD, INGEST_MARKDOWN, INGEST_MARKDOWN_BATCH, INGEST_CONVERSATION)
