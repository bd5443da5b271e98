"""`nexusbrain brains`: brains kept apart by PostgreSQL, each in its own schema with a role of
its own (storage/postgres/brains.py). Loaded only when it runs (cli/main.py's LAZY)."""

from __future__ import annotations

import click

from nexusbrain.cli.commands import emit, json_option
from nexusbrain.environment import resolve_db
from nexusbrain.errors import ConfigError


@click.group("brains")
def brains() -> None:
    """Brains kept apart by the database (PostgreSQL): a schema and a role for each.

    \b
    Example:
      nexusbrain brains create team_a --db 'postgresql://admin@db.lan/brains'
    """


@brains.command("create")
@click.argument("name")
@click.option(
    "--db",
    "db",
    metavar="URL",
    help="The database, as a user who may create roles and schemas (postgresql://…)."
    " Default: the --db before the command, else $BRAIN_DB_URL.",
)
@json_option
@click.pass_context
def create(ctx: click.Context, name: str, db: str | None, as_json: bool) -> None:
    """Make brain NAME: a schema NAME and a login role NAME that owns it and may touch
    nothing else, then print the brain's URL as that role (with its new password: keep it
    secret). Serve the brain with that URL, and give standbys the same user
    ($BRAIN_DB_READ_URL).

    \b
    Example:
      nexusbrain brains create team_a --db 'postgresql://admin@db.lan/brains'
      nexusbrain --db "$(nexusbrain brains create team_b --db postgresql://admin@db.lan/b)" serve
    """
    from nexusbrain.storage import postgres

    url = resolve_db(db or ctx.obj.get("db"))
    if not postgres.is_postgres(url):
        raise ConfigError(
            f"brains create needs a PostgreSQL database (--db postgresql://…), not {url!r}"
        )
    made = postgres.create_brain(url, name)
    if as_json:
        emit(made)
        return
    click.echo(
        f"made brain {made['schema']} in database {made['database']!r}: schema and role"
        f" {made['role']!r}; its URL (keep it secret) is on stdout",
        err=True,
    )
    click.echo(made["url"])
