"""The `nexusbrain` (alias `brain`) command line. Each command parses its flags, asks the brain
one question and prints the answer: readable by default, JSON with --json.

The answering commands (search, recall, explain, get, add, stats, graph) ask a server that is
already running for the brain when there is one (BRAIN_URL, or the discovery file `serve`
leaves beside the database), in one HTTP request, and the brain in this process otherwise or
with --local (cli/answers.py). So this module imports only click and the ground floor at the
top: the brain, numpy and the model load only when a command works in process, and the
commands of `eval` and `bench` only when they run.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import orjson

from nexusbrain import __version__
from nexusbrain.cli import render
from nexusbrain.cli.answers import Answers, Filters
from nexusbrain.cli.graph import graph
from nexusbrain.errors import BrainError, InvalidInput, NotFound

if TYPE_CHECKING:
    from nexusbrain.brain import Brain

F = TypeVar("F", bound=Callable[..., Any])

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


class BrainGroup(click.Group):
    """Turns a BrainError into a one-line message and exit code 1, and loads the commands of
    LAZY on first use."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrainError as exc:
            click.echo(f"error: {exc.message}", err=True)
            ctx.exit(1)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY and name not in self.commands:
            self.add_command(load_lazy(name), name)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in LAZY and name not in self.commands:  # its help, without importing it
                command: click.Command | None = click.Command(name, help=LAZY[name][1])
            else:
                command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def load_lazy(name: str) -> click.Command:
    """The command of LAZY[name], imported now."""
    module, _, attribute = LAZY[name][0].partition(":")
    command: click.Command = getattr(importlib.import_module(module), attribute)
    if name == "eval":
        from nexusbrain.cli.eval_sweep import add_sweep_commands

        if isinstance(command, click.Group) and "run-all" not in command.commands:
            add_sweep_commands(command)  # run-all, compare, replay, captures
    return command


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(func)


def emit(value: Any) -> None:
    click.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())


def brain_of(ctx: click.Context, *, create: bool = False) -> Brain:
    """The brain in this process, opened on first use and closed with the command. Only the
    commands that store (`create`) make a brain where none is: a read of a mistyped --db
    says there is no brain there rather than leave an empty one behind."""
    brain: Brain | None = ctx.obj.get("brain")
    if brain is None:
        from nexusbrain.brain import Brain

        try:
            brain = Brain.open(ctx.obj["db"], create=create)
        except NotFound as exc:
            raise NotFound(
                f"{exc.message}. Check --db (or BRAIN_DB_PATH); `add`, `ingest-dir` or"
                " `import` make a brain"
            ) from None
        ctx.obj["brain"] = brain
        ctx.call_on_close(brain.close)
    return brain


def answers_of(ctx: click.Context, *, create: bool = False) -> Answers:
    """Where the answering commands ask: the running server (unless --local), else the brain
    in this process (made, for a command that stores, if there is none)."""
    root = ctx.find_root()
    answers: Answers | None = root.obj.get("answers")
    if answers is None:
        if not root.obj["local"] and root.obj.get("brain") is None:  # no brain handed in
            from nexusbrain.cli.client import reach

            answers = reach(root.obj["db"])
        if answers is None:
            from nexusbrain.cli.local import Local

            answers = Local(brain_of(root, create=create))
        root.obj["answers"] = answers
    return answers


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


@cli.command()
@click.argument("text")
@click.option("--source", help="Where the memory came from (an agent, a url...).")
@click.option("--domain", help="Domain to file it under.")
@click.option("--tag", "tags", multiple=True, help="A tag; repeat for more.")
@json_option
@click.pass_context
def add(
    ctx: click.Context,
    text: str,
    source: str | None,
    domain: str | None,
    tags: tuple[str, ...],
    as_json: bool,
) -> None:
    """Remember a short piece of text. The same text again is a duplicate.

    \b
    Example:
      nexusbrain add "The staging db moved to db-2 on 2025-03-01" --tag infra
    """
    result = answers_of(ctx, create=True).add(text, source=source, domain=domain, tags=tags)
    if as_json:
        emit(result)
    else:
        click.echo(f"{result['status']}: document {result['id']}")


# records.SearchMode's values (tests/test_cli.py checks): importing records would cost the
# fast path ~10 ms
MODE_NAMES = ("conservative", "balanced", "tokenmax")
MODES = click.Choice(MODE_NAMES)


def mode_option(func: F) -> F:
    return click.option(
        "--mode",
        type=MODES,
        default="balanced",
        show_default=True,
        help="conservative: few strict hits; balanced: hybrid; tokenmax: wide, PRF, context.",
    )(func)


@cli.command()
@click.argument("query")
@click.option("-k", "--k", "k", type=int, help="How many hits (default: the mode's).")
@mode_option
@click.option("--domain", help="Only this domain.")
@click.option("--path-prefix", help="Only documents whose uri/path starts with this.")
@click.option("--document", "document_id", type=int, help="Only this document id.")
@click.option("--best-per-document", is_flag=True, help="Keep only each document's best chunk.")
@click.option("--explain", is_flag=True, help="Show each hit's trace: why it ranked.")
@json_option
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    k: int | None,
    mode: str,
    domain: str | None,
    path_prefix: str | None,
    document_id: int | None,
    best_per_document: bool,
    explain: bool,
    as_json: bool,
) -> None:
    """Search with a natural-language query.

    \b
    Example:
      nexusbrain search "why did the deploy fail" -k 5 --explain
    """
    filters = Filters(domain=domain, path_prefix=path_prefix, document_id=document_id)
    found = answers_of(ctx).search(
        query, k=k, mode=mode, filters=filters, best_per_document=best_per_document
    )
    if as_json:
        emit(found)
    else:
        render.hits(found["hits"], explain=explain, match=found.get("match"))


@cli.command()
@click.argument("query")
@click.option("-k", "--k", "k", type=int, help="Hits to consider (default: the mode's).")
@click.option("--budget", "budget_tokens", type=int, help="Token budget (default: the mode's).")
@mode_option
@json_option
@click.pass_context
def recall(
    ctx: click.Context,
    query: str,
    k: int | None,
    budget_tokens: int | None,
    mode: str,
    as_json: bool,
) -> None:
    """Context for a model: the best hits that fit a token budget, with citations.

    \b
    Example:
      nexusbrain recall "what do we know about the outage" --budget 800
    """
    result = answers_of(ctx).recall(query, k=k, budget_tokens=budget_tokens, mode=mode)
    if as_json:
        emit(result)
    else:
        render.recall(result)


@cli.command("explain")
@click.argument("query")
@click.argument("document")
@click.option("-k", "--k", "k", type=int, help="The k to judge 'returned' by.")
@mode_option
@click.option("--domain", help="Apply this domain filter.")
@click.option("--path-prefix", help="Apply this path prefix filter.")
@click.option("--best-per-document", is_flag=True, help="As search --best-per-document.")
@json_option
@click.pass_context
def explain_(
    ctx: click.Context,
    query: str,
    document: str,
    k: int | None,
    mode: str,
    domain: str | None,
    path_prefix: str | None,
    best_per_document: bool,
    as_json: bool,
) -> None:
    """Why (not): where DOCUMENT (an id, uri or path) ranked for QUERY, from the very search
    `search` runs with the same options, and the chunk it speaks of.

    \b
    Example:
      nexusbrain explain "why did the deploy fail" ~/notes/deploy.md
    """
    filters = Filters(domain=domain, path_prefix=path_prefix)
    value = answers_of(ctx).explain(
        query, document, k=k, mode=mode, filters=filters, best_per_document=best_per_document
    )
    if as_json:
        emit(value)
    else:
        render.explanation(value)


@cli.command()
@click.argument("ref")
@click.option("--chunks", is_flag=True, help="Also list the document's chunks and spans.")
@click.option("--lines", help="Only these lines of the content, e.g. 10-20.")
@json_option
@click.pass_context
def get(ctx: click.Context, ref: str, chunks: bool, lines: str | None, as_json: bool) -> None:
    """Show a document, by id or by path/uri.

    \b
    Example:
      nexusbrain get 12 --lines 10-20
      nexusbrain get ~/notes/deploy.md --chunks
    """
    span = _line_range(lines)
    document = answers_of(ctx).document(ref, chunks=chunks)
    if as_json:
        emit(document)
    else:
        render.document(document, span)


def _line_range(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    start, _, end = text.partition("-")
    if not (start.isdigit() and (end or start).isdigit()):
        raise InvalidInput(f"--lines {text!r} must look like 10-20 or 7")
    return int(start), int(end or start)


@cli.command()
@click.argument("ref")
@json_option
@click.pass_context
def delete(ctx: click.Context, ref: str, as_json: bool) -> None:
    """Retire a document from search, by id or by path/uri (its history is kept).

    \b
    Example:
      nexusbrain delete 12
      nexusbrain delete ~/notes/old-plan.md
    """
    brain = brain_of(ctx)
    document = brain.document(ref)
    status = "retired" if brain.delete_document(document.id) else "already_retired"
    if as_json:
        emit({"id": document.id, "uri": document.uri, "status": status})
    else:
        click.echo(f"{status}: document {document.id} ({document.uri})")


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
@json_option
@click.pass_context
def stats(ctx: click.Context, as_json: bool) -> None:
    """Counts, database size and memory use.

    \b
    Example:
      nexusbrain stats --json
    """
    value = answers_of(ctx).stats()
    if as_json:
        emit(value)
    else:
        render.stats(value)


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


cli.add_command(graph)


def main() -> None:
    cli(prog_name="nexusbrain")
