"""The exception tree. The core raises these; each interface translates them.

    BrainError
    ├── NotFound        an id, path or uri that does not exist        (HTTP 404)
    ├── InvalidInput    a bad argument, file or request body           (HTTP 400/413/422)
    ├── Conflict        the request contradicts stored state           (HTTP 409)
    ├── ConfigError     a bad setting or environment variable          (HTTP 500)
    ├── MissingExtra    an optional dependency is not installed        (HTTP 501)
    ├── ModelUnavailable a model server failed, refused or did not       (HTTP 503)
    │                   answer in time (a search goes on without it)
    └── StorageError    the database failed or is corrupt              (HTTP 500)
        ├── Busy        another writer held the database past the busy  (HTTP 503,
        │               timeout: nothing was changed, retry              Retry-After)
        ├── Unavailable the database server cannot be reached (down,    (HTTP 503,
        │               restarting): nothing was changed, retry          Retry-After)
        └── Full        the disk (or the database's size limit) is full  (HTTP 507)

Messages name the bad value and, where there is one, the fix.
"""

from __future__ import annotations


class BrainError(Exception):
    """Base of every error nexusbrain raises on purpose."""

    code: str = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(BrainError):
    code = "not_found"


class InvalidInput(BrainError):
    code = "invalid_input"


class TooLarge(InvalidInput):
    """Input over a configured size limit."""

    code = "too_large"


class Conflict(BrainError):
    code = "conflict"


class ConfigError(BrainError):
    code = "config_error"


class MissingExtra(BrainError):
    code = "missing_extra"

    def __init__(self, extra: str, package: str) -> None:
        super().__init__(
            f"this feature needs the optional package {package!r}: "
            f"install it with: pip install 'nexusbrain[{extra}]'"
        )
        self.extra = extra


class ModelUnavailable(BrainError):
    """A model server (an embedder's or a reranker's) failed, refused the request or did not
    answer in time. The message says which server and why, in words, never with its key. A
    search goes on without the model and says so; a write's vectors follow later."""

    code = "model_unavailable"


class StorageError(BrainError):
    code = "storage_error"


class Busy(StorageError):
    """Another writer (another process) held the database for longer than the busy timeout.
    Nothing was changed; the same request can simply be retried."""

    code = "busy"


class Unavailable(StorageError):
    """The database server (PostgreSQL) cannot be reached: it is down, restarting, or every
    connection to it is in use. Nothing was changed; retry once it is back (nexusbrain
    reconnects by itself)."""

    code = "unavailable"


class Full(StorageError):
    """The disk holding the database is full. Nothing was changed; free some space."""

    code = "storage_full"
