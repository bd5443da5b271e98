"""The answering commands, made from the operations that declare one (operations/): each takes
the arguments and options its operation declares, asks a running server or the brain in this
process (cli/answers.py) and prints the view, JSON with --json, else as cli/render.py says."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
import orjson

from nexusbrain.cli.answers import answers_of
from nexusbrain.cli.render import RENDER
from nexusbrain.operations import GROUPS, OPERATIONS
from nexusbrain.operations.args import Arg, Face, Kind, Option, members
from nexusbrain.operations.spec import Operation

F = TypeVar("F", bound=Callable[..., Any])


def add_commands(root: click.Group) -> None:
    """Each operation's command, in its group ("graph add" in `graph`) or at the top."""
    groups = {name: click.Group(name, help=text) for name, text in GROUPS.items()}
    for operation in OPERATIONS:
        if operation.cli is not None:
            *words, name = operation.cli.name.split()
            parent = groups[words[0]] if words else root
            parent.add_command(command(operation, name, operation.cli.help))
    for group in groups.values():
        root.add_command(group)


def emit(value: Any) -> None:
    click.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())


# --json, which every command that answers takes: the view as JSON, for scripts
JSON = ("--json", "as_json")
JSON_HELP = "Print JSON for scripts."


def json_option(func: F) -> F:
    """--json on a command written by hand."""
    return click.option(*JSON, is_flag=True, help=JSON_HELP)(func)


def command(operation: Operation, name: str, help: str) -> click.Command:
    params = [_param(arg) for arg in members(operation.args) if arg.cli is not None]
    params.append(click.Option(list(JSON), is_flag=True, help=JSON_HELP))

    def run(as_json: bool, **given: Any) -> None:
        args = operation.arguments(Face.CLI, given)
        create = operation.stores and not args.get("dry_run")  # a dry run stores nothing
        ctx = click.get_current_context()
        view = answers_of(ctx, operation, create=create).call(operation, args)
        printer = RENDER.get(operation.name)
        if as_json or printer is None:
            emit(view)
        else:
            printer(view, given)

    return click.Command(name, params=params, callback=run, help=help)


def _param(arg: Arg) -> click.Parameter:
    form = arg.cli
    kind = click.Choice(arg.choices) if arg.choices else _TYPES.get(arg.kind)
    if not isinstance(form, Option):
        return click.Argument([arg.name], type=kind, nargs=-1 if form and form.many else 1)
    return click.Option(
        [*form.decls, arg.name],
        type=None if arg.kind is Kind.BOOL else kind,
        is_flag=arg.kind is Kind.BOOL,
        multiple=arg.kind is Kind.TEXTS,
        default=arg.default,
        show_default=form.show_default,
        help=form.help,
        callback=_parsed(form.parse) if form.parse is not None else None,
    )


_TYPES: dict[Kind, Any] = {Kind.INT: int, Kind.ID: int, Kind.FILE: click.File("rb")}


def _parsed(parse: Callable[[str], Any]) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        return None if value is None else parse(value)

    return callback
