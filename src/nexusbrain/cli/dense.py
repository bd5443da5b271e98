"""`nexusbrain dense-index`: the dense index in the database (pgvector HNSW). Loaded only
when it runs (cli/main.py's LAZY), so that the command line's fast path does not import the
settings its defaults come from."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from nexusbrain.cli.answers import brain_of
from nexusbrain.cli.commands import emit, json_option
from nexusbrain.config import HNSW_BUILD_MEMORY, HNSW_EF_CONSTRUCTION, HNSW_M

if TYPE_CHECKING:
    from nexusbrain.brain.admin import Admin


@click.group("dense-index")
def dense_index() -> None:
    """The dense index in the database (PostgreSQL: pgvector HNSW), for brains past what every
    replica should hold in memory. Without one, each process keeps the vectors itself.

    \b
    Example:
      nexusbrain --db 'postgresql://team@db.lan/brains?schema=team_a' dense-index build
      nexusbrain --db 'postgresql://team@db.lan/brains?schema=team_a' dense-index status --json
    """


def _size(size: int) -> str:
    return f"{size / 2**20:,.1f} MB" if size >= 2**20 else f"{size / 2**10:,.0f} KB"


def _dense_line(value: dict[str, Any]) -> str:
    if not value["built"] and value.get("rows_at_build") is not None:
        return (
            f"{value['model']}: a dense-index build did not finish (writers still centre their"
            " vectors for it): run dense-index build again, or dense-index drop"
        )
    if not value["built"]:
        return f"{value['model']}: no database-side index (each process searches its own)"
    return (
        f"{value['model']}: pgvector HNSW over {value['rows_at_build']:,} rows"
        f" (m {value['m']}, ef_construction {value['ef_construction']}),"
        f" {_size(value['index_bytes'])}, built {value['built_at']}"
    )


def _say(value: dict[str, Any], as_json: bool, after: str = "") -> None:
    """The index's status as JSON, or as a line (with `after` at its end)."""
    if as_json:
        emit(value)
    else:
        click.echo(_dense_line(value) + after)


def _status_command(name: str, doc: str, call: Callable[[Admin], dict[str, Any]]) -> None:
    """The command `name`: one call to the brain's admin, whose answer is the index's status,
    shown. `doc` is its help, before the example."""
    example = f"nexusbrain --db 'postgresql://team@db.lan/brains?schema=team_a' dense-index {name}"

    @dense_index.command(name, help=f"{doc}\n\n\b\nExample:\n  {example}\n")
    @json_option
    @click.pass_context
    def command(ctx: click.Context, as_json: bool) -> None:
        _say(call(brain_of(ctx).admin), as_json)


_status_command(
    "status",
    "Whether the brain's model has an HNSW index, and what this process searches with.",
    lambda admin: admin.dense_index_status(),
)
_status_command(
    "drop",
    "Drop the brain's HNSW index: replicas started after it keep the vectors in memory.",
    lambda admin: admin.drop_dense_index(),
)


@dense_index.command("build")
@click.option("--m", "m", type=int, default=HNSW_M, show_default=True, help="HNSW graph degree.")
@click.option(
    "--ef-construction",
    type=int,
    default=HNSW_EF_CONSTRUCTION,
    show_default=True,
    help="Candidates per insert while building.",
)
@click.option(
    "--memory",
    default=HNSW_BUILD_MEMORY,
    show_default=True,
    help="PostgreSQL's maintenance_work_mem for the build, which is much faster while the"
    " graph fits in it (PostgreSQL says when it no longer does).",
)
@json_option
@click.pass_context
def dense_build(
    ctx: click.Context, m: int, ef_construction: int, memory: str, as_json: bool
) -> None:
    """Build (or build again, around the centre of now) the HNSW index of the brain's model.
    Writes and searches go on meanwhile; replicas started after it search with it.

    \b
    Example:
      nexusbrain --db 'postgresql://team@db.lan/brains?schema=team_a' dense-index build
    """
    started = time.perf_counter()

    def say(message: str) -> None:
        click.echo(f"[{time.perf_counter() - started:6.1f} s] {message}", err=True)

    value = brain_of(ctx).admin.build_dense_index(
        m=m, ef_construction=ef_construction, memory=memory, progress=say
    )
    value["seconds"] = round(time.perf_counter() - started, 1)
    _say(value, as_json, f" in {value['seconds']} s")
