"""Storage: the one layer that talks to a database. `Store` is the interface, SQLite the default."""

from nexusbrain.storage.base import Store
from nexusbrain.storage.sqlite import SQLiteStore

__all__ = ["SQLiteStore", "Store"]
