"""The commands that move much at once, with progress bars: ingest a folder (and follow it),
export, import, back up, copy. Loaded only when one runs (cli/main.py's LAZY)."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import orjson

from nexusbrain.cli import render
from nexusbrain.cli.answers import brain_of
from nexusbrain.cli.commands import emit, json_option
from nexusbrain.errors import ModelUnavailable
from nexusbrain.records import Progress

if TYPE_CHECKING:
    from nexusbrain.brain import Brain


@click.command("ingest-dir")
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
        _embed_missing(brain, bars)
    brain.admin.refresh_index()
    if as_json:
        emit(views.directory_report(report))
    else:
        render.directory_report(report, brain.location)
    if report.errors and strict:
        ctx.exit(1)
    if watch:
        click.echo(f"watching {report.root} (Ctrl-C to stop)", err=True)
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C while a sync is printed
            brain.watch_dir(folder, domain=domain, on_sync=render.file_changes)


def _embed_missing(brain: Brain, progress: Progress) -> None:
    """Embed what has no vector yet, before the command ends. A model server that is down
    fails no write: what is stored stays, and its vectors follow when the server answers
    (the next command, or a running server, embeds them)."""
    try:
        brain.admin.embed_missing(progress)
    except ModelUnavailable as exc:
        click.echo(
            f"warning: {exc.message}; what was written is stored, and its vectors follow"
            " when the model server answers",
            err=True,
        )


@click.command("export")
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


READ_EVERY = 1_000  # lines between two reports of how much of the file was read


def _read(source: Any, progress: Progress) -> Iterator[bytes]:
    """The lines of `source`, telling `progress` how many of its bytes were read ("reading",
    as the import checks and stages them) when its size is known: a file, not a pipe."""
    try:
        size = os.fstat(source.fileno()).st_size
    except (OSError, ValueError, io.UnsupportedOperation):
        size = 0
    done = 0
    for number, line in enumerate(source, start=1):
        done += len(line)
        if size and number % READ_EVERY == 0:
            progress("reading", min(done, size), size)
        yield line
    if size:
        progress("reading", size, size)


@click.command()
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


@click.command("import")
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
        lines = parse_lines(_read(source, bars))
        result = views.import_result(brain.admin.import_records(lines, bars))
        _embed_missing(brain, bars)  # a slow profile's vectors too, before the command ends
    if as_json:
        emit(result)
    else:
        render.import_summary(result)


@click.command()
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
