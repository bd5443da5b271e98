"""Storage: the one layer that talks to a database. `open(url)` builds a backend's parts
(storage/base.py); SQLite is the default, and needs no server; `postgresql://` URLs open the
PostgreSQL backend (the `postgres` extra)."""

from __future__ import annotations

from pathlib import Path

from nexusbrain.config import LexicalConfig, StorageConfig
from nexusbrain.errors import ConfigError, MissingExtra, NotFound
from nexusbrain.storage.base import Backend

__all__ = ["Backend", "open"]

SQLITE_PREFIX = "sqlite:///"
POSTGRES_SCHEMES = ("postgresql", "postgres")


def open(
    url: str | Path,
    lexical: LexicalConfig | None = None,
    config: StorageConfig | None = None,
    *,
    create: bool = True,
) -> Backend:
    """The backend at `url`: a file path or `sqlite:///path` (SQLite), or a
    `postgresql://…?schema=NAME` URL (PostgreSQL), made if it does not exist and `create` is
    true. Raises ConfigError for a URL it does not know, NotFound for a missing database not
    to be created, MissingExtra without the postgres extra, StorageError when the database
    cannot be opened."""
    text = str(url)
    if "://" not in text:
        return _sqlite(Path(text), lexical, config, create)
    if text.startswith(SQLITE_PREFIX):
        return _sqlite(Path(text.removeprefix(SQLITE_PREFIX)), lexical, config, create)
    scheme = text.split("://", 1)[0]
    if scheme.lower() in POSTGRES_SCHEMES:
        return _postgres(text, lexical, config, create)
    raise ConfigError(
        f"unknown database URL scheme {scheme!r}: give a file path, sqlite:///path or"
        " postgresql://user@host/database?schema=brain"
    )


def _sqlite(
    path: Path, lexical: LexicalConfig | None, config: StorageConfig | None, create: bool
) -> Backend:
    from nexusbrain.storage.sqlite import SQLiteBackend

    path = path.expanduser()
    if not create and not path.exists():
        raise NotFound(f"no brain at {path}: the file does not exist")
    return SQLiteBackend(path, lexical or LexicalConfig(), config or StorageConfig())


def _postgres(
    url: str, lexical: LexicalConfig | None, config: StorageConfig | None, create: bool
) -> Backend:
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        raise MissingExtra("postgres", "psycopg[binary,pool]") from None
    from nexusbrain.storage.postgres import PostgresBackend, parse_url

    return PostgresBackend(
        parse_url(url), lexical or LexicalConfig(), config or StorageConfig(), create=create
    )


def is_server_url(url: str | Path) -> bool:
    """Whether `url` names a brain on a database server (PostgreSQL) rather than a file."""
    return str(url).split("://", 1)[0].lower() in POSTGRES_SCHEMES if "://" in str(url) else False


def scratch_url(base: str, name: str) -> str:
    """The URL of a scratch brain beside the server brain at `base`: the same database, the
    schema `<base's schema>_<name>` (`name`: lower-case letters, digits, underscores)."""
    from nexusbrain.storage.postgres.url import with_schema

    return with_schema(base, name)


def drop(url: str) -> None:
    """Remove the server brain at `url` (its schema, and everything in it): for scratch
    brains that the bench and the evaluations make."""
    from nexusbrain.storage.postgres import drop_brain, parse_url

    drop_brain(parse_url(url))
