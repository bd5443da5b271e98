"""The PostgreSQL backend: one schema of one database holds a brain, any number of replicas
(`nexusbrain serve` processes) share it, and each keeps only caches that follow the change log.
Needs PostgreSQL 15+ with pgvector 0.7+ (`pip install 'nexusbrain[postgres]'`); the design,
with measurements, is docs/design/postgres.md.

This module loads no driver: `storage.open` calls `open_url` for a postgresql:// URL, and the
bench and the evaluations make their scratch brains with `scratch_url` and `drop`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nexusbrain.config import LexicalConfig, StorageConfig
from nexusbrain.errors import MissingExtra
from nexusbrain.storage.postgres.url import is_postgres, parse_url, with_schema

if TYPE_CHECKING:
    from nexusbrain.storage.postgres.backend import PostgresBackend

__all__ = ["create_brain", "drop", "is_postgres", "open_url", "scratch_url"]


def open_url(
    url: str, lexical: LexicalConfig, config: StorageConfig, *, create: bool
) -> PostgresBackend:
    """The brain at a postgresql:// URL (`storage.open`'s opener for the scheme)."""
    _require_driver()
    from nexusbrain.storage.postgres.backend import PostgresBackend

    return PostgresBackend(parse_url(url), lexical, config, create=create)


def scratch_url(base: str, name: str) -> str:
    """The URL of a scratch brain beside the brain at `base`: the same database, the schema
    `<base's schema>_<name>` (`name`: lower-case letters, digits, underscores)."""
    return with_schema(base, name)


def drop(url: str) -> None:
    """Remove the brain at `url` (its schema, and everything in it): for scratch brains that
    the bench and the evaluations make (the caller has closed its backends)."""
    _require_driver()
    from nexusbrain.storage.postgres.backend import drop_brain

    drop_brain(parse_url(url))


def create_brain(admin_url: str, name: str) -> dict[str, Any]:
    """Make brain `name` in the database of `admin_url`: its schema, and a role that can
    touch only that schema (brains.py). Returns its schema, role, database and URL (as the
    role, with the role's new password)."""
    _require_driver()
    from nexusbrain.storage.postgres.brains import create_brain as create

    return create(admin_url, name).as_json()


def _require_driver() -> None:
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        raise MissingExtra("postgres", "psycopg[binary,pool]") from None
