"""Storage: the one layer that talks to a database. `open(url)` builds a backend's parts
(storage/base.py), by the URL's scheme: a path or `sqlite:///path` opens SQLite, the default,
which needs no server; `postgresql://` the PostgreSQL backend (the `postgres` extra).

Each scheme names the module of its backend (`register`), imported only when a URL of it is
opened, so that a backend's driver loads only for the brains that use it. The module's
`open_url(url, lexical, config, *, create)` builds the backend."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Protocol

from nexusbrain.config import LexicalConfig, StorageConfig
from nexusbrain.errors import ConfigError
from nexusbrain.storage.base import Backend

__all__ = ["Backend", "open", "register"]

_BACKENDS: dict[str, str] = {}  # URL scheme -> the backend's module


class Opener(Protocol):
    """The `open_url` of a backend's module. Raises NotFound for a missing database when
    `create` is false, MissingExtra without the backend's driver, and StorageError when the
    database cannot be opened."""

    def __call__(
        self, url: str, lexical: LexicalConfig, config: StorageConfig, *, create: bool
    ) -> Backend: ...


def register(scheme: str, module: str) -> None:
    """Open URLs of `scheme` (`scheme://…`, any case) with the backend in `module`."""
    _BACKENDS[scheme.lower()] = module


register("sqlite", "nexusbrain.storage.sqlite")  # also every URL without a scheme: a path
register("postgresql", "nexusbrain.storage.postgres")
register("postgres", "nexusbrain.storage.postgres")


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
    to be created, MissingExtra without a backend's extra, StorageError when the database
    cannot be opened."""
    text = str(url)
    scheme = text.split("://", 1)[0] if "://" in text else "sqlite"
    module = _BACKENDS.get(scheme.lower())
    if module is None:
        raise unknown_scheme(scheme)
    opener: Opener = importlib.import_module(module).open_url
    return opener(text, lexical or LexicalConfig(), config or StorageConfig(), create=create)


def unknown_scheme(scheme: str) -> ConfigError:
    return ConfigError(
        f"unknown database URL scheme {scheme!r}: give a file path, sqlite:///path or"
        " postgresql://user@host/database?schema=brain"
    )
