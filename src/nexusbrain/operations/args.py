"""The arguments of an operation (operations/spec.py): what each holds, the checks HTTP and
MCP apply to it, the names it travels under and its command-line form.

Standard library only, and NamedTuples rather than dataclasses: the command line's fast path
reads the table at start-up, and a frozen dataclass is compiled from source when its class is
made, a NamedTuple at a fraction of that cost (docs/design/operations.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from enum import StrEnum
from typing import Any, NamedTuple


class Kind(StrEnum):
    """What an argument holds; each interface reads and declares it in its own way."""

    TEXT = "text"
    INT = "int"
    ID = "id"  # a stored id: an integer from 1 to records.MAX_ID
    BOOL = "bool"
    TIME = "time"  # an ISO-8601 time or date, "" for none
    REF = "ref"  # a document: its id, its uri, or the path of the file it was read from
    TEXTS = "texts"  # a list of strings
    OBJECT = "object"  # a JSON object (metadata)
    ITEMS = "items"  # a list of objects of the model Arg.items names (operations/models.py)
    FILE = "file"  # the command line's: a file to read ('-': stdin)


class Face(StrEnum):
    """The interfaces."""

    HTTP = "http"
    MCP = "mcp"
    CLI = "cli"


class Most(StrEnum):
    """Maxima that are settings (config.Limits, config.GraphConfig): declared to OpenAPI and
    MCP from their defaults, and enforced by the core, with its own message, whatever a
    server is set to."""

    QUERY_CHARS = "max_query_chars"
    BUDGET_TOKENS = "max_budget_tokens"
    DEPTH = "max_depth"


class Option(NamedTuple):
    """An argument as a command-line option."""

    decls: tuple[str, ...]  # ("-k", "--k")
    help: str
    show_default: bool = False
    parse: Callable[[str], Any] | None = None  # the text to the value; raises InvalidInput


class Positional(NamedTuple):
    """An argument as a command-line argument (its metavar: the name in capitals)."""

    many: bool = False  # any number of words (nargs=-1)


class Arg(NamedTuple):
    """One argument. Its name is the Brain call's keyword; it travels under `wire` (HTTP
    bodies, MCP arguments) and `http` (HTTP query and path parameters) when those differ.
    The checks (bounds, lengths, choices) are those HTTP and MCP apply before the call;
    `schema` holds what is declared to OpenAPI only, because the core enforces it itself."""

    name: str
    kind: Kind = Kind.TEXT
    help: str = ""
    default: Any = None
    required: bool = False
    choices: tuple[str, ...] = ()
    ge: int | None = None
    le: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    most: Most | None = None
    schema: Mapping[str, Any] | None = None
    example: str | None = None
    items: str | None = None  # Kind.ITEMS: the model of each item
    wire: str | None = None
    http: str | None = None
    query: bool = False  # a query parameter of a route that reads a body
    mcp: bool = True  # an argument of the operation's MCP tool
    only: Face | None = None  # that interface's own (for its adapter or renderer), not the call's
    cli: Option | Positional | None = None  # its command-line form; None: not on the command line

    @property
    def wire_name(self) -> str:
        return self.wire or self.name

    @property
    def http_name(self) -> str:
        return self.http or self.wire_name


class Group(NamedTuple):
    """Arguments that travel together: one object in a body and among MCP arguments (named
    `model` in the OpenAPI document), and flat query parameters and command-line options. The
    call gets a dict of the members given."""

    name: str
    model: str
    members: tuple[Arg, ...]
    help: str = ""


def members(args: Iterable[Arg | Group]) -> Iterator[Arg]:
    """The arguments with each group's members in its place."""
    for arg in args:
        if isinstance(arg, Group):
            yield from arg.members
        else:
            yield arg


# JSON Schema the declarations use. Python's whitespace (str.isspace), which the core strips:
# JSON Schema's `\s` is another set (it holds U+FEFF and lacks U+001C-U+001F and U+0085), and
# `\S` allowed a query of "\x1d", a 400.
BLANK = r"\t\n\v\f\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
WORDS = rf"[^{BLANK}]"  # a pattern: not empty, not only whitespace
# A text (a memory, a note) loses a leading BOM first (ingest/documents.py): a BOM alone is
# empty, and a BOM after that is a character like any other.
TEXT_WORDS = rf"^(?:\ufeff[{BLANK}]*[^{BLANK}]|[{BLANK}]*[^{BLANK}\ufeff]|[{BLANK}]+\ufeff)"
HAS_WORDS: Mapping[str, Any] = {"pattern": WORDS}
HAS_TEXT: Mapping[str, Any] = {"pattern": TEXT_WORDS}
TIME = "ISO-8601 (RFC 3339 date-time, or a date), in years 1 to 9999 once in UTC"
