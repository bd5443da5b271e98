"""The brain as a whole: whether it answers, its version, its counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nexusbrain.operations.spec import Command, Http, Operation, Tool, View

if TYPE_CHECKING:
    from nexusbrain.brain import Brain


def health(brain: Brain) -> View:
    from nexusbrain import views

    brain.check_database()  # a 503 in the error shape when the database cannot be reached
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
