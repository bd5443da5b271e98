"""The parts of an operation's declaration: its arguments, its Brain call and the form it takes
on each interface (operations/__init__.py holds the table; docs/design/operations.md tells
how each interface is made from it).

Standard library only, and no dataclasses: the command line's fast path reads the table at
start-up, and a frozen dataclass is compiled from source when its class is made (1.5 to 3 ms
each for these, measured), a NamedTuple in a tenth of that. pydantic, the web framework and
the brain load only where an operation is answered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from enum import StrEnum
from typing import Any, NamedTuple

View = dict[str, Any]  # a JSON view (views.py): what every interface answers with
Adapt = Callable[[Mapping[str, Any]], dict[str, Any]]


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


class Http(NamedTuple):
    """An operation's HTTP route. Its OpenAPI entry declares 422 for a route with parameters
    or a body, 413 and 415 for one with a body, and `errors` besides (api/routes.py)."""

    method: str
    path: str
    tag: str
    answer: str  # the model of the answer (api/responses.py)
    body: str | None = None  # the model of the body, made from the body's arguments
    errors: tuple[int, ...] = ()
    writes: bool = False  # it may write (captures too): 503 and 507
    doc: str | None = None  # the OpenAPI description
    open: bool = False  # answers without the API token
    adds: tuple[str, ...] = ()  # keys the server adds to the view from its own state


class Tool(NamedTuple):
    """An operation's MCP tool. `adapt` turns the tool's own arguments into the call's."""

    name: str
    title: str
    description: str
    read_only: bool = True
    adapt: Adapt | None = None


class Command(NamedTuple):
    """An operation's command: `name` is its words ("graph add"), `help` its help with an
    example. `adapt` turns the command's own arguments into the call's."""

    name: str
    help: str
    adapt: Adapt | None = None


class ByReference(NamedTuple):
    """How the command line asks a server about a document named by a reference: by id
    (`by_id` takes `document_id`) when it is digits, else by uri (`by_uri` takes `uri`), as
    given and then as the file it names here, the order Brain.document tries them in."""

    by_id: str
    by_uri: str


class Operation(NamedTuple):
    """One question to the brain. `call(brain, **args)` asks it in process and returns its
    view; every interface that offers it answers with that view."""

    name: str
    call: Callable[..., View]
    args: tuple[Arg | Group, ...] = ()
    http: Http | None = None
    mcp: Tool | None = None
    cli: Command | None = None
    stores: bool = False  # it adds to the brain: the command line makes one where there is none
    remote: ByReference | None = None  # a server answers it through other operations

    def call_args(self) -> Iterator[Arg | Group]:
        """The arguments of the call (not an interface's own)."""
        return (arg for arg in self.args if isinstance(arg, Group) or arg.only is None)

    def arguments(self, face: Face, given: Mapping[str, Any]) -> dict[str, Any]:
        """The call's keyword arguments from what `face` was given, by name: the call's
        arguments given (a group's as one dict, or its members one by one), the defaults of
        the rest, and what the face's adapter makes of its own."""
        args = {arg.name: _value(arg, given) for arg in self.call_args()}
        form = self.mcp if face is Face.MCP else self.cli if face is Face.CLI else None
        if form is not None and form.adapt is not None:
            args.update(form.adapt(given))
        return args


def _value(arg: Arg | Group, given: Mapping[str, Any]) -> Any:
    if isinstance(arg, Arg):
        return given.get(arg.name, arg.default)
    chosen = (given[arg.name] or {}) if arg.name in given else given
    return {m.name: chosen[m.name] for m in arg.members if chosen.get(m.name) is not None}


def in_body(arg: Arg | Group, http: Http) -> bool:
    """Whether the route reads the argument from its body (else from its path or query)."""
    if http.body is None:
        return False
    return isinstance(arg, Group) or not (arg.query or in_path(arg, http))


def in_path(arg: Arg, http: Http) -> bool:
    return f"{{{arg.http_name}}}" in http.path


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
