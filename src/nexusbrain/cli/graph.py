"""`nexusbrain graph ...`: the knowledge graph from the command line. Each command asks one
question of the brain (in process, or of a running server: cli/answers.py) and prints its
JSON view, as the HTTP API returns it, or text made from that view."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

import click
import orjson

from nexusbrain.cli.answers import Answers
from nexusbrain.errors import InvalidInput
from nexusbrain.summaries import relationship_line

F = TypeVar("F", bound=Callable[..., Any])
View = Mapping[str, Any]


def _answers(ctx: click.Context, *, create: bool = False) -> Answers:
    from nexusbrain.cli.main import answers_of  # main imports this module to register `graph`

    return answers_of(ctx, create=create)


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
    value = _answers(ctx, create=not dry_run).graph_add(request, dry_run=dry_run)
    if as_json:
        _emit(value)
    else:
        _print_ingest(value)


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
    value = _answers(ctx).relations(
        from_name, to_name=to_name, type=type_, as_of_valid=as_of_valid, as_of_known=as_of_known
    )
    if as_json:
        _emit(value)
    else:
        _print_relationships(value["relationships"])


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
    value = _answers(ctx).history(relationship_id)
    if as_json:
        _emit(value)
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
    value = _answers(ctx).traverse(
        start, depth=depth, as_of_valid=as_of_valid, as_of_known=as_of_known
    )
    if as_json:
        _emit(value)
    else:
        _print_traversal(value)


def describe(r: View, *, cite: bool = True) -> str:
    """graph.model.describe, from a relationship's view: 'alice manages bob (valid
    2020-01-01..2023-01-01) [relationship 7]' (the id if cite)."""
    start, end = _short(r["valid_at"]), _short(r["invalid_at"])
    return relationship_line(r["from"], r["type"], r["to"], start, end, r["id"], cite=cite)


def _short(value: str | None) -> str:
    """A view's time (UTC, to the microsecond) as its date when it is midnight."""
    if value is None:
        return ""
    return value[:10] if value.endswith("T00:00:00.000000+00:00") else value


def _said(value: str) -> str:
    """A view's time as Python prints the datetime: 2026-01-02 03:04:05+00:00."""
    return str(datetime.fromisoformat(value))


def _print_ingest(result: View) -> None:
    for o in result["relationships"]:
        created = result["dry_run"] and o["id"] is None
        label = "would be created" if created else f"relationship {o['id']}"
        click.echo(f"{o['status']}: {describe(o, cite=False)} [{label}]")
        for r in o["retired"]:
            after = f", replaced by {r['replaced_by']}" if r["replaced_by"] else ""
            click.echo(f"  retires {r['id'] or 'the version above'} ({r['reason']}{after})")
    for e in result["entities"]:
        click.echo(f"{e['status']}: entity {e['name']!r}")
    if result["dry_run"]:
        click.echo("dry run: nothing was changed")


def _print_relationships(found: list[View]) -> None:
    if not found:
        click.echo("no relations")
    for r in found:
        click.echo(describe(r))


def _print_history(value: View) -> None:
    for v in value["versions"]:
        state = (
            "current" if v["current"] else f"retired {_said(v['superseded_at'])} ({v['reason']})"
        )
        click.echo(
            f"{v['id']}: {describe(v, cite=False)}, known from {_said(v['created_at'])}, {state}"
        )


def _print_traversal(value: View) -> None:
    """Each path in full: its edges are the hops of the paths it extends (paths are found
    breadth first, so every shorter path is listed before the paths that extend it)."""
    hops = value["hops"]
    if not hops:
        click.echo(f"no current edges from {value['from']['name']!r}")
    edges = {hop["relationship"]["id"]: hop["relationship"] for hop in hops}
    for hop in hops:
        steps = " -> ".join(describe(edges[i], cite=False) for i in hop["path"])
        ids = ", ".join(str(i) for i in hop["path"])
        click.echo(f"{steps} [relationship{'s' if len(hop['path']) > 1 else ''} {ids}]")
    if value["truncated"]:
        click.echo(f"(stopped after {len(hops)} paths)")
