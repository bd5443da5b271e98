"""The brain as a whole: whether it answers, its version, its counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nexusbrain.operations.spec import Command, Http, Operation, Tool, View

if TYPE_CHECKING:
    from nexusbrain.brain import Brain


def health(brain: Brain) -> View:
    """Whether the brain answers. /health is open to anyone, without a token, so a failing
    database is only "unavailable" (a 503): its message, which can name the database's URL
    and socket, goes to the log and to the callers that hold a token."""
    import logging  # the command line's --help and fast path load no logging

    from nexusbrain import views
    from nexusbrain.errors import StorageError, Unavailable

    try:
        brain.check_database()
    except StorageError as exc:
        logging.getLogger(__name__).warning("health: %s", exc.message)
        raise Unavailable("unavailable") from exc
    return views.health()


def version(brain: Brain) -> View:
    from nexusbrain import views

    return views.version(brain.stats())


def stats(brain: Brain) -> View:
    from nexusbrain import views

    return views.stats(brain.stats())


HEALTH = Operation("health", health, http=Http("GET", "/health", "system", "HealthOut", open=True))
VERSION = Operation("version", version, http=Http("GET", "/version", "system", "VersionOut"))
STATS = Operation(
    "stats",
    stats,
    http=Http("GET", "/stats", "system", "StatsOut", adds=("envelope",)),
    mcp=Tool(
        "status",
        "Status",
        "Counts of documents and chunks, database size and path, and the server's version.",
    ),
    cli=Command(
        "stats",
        """Counts, database size and memory use.

        \b
        Example:
          nexusbrain stats --json
        """,
    ),
)

OPERATIONS = (STATS, HEALTH, VERSION)
