"""Where the command line's answers come from: a server already running for the brain
(client.py: one HTTP request; one started in the background by the first read, autoserve.py),
or the brain in this process (`Local`). Either answers an operation (operations/) with its
JSON view, so that a command prints the same either way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from nexusbrain.errors import NotFound
from nexusbrain.operations.spec import Operation, View

if TYPE_CHECKING:
    from nexusbrain.brain import Brain
    from nexusbrain.cli.client import Remote


# The operations whose command, finding no server, starts one in the background: the reads
# (search, recall, explain, get, stats, and graph relations, history and traverse). A write
# (add, delete, graph add) may be a one-off, or make the brain.
READS = frozenset(
    {"search", "recall", "explain", "document", "stats", "relations", "history", "traverse"}
)


class Local:
    """The brain in this process: the operation's Brain call."""

    def __init__(self, brain: Brain) -> None:
        self.brain = brain

    def call(self, operation: Operation, args: Mapping[str, Any]) -> View:
        return operation.call(self.brain, **args)


def brain_of(ctx: click.Context, *, create: bool = False) -> Brain:
    """The brain in this process, opened on first use and closed with the command. Only the
    commands that store (`create`) make a brain where none is: a read of a mistyped --db
    says there is no brain there rather than leave an empty one behind."""
    brain: Brain | None = ctx.obj.get("brain")
    if brain is None:
        from nexusbrain.brain import Brain

        try:
            brain = Brain.open(ctx.obj["db"], create=create)
        except NotFound as exc:
            raise NotFound(
                f"{exc.message}. Check --db (or BRAIN_DB_PATH); `add`, `ingest-dir` or"
                " `import` make a brain"
            ) from None
        ctx.obj["brain"] = brain
        ctx.call_on_close(brain.close)
    return brain


def answers_of(ctx: click.Context, operation: Operation, *, create: bool) -> Local | Remote:
    """Where a command asks: the running server (unless --local, or the operation is one no
    server answers), else the brain in this process (made, for a command that stores, if
    there is none). A read with no server to ask answers in process, then starts one in the
    background for the commands after it (cli/autoserve.py)."""
    root = ctx.find_root()
    served = operation.http is not None or operation.remote is not None
    if served and not root.obj["local"] and root.obj.get("brain") is None:
        from nexusbrain.cli.client import reach

        remote = reach(root.obj["db"])
        if remote is not None:
            return remote
        if operation.name in READS:
            from nexusbrain.cli.autoserve import reserve

            if (start := reserve(root.obj["db"])) is not None:
                root.call_on_close(start)  # once answered, and the brain closed
    return Local(brain_of(root, create=create))
