"""The arguments of an operation (operations/spec.py): what each holds, the checks HTTP and
MCP apply to it, the names it travels under and its command-line form.

Standard library only, and plain classes whose fields are Final (mypy keeps them unchanged):
the command line's fast path reads the table at start-up, and a frozen dataclass or a
NamedTuple is compiled from source when its class is made, a plain class is not
(docs/design/operations.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from enum import StrEnum
from typing import Any, Final, Self


class Kind(StrEnum):
    """What an argument holds; each interface reads and declares it in its own way."""

    TEXT = "text"
    INT = "int"
    ID = "id"  # a stored id: an integer from 1 to models.MAX_WIRE_ID (2**53 - 1) in a request
    BOOL = "bool"
    TIME = "time"  # an ISO-8601 time or date, "" for none
    REF = "ref"  # a document: its id, its uri, or the path of the file it was read from
    TEXTS = "texts"  # a list of strings
    TEXT_OR_TEXTS = "text_or_texts"  # a string or a list of strings (OpenAI's `input`)
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


class Spec:
    """A part of a declaration: a plain class whose fields are its __init__'s keywords, each
    set once, in __init__ (Final)."""

    def replace(self, **changes: Any) -> Self:
        """This part with these fields changed."""
        return type(self)(**(vars(self) | changes))


class Option(Spec):
    """An argument as a command-line option: its flags ("-k", "--k"), its help, and `parse`,
    which turns the text given into the value (raising InvalidInput)."""

    def __init__(
        self,
        decls: tuple[str, ...],
        help: str,
        *,
        show_default: bool = False,
        parse: Callable[[str], Any] | None = None,
    ) -> None:
        self.decls: Final = decls
        self.help: Final = help
        self.show_default: Final = show_default
        self.parse: Final = parse


class Positional(Spec):
    """An argument as a command-line argument (its metavar: the name in capitals); `many`:
    any number of words (nargs=-1)."""

    def __init__(self, *, many: bool = False) -> None:
        self.many: Final = many


class Arg(Spec):
    """One argument. Its name is the Brain call's keyword; it travels under `wire` (HTTP
    bodies, MCP arguments) and `http` (HTTP query and path parameters) when those differ.
    The checks (bounds, lengths, choices) are those HTTP and MCP apply before the call;
    `schema` holds what is declared to OpenAPI only, because the core enforces it itself,
    and `most` a maximum that is a setting. `items` names the model of each item of a
    Kind.ITEMS. `query`: a query parameter of a route that reads a body; `mcp`: an argument
    of the operation's MCP tool; `only`: that interface's own (for its adapter or printer),
    not the call's; `cli`: its command-line form (None: not on the command line)."""

    def __init__(
        self,
        name: str,
        kind: Kind = Kind.TEXT,
        *,
        help: str = "",
        default: Any = None,
        required: bool = False,
        choices: tuple[str, ...] = (),
        ge: int | None = None,
        le: int | None = None,
        min_length: int | None = None,
        max_length: int | None = None,
        most: Most | None = None,
        schema: Mapping[str, Any] | None = None,
        example: str | None = None,
        items: str | None = None,
        wire: str | None = None,
        http: str | None = None,
        query: bool = False,
        mcp: bool = True,
        only: Face | None = None,
        cli: Option | Positional | None = None,
    ) -> None:
        self.name: Final = name
        self.kind: Final = kind
        self.help: Final = help
        self.default: Final = default
        self.required: Final = required
        self.choices: Final = choices
        self.ge: Final = ge
        self.le: Final = le
        self.min_length: Final = min_length
        self.max_length: Final = max_length
        self.most: Final = most
        self.schema: Final = schema
        self.example: Final = example
        self.items: Final = items
        self.wire: Final = wire
        self.http: Final = http
        self.query: Final = query
        self.mcp: Final = mcp
        self.only: Final = only
        self.cli: Final = cli

    @property
    def wire_name(self) -> str:
        return self.wire or self.name

    @property
    def http_name(self) -> str:
        return self.http or self.wire_name


class Group(Spec):
    """Arguments that travel together: one object in a body and among MCP arguments (named
    `model` in the OpenAPI document), and flat query parameters and command-line options. The
    call gets a dict of the members given."""

    def __init__(self, name: str, model: str, members: tuple[Arg, ...], *, help: str = "") -> None:
        self.name: Final = name
        self.model: Final = model
        self.members: Final = members
        self.help: Final = help


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
# A name (a uri, title, tag, source) holds no NUL: it is refused there (brain/writes.py).
NO_NUL: Mapping[str, Any] = {"pattern": r"^[^\x00]*$"}
NAME_WORDS: Mapping[str, Any] = {"pattern": rf"^[^\x00]*[^{BLANK}\x00][^\x00]*$"}
HAS_TEXT: Mapping[str, Any] = {"pattern": TEXT_WORDS}
TIME = "ISO-8601 (RFC 3339 date-time, or a date), in years 1 to 9999 once in UTC"
