"""A brain's PostgreSQL URL: libpq's own URL, plus the parameters nexusbrain reads itself.

    postgresql://user:password@host:5432/database?schema=team_a&pool=10

- `schema`: the brain's schema (default `nexusbrain`). One database holds several brains,
  one schema each; a schema is created, with its tables, the first time a brain opens it.
- `pool`: the most connections one process keeps open to the database (default 10).

Every other parameter (`host=/run/postgresql` for a unix socket, `sslmode`, `connect_timeout`,
`application_name`...) goes to libpq as given. (pure)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from nexusbrain.errors import ConfigError

SCHEMES = ("postgresql", "postgres")
DEFAULT_SCHEMA = "nexusbrain"
DEFAULT_POOL = 10
_SCHEMA = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_OURS = ("schema", "pool")
_EXAMPLE = "postgresql://user@host:5432/database?schema=brain"


@dataclass(frozen=True, slots=True)
class PostgresUrl:
    conninfo: str  # what libpq is given: the URL without nexusbrain's own parameters
    schema: str
    pool: int
    shown: str  # the URL for people: without any password

    @property
    def database(self) -> str:
        return urlsplit(self.conninfo).path.lstrip("/") or "(the user's own)"


def is_postgres(url: str) -> bool:
    return url.split("://", 1)[0].lower() in SCHEMES if "://" in url else False


def parse_url(url: str) -> PostgresUrl:
    """The parts of a brain's PostgreSQL URL. ConfigError, naming the problem and giving an
    example, for anything libpq or nexusbrain would refuse."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in SCHEMES:
        raise ConfigError(f"{_hidden(url)!r} is not a postgresql:// URL, e.g. {_EXAMPLE}")
    try:
        pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError:
        raise ConfigError(
            f"the query string of {_hidden(url)!r} is not name=value pairs, e.g. {_EXAMPLE}"
        ) from None
    ours = {name: value for name, value in pairs if name in _OURS}
    rest = [(name, value) for name, value in pairs if name not in _OURS]
    schema = ours.get("schema", DEFAULT_SCHEMA)
    if not _SCHEMA.fullmatch(schema):
        raise ConfigError(
            f"schema={schema!r} in the database URL must be a lower-case name of letters,"
            " digits and underscores (up to 63, not starting with a digit), e.g. schema=team_a"
        )
    pool = ours.get("pool", str(DEFAULT_POOL))
    if not pool.isascii() or not pool.isdigit() or not 1 <= int(pool) <= 1000:
        raise ConfigError(f"pool={pool!r} in the database URL must be a whole number, 1 to 1000")
    conninfo = urlunsplit(parts._replace(query=urlencode(rest, quote_via=quote)))
    _check_libpq(conninfo, url)
    return PostgresUrl(conninfo, schema, int(pool), _hidden(url))


def _check_libpq(conninfo: str, url: str) -> None:
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:  # the caller checks for the extra first
        return
    from psycopg import ProgrammingError

    try:
        conninfo_to_dict(conninfo)
    except ProgrammingError as exc:
        reason = " ".join(str(exc).split())
        raise ConfigError(f"{_hidden(url)!r} is not a valid PostgreSQL URL ({reason})") from None


def _hidden(url: str) -> str:
    """The URL without its password (in the user part or as a parameter)."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            user, host = netloc.rsplit("@", 1)
            netloc = f"{user.split(':', 1)[0]}@{host}"
        query = parts.query
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(name == "password" for name, _ in pairs):
            query = urlencode([(n, v) for n, v in pairs if n != "password"], quote_via=quote)
        return urlunsplit(parts._replace(netloc=netloc, query=query))
    except ValueError:
        return url.split("://", 1)[0] + "://…"


def with_schema(url: str, name: str) -> str:
    """The URL of the brain `<url's schema>_<name>` in the same database."""
    parsed = parse_url(url)
    schema = f"{parsed.schema}_{name}"
    if not _SCHEMA.fullmatch(schema):
        raise ConfigError(f"{schema!r} is not a schema name: use lower-case letters and digits")
    parts = urlsplit(url)
    pairs = [(n, v) for n, v in parse_qsl(parts.query, keep_blank_values=True) if n != "schema"]
    query = urlencode([*pairs, ("schema", schema)], quote_via=quote, safe="/")
    return urlunsplit(parts._replace(query=query))
