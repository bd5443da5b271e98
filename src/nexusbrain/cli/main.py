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

import contextlib
import importlib
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import click
import orjson

from nexusbrain import __version__
from nexusbrain.cli import render
from nexusbrain.cli.answers import brain_of
from nexusbrain.cli.commands import LazyGroup, add_commands, emit, json_option
from nexusbrain.errors import BrainError

# Commands loaded only when they run, with the one-line help `nexusbrain --help` lists for
# them (tests/test_cli.py checks it against the command's own).
LAZY = {
    "bench": (
        "nexusbrain.cli.bench:bench",
        "Benchmark a real server on a synthetic markdown corpus at each scale.",
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
}


class BrainGroup(LazyGroup):
    """Turns a BrainError into a one-line message and exit code 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrainError as exc:
            click.echo(f"error: {exc.message}", err=True)
            ctx.exit(1)


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


@cli.command("ingest-dir")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option("--domain", help="Domain to file these documents under (default: 'default').")
@click.option(
    "--strict", is_flag=True, help="Exit with status 1 if any file was skipped (default: 0)."
)
@click.option("--watch", is_flag=True, help="Then keep the brain in step as files change.")
@json_option
@click.pass_context
def ingest_dir(
    ctx: click.Context, folder: Path, domain: str | None, strict: bool, watch: bool, as_json: bool
) -> None:
    """Ingest a folder of .md/.markdown/.txt files, incrementally.

    Unchanged files cost nothing, changed files are re-chunked, and files gone from disk are
    retired from search. Files that cannot be ingested are skipped and listed on stderr with
    the reason; the run still succeeds (exit 0), unless --strict is given.
    With --watch it then follows the folder until Ctrl-C, one line per file it changes
    (editors that save through a temporary file and a rename are followed too).

    \b
    Example:
      nexusbrain ingest-dir ~/notes --domain notes
      nexusbrain ingest-dir ~/notes --watch
    """
    from nexusbrain import views

    brain = brain_of(ctx, create=True)
    with render.Bars(not as_json) as bars:
        report = brain.ingest_dir(folder, domain=domain, progress=bars)
        brain.admin.embed_missing(bars)
    brain.admin.refresh_index()
    if as_json:
        emit(views.directory_report(report))
    else:
        render.directory_report(report)
    if report.errors and strict:
        ctx.exit(1)
    if watch:
        click.echo(f"watching {report.root} (Ctrl-C to stop)", err=True)
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C while a sync is printed
            brain.watch_dir(folder, domain=domain, on_sync=render.file_changes)


@cli.command("export")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="File.")
@click.pass_context
def export_(ctx: click.Context, output: Path | None) -> None:
    """Write every record as JSON lines (to stdout, or --output FILE).

    \b
    Example:
      nexusbrain export -o backup.jsonl
    """
    records = brain_of(ctx).admin.export()
    if output is None:
        for record in records:
            sys.stdout.buffer.write(orjson.dumps(record) + b"\n")
        return
    with output.open("wb") as handle:
        for record in records:
            handle.write(orjson.dumps(record) + b"\n")


@cli.command()
@click.argument("target", type=click.Path(dir_okay=False, path_type=Path))
@json_option
@click.pass_context
def backup(ctx: click.Context, target: Path, as_json: bool) -> None:
    """Copy the whole brain to TARGET (a new file), consistent while a server goes on writing.

    For SQLite the copy is itself a brain (`nexusbrain --db TARGET stats`); for PostgreSQL it
    is the brain's export, one snapshot, that `import` restores (or use pg_dump).

    \b
    Example:
      nexusbrain backup ~/backups/brain-2026-12-01.db
    """
    started = time.perf_counter()
    path = brain_of(ctx).admin.backup(target)
    value = {
        "path": str(path),
        "bytes": path.stat().st_size,
        "seconds": round(time.perf_counter() - started, 3),
    }
    if as_json:
        emit(value)
    else:
        click.echo(f"backed up to {value['path']} ({value['bytes']:,} bytes)")


@cli.command("import")
@click.argument("source", type=click.File("rb"))
@json_option
@click.pass_context
def import_(ctx: click.Context, source: Any, as_json: bool) -> None:
    """Load records written by `export` (a file, or - for stdin) into this brain.

    Into an empty brain the records are restored with their ids. Into one that holds data
    they are merged: a document whose path is already stored gets the newer version (its
    older versions are kept as revisions), the rest is added with new ids, and facts keep
    their lineage. Records that would contradict what is stored are refused, all of them
    listed, and nothing is written.

    \b
    Example:
      nexusbrain --db restored.db import backup.jsonl
    """
    from nexusbrain import views
    from nexusbrain.jsonlines import parse_lines

    brain = brain_of(ctx, create=True)
    with render.Bars(not as_json) as bars:
        result = views.import_result(brain.admin.import_records(parse_lines(source), bars))
        brain.admin.embed_missing(bars)  # a slow profile's vectors too, before the command ends
    if as_json:
        emit(result)
    else:
        render.import_summary(result)


@cli.command()
@click.argument("source", metavar="SOURCE")
@click.argument("target", metavar="TARGET")
@json_option
def copy(source: str, target: str, as_json: bool) -> None:
    """Copy the brain at SOURCE into a new, empty brain at TARGET, losslessly: each a SQLite
    file or a postgresql:// URL (one ?schema= per brain). The copy is re-embedded; its
    export is the source's, byte for byte. --db is not used.

    \b
    Example:
      nexusbrain copy ~/brain.db 'postgresql://team@db.lan/brains?schema=team_a'
      nexusbrain copy 'postgresql://team@db.lan/brains?schema=team_a' restored.db
    """
    from nexusbrain import views
    from nexusbrain.brain import Brain

    with Brain.open(source, create=False) as brain, render.Bars(not as_json) as bars:
        result = brain.admin.copy_to(target, progress=bars)
    if as_json:
        emit(views.import_result(result))
    else:
        click.echo(
            f"copied {result.documents} documents and {result.chunks} chunks"
            f" ({result.records} records)"
        )


@cli.command()
@click.option("--host", help="Address to listen on. Default: $BRAIN_BIND_HOST, else 127.0.0.1.")
@click.option("--port", type=int, help="Port (0: any free one). Default: $BIND_PORT, else 8765.")
@click.option("--log-level", default="info", show_default=True)
@click.option("--mcp", is_flag=True, help="Also serve MCP (streamable HTTP) at /mcp.")
@click.option(
    "--watch",
    "folders",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Keep this folder ingested as its files change (repeat for more).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Processes answering requests: one per core lets concurrent searches use them all "
    "(not with --mcp).",
)
@click.pass_context
def serve(
    ctx: click.Context,
    host: str | None,
    port: int | None,
    log_level: str,
    mcp: bool,
    folders: tuple[Path, ...],
    workers: int,
) -> None:
    """Start the HTTP API, the web UI (/app) and the API docs (/docs). Binding beyond
    loopback needs BRAIN_API_TOKEN.

    While it runs, search, recall, get, explain, add, stats and graph on this brain send it
    one request each instead of loading the brain themselves. With --mcp, agents also reach
    the brain over MCP at /mcp, behind the same token.

    \b
    Example:
      nexusbrain serve --port 8765
      curl 'http://127.0.0.1:8765/search?q=deploy+failure'
      nexusbrain serve --mcp --watch ~/notes
      nexusbrain serve --workers 2
    """
    import threading

    from nexusbrain.api.server import run

    brain = brain_of(ctx, create=True)
    stop = threading.Event()
    watchers = [
        threading.Thread(
            target=brain.watch_dir,
            args=(folder,),
            kwargs={"on_sync": render.file_changes, "stop": stop},
            name=f"nexusbrain-watch-{n}",
            daemon=True,
        )
        for n, folder in enumerate(folders)
    ]

    def say_where(url: str) -> None:
        click.echo(f"nexusbrain {__version__}: serving {brain.stats().db_path} at {url}")
        click.echo(f"  web UI    {url}/app")
        click.echo(f"  API docs  {url}/docs")
        if mcp:
            click.echo(f"  MCP       {url}/mcp")
        for folder in folders:
            click.echo(f"  watching  {folder.expanduser().resolve()}")
        for watcher in watchers:
            watcher.start()

    try:
        run(
            brain,
            host=host,
            port=port,
            log_level=log_level,
            mcp=mcp,
            on_listen=say_where,
            workers=workers,
        )
    finally:
        stop.set()
        for watcher in watchers:
            watcher.join(timeout=10)


@cli.command()
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="warning",
    show_default=True,
    help="Logs go to stderr.",
)
@click.pass_context
def mcp(ctx: click.Context, log_level: str) -> None:
    """Serve MCP over stdio, for an agent that starts nexusbrain as its memory server.

    stdout carries only the protocol; logs go to stderr. Stops when the client closes stdin.
    When a server started with --mcp is running for the brain, this relays to it (one warm
    brain for every agent) instead of loading the brain; --local loads it all the same.

    \b
    Example:
      nexusbrain --db ~/brain.db mcp
    """
    import logging

    logging.basicConfig(stream=sys.stderr, level=log_level.upper(), force=True)
    if not ctx.obj["local"] and ctx.obj.get("brain") is None:
        from nexusbrain.discovery import locate

        found = locate(ctx.obj["db"])
        if found is not None and found.mcp is not False:
            from nexusbrain.mcp_server.relay import relay

            relay(found.url, found.token, sys.stdin.buffer, sys.stdout.buffer)
            return
    from nexusbrain.mcp_server import serve_stdio

    with contextlib.redirect_stdout(sys.stderr):  # nothing but protocol may reach stdout
        brain = brain_of(ctx, create=True)
        brain.admin.embed_missing(wait=False)  # as `serve` does: after a model change or an import
    serve_stdio(brain)


def _add_commands(group: LazyGroup) -> None:
    """The operations' commands, and those of LAZY; each made when it runs."""
    add_commands(group)
    for name, (_, summary) in LAZY.items():
        group.add_lazy(name, partial(load_lazy, name), summary)


_add_commands(cli)


def main() -> None:
    cli(prog_name="nexusbrain")
