"""Search, recall and explain: their arguments, the Brain call and each interface's form."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nexusbrain.operations.args import (
    HAS_WORDS,
    TIME,
    Arg,
    Face,
    Group,
    Kind,
    Most,
    Option,
    Positional,
)
from nexusbrain.operations.spec import Command, Http, Operation, Tool, View

if TYPE_CHECKING:
    from nexusbrain.brain import Brain
    from nexusbrain.records import SearchFilters

# records.SearchMode's and records.DocumentKind's values (tests/test_operations.py checks): the
# command line's fast path reads these, and does not import records (its dataclasses)
MODES = ("conservative", "balanced", "tokenmax")
KINDS = ("markdown", "memory", "conversation", "text", "rst", "asciidoc", "html", "pdf", "code")

QUERY = Arg(
    "query",
    required=True,
    help="natural-language query",
    http="q",
    example="who rotates the deploy key",
    most=Most.QUERY_CHARS,
    schema=HAS_WORDS,
    cli=Positional(),
)
K = Arg("k", Kind.INT, ge=1, le=1000, help="how many hits (default: the mode's)")
MODE = Arg(
    "mode",
    default="balanced",
    choices=MODES,
    help="conservative: few strict hits; balanced: hybrid; tokenmax: wide, PRF, context",
    cli=Option(
        ("--mode",),
        "conservative: few strict hits; balanced: hybrid; tokenmax: wide, PRF, context.",
        show_default=True,
    ),
)
FILTERS = Group(
    "filters",
    "FiltersIn",
    (
        Arg("domain", help="only documents of this domain"),
        Arg("path_prefix", help="only documents whose uri or path starts with this"),
        Arg("document_id", Kind.ID, help="only this document"),
        Arg("kind", help='only documents of this kind ("": any)', schema={"enum": [*KINDS, ""]}),
        Arg("updated_after", Kind.TIME, help=f"only documents updated after this; {TIME}"),
        Arg("updated_before", Kind.TIME, help=f"only documents updated before this; {TIME}"),
    ),
    help="only hits whose document passes every filter given",
)
BEST = Arg(
    "best_per_document", Kind.BOOL, default=False, help="keep only each document's best chunk"
)
DISTINCT = Arg(
    "distinct",
    Kind.BOOL,
    default=True,
    help="one hit per repeated text, its copies listed in also_in (false: each copy a hit)",
    cli=Option(("--keep-copies",), "Show each copy of a text as a hit of its own."),
)


def filters(**options: Option) -> Group:
    """The filters, with these members offered as command-line options."""
    return FILTERS.replace(
        members=tuple(m.replace(cli=options.get(m.name)) for m in FILTERS.members)
    )


def _filters(given: Mapping[str, Any]) -> SearchFilters:
    from nexusbrain.retrieval.filters import make_filters

    return make_filters(**given)


def search(
    brain: Brain,
    *,
    query: str,
    k: int | None,
    mode: str,
    filters: Mapping[str, Any],
    best_per_document: bool,
    distinct: bool,
    graph: bool,
) -> View:
    from nexusbrain import views

    chosen = _filters(filters)
    hits = brain.search(
        query,
        k=k,
        filters=chosen,
        best_per_document=best_per_document,
        mode=mode,
        distinct=distinct,
    )
    return views.search(query, mode, hits, brain.graph_context(hits) if graph else None)


def recall(
    brain: Brain,
    *,
    query: str,
    k: int | None,
    budget_tokens: int | None,
    mode: str,
    filters: Mapping[str, Any],
    graph: bool | None,
    distinct: bool,
) -> View:
    from nexusbrain import views

    chosen = _filters(filters)
    found = brain.recall(
        query,
        k=k,
        budget_tokens=budget_tokens,
        filters=chosen,
        mode=mode,
        graph=graph,
        distinct=distinct,
    )
    return views.recall(found)


def explain(
    brain: Brain,
    *,
    query: str,
    document: str,
    k: int | None,
    mode: str,
    filters: Mapping[str, Any],
    best_per_document: bool,
    distinct: bool,
) -> View:
    from nexusbrain import views

    chosen = _filters(filters)
    found = brain.explain(
        query,
        document,
        k=k,
        filters=chosen,
        mode=mode,
        best_per_document=best_per_document,
        distinct=distinct,
    )
    return views.explanation(found)


SEARCH = Operation(
    "search",
    search,
    (
        QUERY,
        K.replace(cli=Option(("-k", "--k"), "How many hits (default: the mode's).")),
        MODE,
        filters(
            domain=Option(("--domain",), "Only this domain."),
            path_prefix=Option(
                ("--path-prefix",), "Only documents whose uri/path starts with this."
            ),
            document_id=Option(("--document",), "Only this document id."),
        ),
        BEST.replace(cli=Option(("--best-per-document",), "Keep only each document's best chunk.")),
        DISTINCT,
        Arg("graph", Kind.BOOL, default=False, help="add the top hits' graph context", mcp=False),
        Arg(
            "explain",
            Kind.BOOL,
            default=False,
            only=Face.CLI,
            cli=Option(("--explain",), "Show each hit's trace: why it ranked."),
        ),
    ),
    http=Http("GET", "/search", "retrieval", "SearchOut", writes=True),
    mcp=Tool(
        "search",
        "Search memory",
        "Ranked hits for a query, each with its document, path, revision, line span, text and a "
        "trace of why it ranked (each retriever's rank and score), and `match`: in words, "
        "whether any hit is a good match (`confidence.value`: the estimated chance, 0 to 1, "
        "that one of the first five hits is relevant). Use it to explore or to choose a "
        "document to open with get_document.",
    ),
    cli=Command(
        "search",
        """Search with a natural-language query.

        \b
        Example:
          nexusbrain search "why did the deploy fail" -k 5 --explain
        """,
    ),
)

RECALL = Operation(
    "recall",
    recall,
    (
        QUERY,
        K.replace(
            help="hits to consider (default: the mode's)",
            cli=Option(("-k", "--k"), "Hits to consider (default: the mode's)."),
        ),
        Arg(
            "budget_tokens",
            Kind.INT,
            ge=1,
            most=Most.BUDGET_TOKENS,
            help="most tokens of passage text to return (default: the mode's)",
            cli=Option(("--budget",), "Token budget (default: the mode's)."),
        ),
        MODE,
        FILTERS,
        Arg(
            "graph",
            Kind.BOOL,
            help="add graph facts about entities the passages name (default: on in tokenmax)",
        ),
        DISTINCT,
    ),
    http=Http("POST", "/recall", "retrieval", "RecallOut", body="RecallIn", writes=True),
    mcp=Tool(
        "recall",
        "Recall context",
        "Passages from memory that answer a question, within a token budget, as text ready to "
        "paste. Each passage is headed [n] path:lines (revision ...) so you can cite it. Use "
        "this first when you need what the user's notes or earlier memories say. The text says "
        "whether the passages are a good match; when it says no good match, memory probably "
        "does not hold the answer: say so rather than guess from them.",
    ),
    cli=Command(
        "recall",
        """Context for a model: the best hits that fit a token budget, with citations.

        \b
        Example:
          nexusbrain recall "what do we know about the outage" --budget 800
        """,
    ),
)

EXPLAIN = Operation(
    "explain",
    explain,
    (
        QUERY,
        Arg(
            "document",
            Kind.REF,
            required=True,
            min_length=1,
            http="doc",
            help="document id, uri or path",
            example="alice.md",
            cli=Positional(),
        ),
        K.replace(cli=Option(("-k", "--k"), "The k to judge 'returned' by.")),
        MODE,
        filters(
            domain=Option(("--domain",), "Apply this domain filter."),
            path_prefix=Option(("--path-prefix",), "Apply this path prefix filter."),
        ),
        BEST.replace(cli=Option(("--best-per-document",), "As search --best-per-document.")),
        DISTINCT.replace(cli=Option(("--keep-copies",), "As search --keep-copies.")),
    ),
    http=Http("GET", "/explain", "retrieval", "ExplanationOut", errors=(404,)),
    cli=Command(
        "explain",
        """Why (not): where DOCUMENT (an id, uri or path) ranked for QUERY, from the very search
        `search` runs with the same options, and the chunk it speaks of.

        \b
        Example:
          nexusbrain explain "why did the deploy fail" ~/notes/deploy.md
        """,
    ),
)

OPERATIONS = (RECALL, SEARCH, EXPLAIN)
