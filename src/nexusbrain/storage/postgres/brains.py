"""Brains kept apart by the database: `nexusbrain brains create NAME --db URL` makes a brain's
schema, and a login role that owns it and holds no other privilege, so that a process serving
one brain (a replica, a standby's reader) connecting as that role cannot read or change any
other brain in the database, whatever the code it runs.

The role owns its schema and every table in it, so later migrations run as the role. It gets
no right to create schemas, roles or databases. It needs only CONNECT on the database (which
PostgreSQL gives every role unless revoked) and USAGE on pgvector's schema. Roles are the
cluster's, so a standby knows the role once it has replayed its creation.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg
from psycopg import sql

from nexusbrain.errors import Conflict, StorageError
from nexusbrain.storage.postgres.database import connect, ensure_vector
from nexusbrain.storage.postgres.migrations import migrate
from nexusbrain.storage.postgres.url import parse_url


@dataclass(frozen=True, slots=True)
class MadeBrain:
    schema: str
    role: str
    database: str
    url: str  # the brain's URL as its role, password included: for the servers of this brain

    def as_json(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "role": self.role,
            "database": self.database,
            "url": self.url,
        }


def create_brain(admin_url: str, name: str) -> MadeBrain:
    """Make brain `name` (schema and role of that name) in the database of `admin_url`, a
    URL whose user may create roles (a superuser, or one with CREATEROLE and CREATE on the
    database). Conflict if either exists already."""
    target = parse_url(_with_schema_named(admin_url, name))
    password = secrets.token_urlsafe(24)
    with connect(target) as conn:
        vector = ensure_vector(conn, target)
        role, schema = sql.Identifier(name), sql.Identifier(name)
        try:
            with conn.transaction():
                conn.execute(
                    sql.SQL(
                        "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}"
                    ).format(role, sql.Literal(password))
                )
                conn.execute(sql.SQL("CREATE SCHEMA {} AUTHORIZATION {}").format(schema, role))
                conn.execute(sql.SQL("REVOKE ALL ON SCHEMA {} FROM PUBLIC").format(schema))
                conn.execute(
                    sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(
                        sql.Identifier(vector[1]), role
                    )
                )
                conn.execute(sql.SQL("SET LOCAL ROLE {}").format(role))
                migrate(conn, name, vector[1])  # as the role: it owns the tables
        except pg.DuplicateObject:
            raise Conflict(
                f"a role named {name!r} exists already in the server of {target.shown}: pick"
                " another brain name, or drop that role"
            ) from None
        except pg.DuplicateSchema:
            raise Conflict(
                f"schema {name!r} exists already in database {target.database!r}: pick another"
                " brain name (an existing brain is opened with ?schema= in its URL)"
            ) from None
        except pg.InsufficientPrivilege as exc:
            raise StorageError(
                f"the user of {target.shown} may not create roles and schemas"
                f" ({' '.join(str(exc).split())}): run brains create as a superuser, or as a"
                " role with CREATEROLE and CREATE on the database"
            ) from None
        except psycopg.Error as exc:
            raise StorageError(f"could not create brain {name!r}: {exc}") from None
    url = _as_role(_with_schema_named(admin_url, name), name, password)
    return MadeBrain(name, name, target.database, url)


def _with_schema_named(url: str, name: str) -> str:
    """`url` on schema `name` (checked as schema names are)."""
    parts = urlsplit(url)
    pairs = [(n, v) for n, v in parse_qsl(parts.query, keep_blank_values=True) if n != "schema"]
    query = urlencode([*pairs, ("schema", name)], quote_via=quote, safe="/")
    named = urlunsplit(parts._replace(query=query))
    parse_url(named)  # ConfigError for a name that is no schema name
    return named


def _as_role(url: str, role: str, password: str) -> str:
    """`url` with `role` and `password` as its user, whether the URL gave one in its user
    part or as parameters."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    pairs = [
        (n, v)
        for n, v in parse_qsl(parts.query, keep_blank_values=True)
        if n not in ("user", "password")
    ]
    netloc = f"{quote(role, safe='')}:{quote(password, safe='')}@{host}"
    query = urlencode(pairs, quote_via=quote, safe="/")
    return urlunsplit(parts._replace(netloc=netloc, query=query))
