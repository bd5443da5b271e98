"""Storage: the one layer that talks to a database. `open(url)` builds a backend's parts
(storage/base.py); SQLite is the default, and needs no server."""

from __future__ import annotations

from pathlib import Path

from nexusbrain.config import LexicalConfig, StorageConfig
from nexusbrain.errors import ConfigError
from nexusbrain.storage.base import Backend

__all__ = ["Backend", "open"]

SQLITE_PREFIX = "sqlite:///"


def open(
    url: str | Path, lexical: LexicalConfig | None = None, config: StorageConfig | None = None
) -> Backend:
    """The backend at `url`: a file path or `sqlite:///path` (SQLite). Raises ConfigError for
    a URL it does not know, StorageError when the database cannot be opened."""
    text = str(url)
    if "://" not in text:
        return _sqlite(Path(text), lexical, config)
    if text.startswith(SQLITE_PREFIX):
        return _sqlite(Path(text.removeprefix(SQLITE_PREFIX)), lexical, config)
    scheme = text.split("://", 1)[0]
    raise ConfigError(f"unknown database URL scheme {scheme!r}: give a file path or sqlite:///path")


def _sqlite(path: Path, lexical: LexicalConfig | None, config: StorageConfig | None) -> Backend:
    from nexusbrain.storage.sqlite import SQLiteBackend

    return SQLiteBackend(path.expanduser(), lexical or LexicalConfig(), config or StorageConfig())
