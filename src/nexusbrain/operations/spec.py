"""An operation's declaration: its arguments (operations/args.py), its Brain call and the form
it takes on each interface (operations/__init__.py holds the table; docs/design/operations.md
tells how each interface is made from it).

Standard library only, and plain classes, for the command line's fast path
(operations/args.py says why). pydantic, the web framework and the brain load only where an
operation is answered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from nexusbrain.operations.args import Arg, Face, Group, Spec

View = dict[str, Any]  # a JSON view (views.py): what every interface answers with
Adapt = Callable[[Mapping[str, Any]], dict[str, Any]]


class Http(Spec):
    """An operation's HTTP route: its method and path, its OpenAPI tag, the model of its
    answer (api/responses.py) and of its body (made from the body's arguments). Its OpenAPI
    entry declares 422 for a route with parameters or a body, 413 and 415 for one with a
    body, 503 and 507 for one that `writes` (captures too), and `errors` besides
    (api/routes.py). `doc` is its OpenAPI description; an `open` route answers without the API
    token; `adds` names keys the server adds to the view from its own state."""

    def __init__(
        self,
        method: str,
        path: str,
        tag: str,
        answer: str,
        *,
        body: str | None = None,
        errors: tuple[int, ...] = (),
        writes: bool = False,
        doc: str | None = None,
        open: bool = False,
        adds: tuple[str, ...] = (),
    ) -> None:
        self.method: Final = method
        self.path: Final = path
        self.tag: Final = tag
        self.answer: Final = answer
        self.body: Final = body
        self.errors: Final = errors
        self.writes: Final = writes
        self.doc: Final = doc
        self.open: Final = open
        self.adds: Final = adds


class Tool(Spec):
    """An operation's MCP tool. `adapt` turns the tool's own arguments into the call's."""

    def __init__(
        self,
        name: str,
        title: str,
        description: str,
        *,
        read_only: bool = True,
        adapt: Adapt | None = None,
    ) -> None:
        self.name: Final = name
        self.title: Final = title
        self.description: Final = description
        self.read_only: Final = read_only
        self.adapt: Final = adapt


class Command(Spec):
    """An operation's command: `name` is its words ("graph add"), `help` its help with an
    example. `adapt` turns the command's own arguments into the call's."""

    def __init__(self, name: str, help: str, *, adapt: Adapt | None = None) -> None:
        self.name: Final = name
        self.help: Final = help
        self.adapt: Final = adapt


class ByReference(Spec):
    """How the command line asks a server about a document named by a reference: by id
    (`by_id` takes `document_id`) when it is digits, else by uri (`by_uri` takes `uri`), as
    given and then as the file it names here, the order Brain.document tries them in."""

    def __init__(self, by_id: str, by_uri: str) -> None:
        self.by_id: Final = by_id
        self.by_uri: Final = by_uri


class Operation(Spec):
    """One question to the brain. `call(brain, **args)` asks it in process and returns its
    view; every interface that offers it answers with that view. An operation that `stores`
    adds to the brain: the command line makes one where there is none. `remote`: a server
    answers it through other operations."""

    def __init__(
        self,
        name: str,
        call: Callable[..., View],
        args: tuple[Arg | Group, ...] = (),
        *,
        http: Http | None = None,
        mcp: Tool | None = None,
        cli: Command | None = None,
        stores: bool = False,
        remote: ByReference | None = None,
    ) -> None:
        self.name: Final = name
        self.call: Final = call
        self.args: Final = args
        self.http: Final = http
        self.mcp: Final = mcp
        self.cli: Final = cli
        self.stores: Final = stores
        self.remote: Final = remote

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
