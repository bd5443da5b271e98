"""The `nexusbrain` (alias `brain`) command line. Each command parses its flags, asks the brain
one question and prints the answer: readable by default, JSON with --json.

The answering commands (search, recall, explain, get, add, stats, graph...) are made from the
operations' declarations (cli/commands.py). They ask a server that is already running for the
brain when there is one (BRAIN_URL, or the discovery file `serve` leaves beside the database),
in one HTTP request, and the brain in this process otherwise or with --local
(cli/answers.py). So this module imports only click, the ground floor and the declarations
(standard library) at the top: the brain, numpy and the model load only when a command works
in process, and the commands of `eval` and `bench` only when they run.
"""

from __future__ import annotations

import gc
import importlib
from functools import partial
from typing import Any

import click

from nexusbrain import __version__
from nexusbrain.cli.commands import LazyGroup, add_commands
from nexusbrain.errors import BrainError

# Commands loaded only when they run, with the one-line help `nexusbrain --help` lists for
# them (tests/test_cli.py checks it against the command's own).
LAZY = {
    "bench": (
        "nexusbrain.cli.bench:bench",
        "Benchmark a real server on a synthetic markdown corpus at each scale.",
    ),
    "brains": (
        "nexusbrain.cli.brains:brains",
        "Brains kept apart by the database (PostgreSQL): a schema and a role for each.",
    ),
    "dense-index": (
        "nexusbrain.cli.dense:dense_index",
        "The dense index in the database (PostgreSQL: pgvector HNSW), for brains past what"
        " every replica should hold in memory.",
    ),
    "eval": (
        "nexusbrain.cli.eval:eval_group",
        "Measure retrieval quality: judged sets, BEIR, LoCoMo, LongMemEval, known items.",
    ),
    "ingest-dir": (
        "nexusbrain.cli.bulk:ingest_dir",
        "Ingest a folder of .md/.markdown/.txt files, incrementally.",
    ),
    "export": (
        "nexusbrain.cli.bulk:export_",
        "Write every record as JSON lines (to stdout, or --output FILE).",
    ),
    "import": (
        "nexusbrain.cli.bulk:import_",
        "Load records written by `export` (a file, or - for stdin) into this brain.",
    ),
    "backup": (
        "nexusbrain.cli.bulk:backup",
        "Copy the whole brain to TARGET (a new file), consistent while a server goes on writing.",
    ),
    "copy": (
        "nexusbrain.cli.bulk:copy",
        "Copy the brain at SOURCE into a new, empty brain at TARGET, losslessly: each a SQLite"
        " file or a postgresql:// URL (one ?schema= per brain).",
    ),
    "serve": (
        "nexusbrain.cli.serve:serve",
        "Start the HTTP API, the web UI (/app) and the API docs (/docs).",
    ),
    "mcp": (
        "nexusbrain.cli.serve:mcp",
        "Serve MCP over stdio, for an agent that starts nexusbrain as its memory server.",
    ),
}


class OneLineError(click.ClickException):
    """A mistake on the command line, told as every error is: one line, exit code 1."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.message}", err=True)


class BrainGroup(LazyGroup):
    """Turns a BrainError, and click's usage errors (three lines and exit code 2 of its
    own), into a one-line message and exit code 1."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        given = list(args)
        try:
            ctx = super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise one_line(exc, given) from exc
        ctx.meta["nexusbrain.args"] = given
        return ctx

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrainError as exc:
            click.echo(f"error: {exc.message}", err=True)
            ctx.exit(1)
        except click.UsageError as exc:
            raise one_line(exc, ctx.meta.get("nexusbrain.args", [])) from exc


def one_line(exc: click.UsageError, given: list[str]) -> OneLineError:
    """`exc` in one line, with the fix: a value that begins with '-' (a query "-foo" read as
    the options -f -o -o) goes after '--'; other mistakes point to the command's help."""
    message = exc.format_message()
    path = exc.ctx.command_path if exc.ctx is not None else "nexusbrain"
    if isinstance(exc, click.NoSuchOption):
        raw = next((a for a in given if a.startswith(exc.option_name)), exc.option_name)
        if not raw.startswith("--") and len(raw) > 2:
            import shlex  # only for this message

            words = path.split()
            example = " ".join([*words, "--", shlex.quote(raw)])
            return OneLineError(
                f"{message} To give a value that begins with '-' ({raw!r}), put it after"
                f" '--': {example}"
            )
    if "did you mean" in message.lower():
        return OneLineError(message)
    return OneLineError(f"{message} See '{path} --help'.")


def load_lazy(name: str) -> click.Command:
    """The command of LAZY[name], imported now."""
    module, _, attribute = LAZY[name][0].partition(":")
    command: click.Command = getattr(importlib.import_module(module), attribute)
    if name == "eval":
        from nexusbrain.cli.eval_sweep import add_sweep_commands

        if isinstance(command, click.Group) and "run-all" not in command.commands:
            add_sweep_commands(command)  # run-all, compare, replay, captures
    return command


@click.group(cls=BrainGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    metavar="PATH_OR_URL",
    help="The brain: a SQLite file (or sqlite:///path), or postgresql://user@host/db?schema=NAME"
    " (the postgres extra). Default: $BRAIN_DB_URL, else $BRAIN_DB_PATH, else brain.db in the"
    " platform data directory.",
)
@click.option(
    "--local",
    is_flag=True,
    help="Work in this process even when a server is running for the brain.",
)
@click.version_option(__version__, prog_name="nexusbrain")
@click.pass_context
def cli(ctx: click.Context, db: str | None, local: bool) -> None:
    """nexusbrain: local-first memory and search that explains itself.

    search, recall, explain, get, add, stats and graph use a server already running for the
    brain (`nexusbrain serve`; or $BRAIN_URL when --db is not given), and print what they
    would print in process.

    \b
    Example:
      nexusbrain ingest-dir ~/notes
      nexusbrain search "how do I rotate the api keys"
    """
    ctx.ensure_object(dict)
    ctx.obj["db"] = db
    ctx.obj["local"] = local
    if ctx.invoked_subcommand not in ONE_SHOT:
        gc.enable()  # main() turned it off for a one-shot read; this command may run long


# Commands that answer one bounded read and end: they run with the cyclic collector off.
ONE_SHOT = frozenset({"search", "recall", "explain", "get", "stats"})


def _add_commands(group: LazyGroup) -> None:
    """The operations' commands, and those of LAZY; each made when it runs."""
    add_commands(group)
    for name, (_, summary) in LAZY.items():
        group.add_lazy(name, partial(load_lazy, name), summary)


_add_commands(cli)


def main() -> None:
    # A one-shot read makes long-lived objects (modules, the brain, the model) and little
    # garbage, so Python's cyclic collections as it starts are work for nothing: ~9 ms of a
    # search's ~225 ms of CPU (docs/design/cli.md). Other commands turn them back on (cli).
    gc.disable()
    try:
        cli(prog_name="nexusbrain")
    finally:
        # The process ends here and its memory goes with it: frozen, its objects are left out
        # of the cyclic collections that Python's exit would otherwise run over all of them,
        # a large part of a short command's time (docs/design/cli.md).
        gc.freeze()
        gc.enable()
