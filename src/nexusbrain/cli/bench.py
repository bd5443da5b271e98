"""`nexusbrain bench`: measure ingest, search, memory and start-up on a synthetic corpus."""

from __future__ import annotations

import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
import orjson

from nexusbrain.bench.corpus import DEFAULT_SEED
from nexusbrain.config import default_workers
from nexusbrain.envelopes import DEFAULT_ENVELOPE, ENVELOPES
from nexusbrain.errors import InvalidInput

F = TypeVar("F", bound=Callable[..., Any])


class PhaseDisplay:
    """Progress on stderr: one rewritten line on a terminal, one line per phase otherwise."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.last = ""

    def __call__(self, what: str, done: int, total: int) -> None:
        elapsed = int(time.monotonic() - self.started)
        stamp = f"[{elapsed // 60:02d}:{elapsed % 60:02d}]"
        if self.tty:
            count = f" {done:,}/{total:,}" if total > 1 else ""
            sys.stderr.write(f"\r\x1b[K{stamp} {what}{count}")
            sys.stderr.flush()
        elif what != self.last:
            click.echo(f"{stamp} {what}", err=True)
        self.last = what

    def close(self) -> None:
        if self.tty and self.last:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


@contextmanager
def exit_on_sigterm() -> Iterator[None]:
    """A terminated bench still stops its child server and removes its scratch folder: the
    signal becomes SystemExit, which runs the `finally` blocks."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def parse_counts(text: str, option: str, example: str) -> tuple[int, ...]:
    """Comma-separated whole numbers of at least 1; `_` may group digits (10_000)."""
    try:
        counts = tuple(int(part.replace("_", "")) for part in text.split(",") if part.strip())
    except ValueError:
        raise InvalidInput(f"{option} {text!r} must be whole numbers like {example}") from None
    if not counts or min(counts) < 1:
        raise InvalidInput(f"{option} {text!r} must be whole numbers of at least 1, like {example}")
    return counts


def parse_scales(text: str) -> tuple[int, ...]:
    return parse_counts(text, "--scales", "1000,10000")


def _count(flag: str, default: int, help: str) -> Callable[[F], F]:
    return click.option(flag, type=click.IntRange(1), default=default, show_default=True, help=help)


def _server_db(url: str | None) -> str | None:
    from nexusbrain.storage.postgres import is_postgres

    if url is not None and not is_postgres(url):
        raise InvalidInput(f"--db {url!r} must be a postgresql:// URL (SQLite needs no --db)")
    return url


@click.command("bench")
@click.option(
    "--scales",
    help="Document counts, comma-separated. [default: 1000,10000, or the "
    "envelope's document count with --envelope]",
)
@_count("--searches", 200, "Requests in each latency series.")
@_count("--concurrency", 8, "Clients in the concurrent series.")
@click.option(
    "--workers",
    type=click.IntRange(1),
    help="serve --workers of every server the bench starts (HTTP ingest and search). "
    "Default: serve's, one per core (at most 4).",
)
@_count("--runs", 1, "Runs per scale; the report gives their median.")
@click.option(
    "--envelope",
    type=click.Choice(list(ENVELOPES)),
    help="Check the figures against this envelope and exit 1 naming each broken limit.",
)
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True, help="Corpus seed.")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Scratch folder for corpora and databases. [default: a temporary one]",
)
@click.option(
    "--db",
    "server_db",
    metavar="URL",
    help="Run the brains on this PostgreSQL database (postgresql://…): scratch schemas named"
    " after its ?schema=, dropped at the end. [default: SQLite files in the scratch folder]",
)
@click.option(
    "--replicas",
    default="1",
    show_default=True,
    help="Server counts over one brain, comma-separated: HTTP ingest and concurrent /search"
    " run once per count (e.g. 1,2).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report instead of a table.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the JSON report to this file.",
)
@click.pass_context
def bench(
    ctx: click.Context,
    scales: str | None,
    searches: int,
    concurrency: int,
    workers: int | None,
    runs: int,
    envelope: str | None,
    seed: int,
    workdir: Path | None,
    server_db: str | None,
    replicas: str,
    as_json: bool,
    out: Path | None,
) -> None:
    """Benchmark a real server on a synthetic markdown corpus at each scale.

    Measures ingest (HTTP and ingest-dir), /search and /recall latency per mode (one client
    and several), RSS, database size, cold start, the model's size and incremental re-ingest.
    Only talks to 127.0.0.1; the database given by --db is not touched. Progress goes to
    stderr.

    \b
    Example:
      nexusbrain bench --scales 1000,10000 --searches 200
      nexusbrain bench --envelope desktop --json --out bench.json
      nexusbrain bench --scales 20000 --workers 2
      nexusbrain bench --db 'postgresql://me@/brains?schema=bench' --replicas 1,2
    """
    from nexusbrain.bench.runner import BenchConfig, run

    name = envelope or DEFAULT_ENVELOPE
    default = str(ENVELOPES[envelope].maxima.documents) if envelope else "1000,10000"
    if workdir:
        workdir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="nexusbrain-bench-", dir=workdir))
    config = BenchConfig(
        scales=parse_scales(scales or default),
        searches=searches,
        concurrency=concurrency,
        workers=workers or default_workers(),
        runs=runs,
        envelope=name,
        seed=seed,
        workdir=scratch,
        db=_server_db(server_db),
        replicas=parse_counts(replicas, "--replicas", "1,2"),
    )
    display = PhaseDisplay()
    try:
        with exit_on_sigterm():
            report = run(config, display)
    finally:
        display.close()
        shutil.rmtree(scratch, ignore_errors=True)
    data = orjson.dumps(report, option=orjson.OPT_INDENT_2)
    if out is not None:
        out.write_bytes(data + b"\n")
    if as_json:
        click.echo(data.decode())
    else:
        from nexusbrain.bench.report import table

        click.echo(table(report))
    if envelope and not report["envelope"]["ok"]:
        for breach in report["envelope"]["breaches"]:
            click.echo(f"error: envelope {envelope} broken at {breach}", err=True)
        ctx.exit(1)
