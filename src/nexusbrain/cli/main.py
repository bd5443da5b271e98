"""The `nexusbrain` (alias `brain`) command line. Each command parses its flags, calls one Brain
method and prints the answer: readable by default, JSON with --json."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import orjson

from nexusbrain import __version__, views
from nexusbrain.brain import Brain
from nexusbrain.cli import render
from nexusbrain.cli.bench import bench
from nexusbrain.cli.eval import eval_group
from nexusbrain.cli.eval_sweep import add_sweep_commands
from nexusbrain.cli.graph import graph
from nexusbrain.errors import BrainError, InvalidInput
from nexusbrain.jsonlines import parse_lines
from nexusbrain.records import SearchMode

F = TypeVar("F", bound=Callable[..., Any])


class BrainGroup(click.Group):
    """Turns a BrainError into a one-line message and exit code 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrainError as exc:
            click.echo(f"error: {exc.message}", err=True)
            ctx.exit(1)


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(func)


def emit(value: Any) -> None:
    click.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())


def brain_of(ctx: click.Context) -> Brain:
    brain: Brain | None = ctx.obj.get("brain")
    if brain is None:
        brain = Brain.open(ctx.obj["db"])
        ctx.obj["brain"] = brain
        ctx.call_on_close(brain.close)
    return brain


@click.group(cls=BrainGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    metavar="PATH_OR_URL",
    help="The brain: a SQLite file (or sqlite:///path). Default: $BRAIN_DB_URL, else "
    "$BRAIN_DB_PATH, else brain.db in the platform data directory.",
)
@click.version_option(__version__, prog_name="nexusbrain")
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """nexusbrain: local-first memory and search that explains itself.

    \b
    Example:
      nexusbrain ingest-dir ~/notes
      nexusbrain search "how do I rotate the api keys"
    """
    ctx.ensure_object(dict)
    ctx.obj["db"] = db


@cli.command("ingest-dir")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option("--domain", help="Domain to file these documents under (default: 'default').")
@click.option(
    "--strict", is_flag=True, help="Exit with status 1 if any file was skipped (default: 0)."
)
@json_option
@click.pass_context
def ingest_dir(
    ctx: click.Context, folder: Path, domain: str | None, strict: bool, as_json: bool
) -> None:
    """Ingest a folder of .md/.markdown/.txt files, incrementally.

    Unchanged files cost nothing, changed files are re-chunked, and files gone from disk are
    retired from search. Files that cannot be ingested are skipped and listed on stderr with
    the reason; the run still succeeds (exit 0), unless --strict is given.

    \b
    Example:
      nexusbrain ingest-dir ~/notes --domain notes
    """
    brain = brain_of(ctx)
    with render.Bars(not as_json) as bars:
        report = brain.ingest_dir(folder, domain=domain, progress=bars)
        brain.embed_missing(bars)
    brain.refresh_index()
    if as_json:
        emit(views.directory_report(report))
    else:
        render.directory_report(report)
    if report.errors and strict:
        ctx.exit(1)


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
    result = brain_of(ctx).add_memory(text, source=source, domain=domain, tags=tags)
    if as_json:
        emit(views.write_result(result))
    else:
        click.echo(f"{result.status.value}: document {result.document_id}")


MODES = click.Choice([m.value for m in SearchMode])


def mode_option(func: F) -> F:
    return click.option(
        "--mode",
        type=MODES,
        default=SearchMode.BALANCED.value,
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
    from nexusbrain.retrieval.filters import make_filters

    filters = make_filters(domain=domain, path_prefix=path_prefix, document_id=document_id)
    hits = brain_of(ctx).search(
        query, k=k, filters=filters, best_per_document=best_per_document, mode=mode
    )
    if as_json:
        emit(views.search(query, mode, hits))
    else:
        render.hits(hits, explain=explain)


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
    result = brain_of(ctx).recall(query, k=k, budget_tokens=budget_tokens, mode=mode)
    if as_json:
        emit(views.recall(result))
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
    from nexusbrain.retrieval.filters import make_filters

    filters = make_filters(domain=domain, path_prefix=path_prefix)
    found = brain_of(ctx).explain(
        query, document, k=k, filters=filters, mode=mode, best_per_document=best_per_document
    )
    value = views.explanation(found)
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
    brain = brain_of(ctx)
    document = brain.document(ref)
    chunk_list = brain.document_chunks(document.id) if chunks else None
    if as_json:
        emit(views.document(document, chunk_list))
    else:
        render.document(document, chunk_list, _line_range(lines))


def _line_range(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    start, _, end = text.partition("-")
    if not (start.isdigit() and (end or start).isdigit()):
        raise InvalidInput(f"--lines {text!r} must look like 10-20 or 7")
    return int(start), int(end or start)


@cli.command()
@click.argument("document_id", type=int)
@json_option
@click.pass_context
def delete(ctx: click.Context, document_id: int, as_json: bool) -> None:
    """Retire a document from search (its history is kept).

    \b
    Example:
      nexusbrain delete 12
    """
    retired = brain_of(ctx).delete_document(document_id)
    status = "retired" if retired else "already_retired"
    if as_json:
        emit({"id": document_id, "status": status})
    else:
        click.echo(f"{status}: document {document_id}")


@cli.command("export")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="File.")
@click.pass_context
def export_(ctx: click.Context, output: Path | None) -> None:
    """Write every record as JSON lines (to stdout, or --output FILE).

    \b
    Example:
      nexusbrain export -o backup.jsonl
    """
    records = brain_of(ctx).export()
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

    The copy is itself a brain: `nexusbrain --db TARGET stats`.

    \b
    Example:
      nexusbrain backup ~/backups/brain-2026-12-01.db
    """
    started = time.perf_counter()
    path = brain_of(ctx).backup(target)
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
    result = brain_of(ctx).import_records(parse_lines(source))
    if as_json:
        emit(views.import_result(result))
    else:
        render.import_summary(result)


@cli.command()
@json_option
@click.pass_context
def stats(ctx: click.Context, as_json: bool) -> None:
    """Counts, database size and memory use.

    \b
    Example:
      nexusbrain stats --json
    """
    value = views.stats(brain_of(ctx).stats())
    if as_json:
        emit(value)
    else:
        render.stats(value)


@cli.command()
@click.option("--host", help="Address to listen on. Default: $BRAIN_BIND_HOST, else 127.0.0.1.")
@click.option("--port", type=int, help="Port. Default: $BIND_PORT, else 8765.")
@click.option("--log-level", default="info", show_default=True)
@click.option("--mcp", is_flag=True, help="Also serve MCP (streamable HTTP) at /mcp.")
@click.pass_context
def serve(
    ctx: click.Context, host: str | None, port: int | None, log_level: str, mcp: bool
) -> None:
    """Start the HTTP API (docs at /docs). Binding beyond loopback needs BRAIN_API_TOKEN.

    With --mcp, agents also reach the brain over MCP at /mcp, behind the same token.

    \b
    Example:
      nexusbrain serve --port 8765
      curl 'http://127.0.0.1:8765/search?q=deploy+failure'
      nexusbrain serve --mcp
    """
    from nexusbrain.api.server import run

    run(brain_of(ctx), host=host, port=port, log_level=log_level, mcp=mcp)


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

    \b
    Example:
      nexusbrain --db ~/brain.db mcp
    """
    import logging

    from nexusbrain.mcp_server import serve_stdio

    logging.basicConfig(stream=sys.stderr, level=log_level.upper(), force=True)
    with contextlib.redirect_stdout(sys.stderr):  # nothing but protocol may reach stdout
        brain = brain_of(ctx)
        brain.embed_missing()  # as `serve` does: after a model change or an import
    serve_stdio(brain)


add_sweep_commands(eval_group)  # run-all, compare, replay, captures
cli.add_command(eval_group)
cli.add_command(graph)
cli.add_command(bench)


def main() -> None:
    cli(prog_name="nexusbrain")
