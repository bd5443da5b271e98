"""Storage: the one layer that talks to a database. `open(url)` builds a backend's parts
(storage/base.py); SQLite is the default, and needs no server."""

from __future__ import annotations

from pathlib import Path

from nexusbrain.config import LexicalConfig, StorageConfig
from nexusbrain.errors import ConfigError, NotFound
from nexusbrain.storage.base import Backend

__all__ = ["Backend", "open"]

SQLITE_PREFIX = "sqlite:///"


def open(
    url: str | Path,
    lexical: LexicalConfig | None = None,
    config: StorageConfig | None = None,
    *,
    create: bool = True,
) -> Backend:
    """The backend at `url`: a file path or `sqlite:///path` (SQLite), made if it does not
    exist and `create` is true. Raises ConfigError for a URL it does not know, NotFound for a
    missing database not to be created, StorageError when the database cannot be opened."""
    text = str(url)
    if "://" not in text:
        return _sqlite(Path(text), lexical, config, create)
    if text.startswith(SQLITE_PREFIX):
        return _sqlite(Path(text.removeprefix(SQLITE_PREFIX)), lexical, config, create)
    scheme = text.split("://", 1)[0]
    raise ConfigError(f"unknown database URL scheme {scheme!r}: give a file path or sqlite:///path")


def _sqlite(
    path: Path, lexical: LexicalConfig | None, config: StorageConfig | None, create: bool
) -> Backend:
    from nexusbrain.storage.sqlite import SQLiteBackend

    path = path.expanduser()
    if not create and not path.exists():
        raise NotFound(f"no brain at {path}: the file does not exist")
    return SQLiteBackend(path, lexical or LexicalConfig(), config or StorageConfig())
