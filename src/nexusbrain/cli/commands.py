"""The answering commands, made from the operations that declare one (operations/): each takes
the arguments and options its operation declares, asks a running server or the brain in this
process (cli/answers.py) and prints the view, JSON with --json, else as cli/render.py says."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import click
import orjson

from nexusbrain.operations import GROUPS, OPERATIONS
from nexusbrain.operations.args import Arg, Face, Kind, Option, members
from nexusbrain.operations.spec import Operation

F = TypeVar("F", bound=Callable[..., Any])


class LazyGroup(click.Group):
    """A group whose commands are made when first asked for, and listed with their help
    without being made: a command line makes only the command it runs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, tuple[Callable[[], click.Command], str]] = {}

    def add_lazy(self, name: str, make: Callable[[], click.Command], help: str) -> None:
        """`name`'s command, made by `make` when it is used; `help` is its help (or its first
        line), for the list of commands."""
        self.lazy[name] = (make, help)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """click's, with the closest command named when there is no `args[0]`."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            import difflib  # only for a mistyped command

            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1)
            ctx.fail(
                f"No such command {name!r}." + (f" Did you mean {close[0]!r}?" if close else "")
            )
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy and name not in self.commands:
            self.add_command(self.lazy[name][0](), name)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in self.lazy and name not in self.commands:  # its help, without making it
                command: click.Command | None = click.Command(name, help=self.lazy[name][1])
            else:
                command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def add_commands(root: LazyGroup, group: str | None = None) -> None:
    """The operations' commands in `root`: those of `group` ("graph add" is `add` in the
    group `graph`), else those at the top and each group."""
    for operation in OPERATIONS:
        if operation.cli is not None and operation.cli.name not in GROUPS:
            *words, name = operation.cli.name.split()
            if (words[0] if words else None) == group:
                root.add_lazy(name, partial(command, operation, name), operation.cli.help)
    if group is None:
        for name, help in GROUPS.items():
            own = next((o for o in OPERATIONS if o.cli and o.cli.name == name), None)
            summary = own.cli.help if own is not None and own.cli is not None else help
            root.add_lazy(name, partial(_group, name, help, own), summary)


def _group(name: str, help: str, own: Operation | None) -> click.Command:
    """A group of commands; with `own`, an operation whose command is the group's name, the
    group answers it when no command of its own is given (`models`, `models check`)."""
    if own is None:
        made = LazyGroup(name, help=help)
    else:
        answer = command(own, name)
        made = LazyGroup(
            name,
            params=answer.params,
            callback=click.pass_context(partial(_own, answer)),
            invoke_without_command=True,
            help=answer.help,
        )
    add_commands(made, name)
    return made


def _own(answer: click.Command, ctx: click.Context, **given: Any) -> None:
    if ctx.invoked_subcommand is None:
        assert answer.callback is not None
        answer.callback(**given)


def emit(value: Any) -> None:
    click.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())


# --json, which every command that answers takes: the view as JSON, for scripts
JSON = ("--json", "as_json")
JSON_HELP = "Print JSON for scripts."


def json_option(func: F) -> F:
    """--json on a command written by hand."""
    return click.option(*JSON, is_flag=True, help=JSON_HELP)(func)


def command(operation: Operation, name: str) -> click.Command:
    """The operation's command: its arguments and options as declared, and --json."""
    assert operation.cli is not None
    params = [_param(arg) for arg in members(operation.args) if arg.cli is not None]
    params.append(click.Option(list(JSON), is_flag=True, help=JSON_HELP))

    def run(as_json: bool, **given: Any) -> None:
        # what answers and prints, loaded when a command runs: --help loads neither
        from nexusbrain.cli.answers import answers_of
        from nexusbrain.cli.render import RENDER

        args = operation.arguments(Face.CLI, given)
        create = operation.stores and not args.get("dry_run")  # a dry run stores nothing
        ctx = click.get_current_context()
        view = answers_of(ctx, operation, create=create).call(operation, args)
        printer = RENDER.get(operation.name)
        if as_json or printer is None:
            emit(view)
        else:
            printer(view, given)
        if isinstance(view, dict) and view.get("ok") is False:  # a check that failed
            ctx.exit(1)

    return click.Command(name, params=params, callback=run, help=operation.cli.help)


def _param(arg: Arg) -> click.Parameter:
    form = arg.cli
    kind = click.Choice(arg.choices) if arg.choices else _TYPES.get(arg.kind)
    if not isinstance(form, Option):
        if form is not None and form.many:
            return click.Argument([arg.name], type=kind, nargs=-1)
        if arg.required:  # click 8.4 takes even default=None as a value, so none is given
            return click.Argument([arg.name], type=kind)
        return click.Argument([arg.name], type=kind, required=False, default=arg.default)
    return click.Option(
        [*form.decls, arg.name],
        type=None if arg.kind is Kind.BOOL else kind,
        is_flag=arg.kind is Kind.BOOL,
        flag_value=arg.default is not True if arg.kind is Kind.BOOL else None,  # --keep-copies
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
