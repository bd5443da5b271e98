"""`nexusbrain graph ...`: the knowledge graph from the command line. Each command calls one
method of `brain.graph`; --json prints the same JSON as the HTTP API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
import orjson

from nexusbrain import views
from nexusbrain.brain import Brain
from nexusbrain.errors import InvalidInput
from nexusbrain.graph.model import (
    AsOf,
    History,
    IngestResult,
    Relationship,
    Traversal,
    describe,
    inputs_from_json,
    parse_instant,
)

F = TypeVar("F", bound=Callable[..., Any])


def _brain(ctx: click.Context) -> Brain:
    from nexusbrain.cli.main import brain_of  # main imports this module to register `graph`

    return brain_of(ctx)


def _emit(value: Any) -> None:
    click.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())


def _json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(func)


def _as_of_options(func: F) -> F:
    func = click.option(
        "--as-of-known", help="ISO-8601 transaction time: as the brain knew it then."
    )(func)
    return click.option("--as-of-valid", help="ISO-8601 valid time: what held in the world then.")(
        func
    )


def _as_of(valid: str | None, known: str | None) -> AsOf:
    return AsOf(parse_instant("as_of_valid", valid), parse_instant("as_of_known", known))


@click.group()
def graph() -> None:
    """The temporal knowledge graph: entities, and relationships with valid time (when a fact
    held) and transaction time (when the brain learned and retired it).

    \b
    Example:
      nexusbrain graph add alice manages bob --valid-at 2020-01-01 --invalid-at 2023-01-01
      nexusbrain graph relations --from alice
    """


@graph.command()
@click.argument("triple", nargs=-1)
@click.option("--valid-at", help="ISO-8601: when the fact began to hold.")
@click.option("--invalid-at", help="ISO-8601: when it stopped holding.")
@click.option("--source", help="Where the fact came from (a document, a request...).")
@click.option(
    "--file", "body", type=click.File("rb"), help="A JSON body as for POST /ingest ('-': stdin)."
)
@click.option("--dry-run", is_flag=True, help="Report what would change; change nothing.")
@_json_option
@click.pass_context
def add(
    ctx: click.Context,
    triple: tuple[str, ...],
    valid_at: str | None,
    invalid_at: str | None,
    source: str | None,
    body: Any,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Add a relationship FROM TYPE TO, or entities and relationships from a JSON file.

    Each relationship is `created` or a `duplicate` (nothing written). A changed window, or a
    new value of a functional type such as works_at, retires the old version.

    \b
    Example:
      nexusbrain graph add alice manages bob --valid-at 2020-01-01 --invalid-at 2023-01-01
      nexusbrain graph add alice works_at Globex --valid-at 2024-03-01 --dry-run
      nexusbrain graph add --file facts.json
    """
    request = _request(triple, valid_at, invalid_at, source, body)
    entities, relationships = inputs_from_json(request)
    result = _brain(ctx).graph.ingest(entities, relationships, dry_run=dry_run)
    if as_json:
        _emit(views.graph_ingest(result))
    else:
        _print_ingest(result)


def _request(
    triple: tuple[str, ...],
    valid_at: str | None,
    invalid_at: str | None,
    source: str | None,
    body: Any,
) -> Any:
    if body is not None:
        if triple or valid_at or invalid_at or source:
            raise InvalidInput("give either FROM TYPE TO (with its options) or --file, not both")
        try:
            return orjson.loads(body.read())
        except orjson.JSONDecodeError as exc:
            raise InvalidInput(f"--file {body.name}: not JSON: {exc}") from None
    if len(triple) != 3:
        raise InvalidInput(f"give FROM TYPE TO (three words), got {len(triple)}: {list(triple)}")
    fields = {"valid_at": valid_at, "invalid_at": invalid_at, "source": source}
    edge = dict(zip(("from", "type", "to"), triple, strict=True))
    return {"relationships": [edge | {k: v for k, v in fields.items() if v is not None}]}


@graph.command()
@click.option("--from", "from_name", help="The subject entity.")
@click.option("--to", "to_name", help="The object entity.")
@click.option("--type", "type_", help="Only this relationship type.")
@_as_of_options
@_json_option
@click.pass_context
def relations(
    ctx: click.Context,
    from_name: str | None,
    to_name: str | None,
    type_: str | None,
    as_of_valid: str | None,
    as_of_known: str | None,
    as_json: bool,
) -> None:
    """An entity's current relationships (or those held at the --as-of times).

    \b
    Example:
      nexusbrain graph relations --from alice --type works_at
      nexusbrain graph relations --from alice --as-of-valid 2021-06-01 --as-of-known 2026-01-01
    """
    when = _as_of(as_of_valid, as_of_known)
    found = _brain(ctx).graph.relations(from_name, to_name=to_name, type=type_, as_of=when)
    if as_json:
        _emit(views.relations(found, when))
    else:
        _print_relationships(found)


@graph.command()
@click.argument("relationship_id", type=int)
@_json_option
@click.pass_context
def history(ctx: click.Context, relationship_id: int, as_json: bool) -> None:
    """Every version of a relationship, oldest first, from any version's id.

    \b
    Example:
      nexusbrain graph history 7
    """
    value = _brain(ctx).graph.history(relationship_id)
    if as_json:
        _emit(views.relationship_history(value))
    else:
        _print_history(value)


@graph.command()
@click.argument("start")
@click.option("--depth", default=1, show_default=True, help="How many edges to follow.")
@_as_of_options
@_json_option
@click.pass_context
def traverse(
    ctx: click.Context,
    start: str,
    depth: int,
    as_of_valid: str | None,
    as_of_known: str | None,
    as_json: bool,
) -> None:
    """Follow current edges out of an entity; a path is kept only while all its edges hold
    at one time.

    \b
    Example:
      nexusbrain graph traverse alice --depth 2
    """
    value = _brain(ctx).graph.traverse(start, depth, as_of=_as_of(as_of_valid, as_of_known))
    if as_json:
        _emit(views.traversal(value))
    else:
        _print_traversal(value)


def _print_ingest(result: IngestResult) -> None:
    for o in result.relationships:
        label = "would be created" if result.dry_run and o.id is None else f"relationship {o.id}"
        click.echo(f"{o.status.value}: {describe(o.relationship, cite=False)} [{label}]")
        for r in o.retired:
            after = f", replaced by {r.successor}" if r.successor else ""
            click.echo(f"  retires {r.id or 'the version above'} ({r.reason.value}{after})")
    for e in result.entities:
        click.echo(f"{e.status.value}: entity {e.entity.name!r}")
    if result.dry_run:
        click.echo("dry run: nothing was changed")


def _print_relationships(found: list[Relationship]) -> None:
    if not found:
        click.echo("no relations")
    for r in found:
        click.echo(describe(r))


def _print_history(value: History) -> None:
    for v in value.versions:
        state = "current" if v.current else f"retired {v.superseded_at} ({v.reason})"
        click.echo(f"{v.id}: {describe(v, cite=False)}, known from {v.created_at}, {state}")


def _print_traversal(value: Traversal) -> None:
    if not value.hops:
        click.echo(f"no current edges from {value.start.name!r}")
    for hop in value.hops:
        steps = " -> ".join(describe(edge, cite=False) for edge in hop.path)
        ids = ", ".join(str(edge.id) for edge in hop.path)
        click.echo(f"{steps} [relationship{'s' if len(hop.path) > 1 else ''} {ids}]")
    if value.truncated:
        click.echo(f"(stopped after {len(value.hops)} paths)")
