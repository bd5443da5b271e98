"""The brains a sweep and a replay run against (interface code: it only adapts).

* `BrainReplayTarget`: a brain re-running captured searches and recalls, results as stable ids.
* `replay_copy`: a copy of the user's brain in a temporary folder, for a sweep's replay suite:
  the user's own database is only read, through a read-only connection.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nexusbrain.brain import Brain
from nexusbrain.captures import stable_id
from nexusbrain.cli.eval_targets import open_brain
from nexusbrain.records import SearchFilters
from nexusbrain.retrieval.filters import make_filters
from nexusbrain.storage.sqlite.snapshot import copy_database


class BrainReplayTarget:
    def __init__(self, brain: Brain, label: str) -> None:
        self.brain = brain
        self.label = label

    def replay(
        self, operation: str, query: str, mode: str, k: int, filters: Mapping[str, str]
    ) -> list[str]:
        chosen = _filters(filters)
        if operation == "recall":
            hits = list(self.brain.recall(query, mode=mode, filters=chosen).hits)
        else:
            hits = self.brain.search(query, k=k, filters=chosen, mode=mode)
        return [stable_id(h.uri, h.unit, h.char_start, h.char_end) for h in hits]

    def describe(self) -> Mapping[str, Any]:
        return {"target": self.label, "embedder": self.brain.stats().embedder.profile.value}


def _filters(values: Mapping[str, str]) -> SearchFilters:
    document = values.get("document_id")
    return make_filters(
        domain=values.get("domain"),
        path_prefix=values.get("path_prefix"),
        document_id=int(document) if document else None,
        kind=values.get("kind"),
        updated_after=values.get("updated_after"),
        updated_before=values.get("updated_before"),
    )


@contextmanager
def replay_copy(db: Path) -> Iterator[BrainReplayTarget]:
    """A throwaway copy of the brain at `db` to replay against."""
    with tempfile.TemporaryDirectory(prefix="nexusbrain-replay-") as folder:
        copy = Path(folder) / "copy.db"
        copy_database(db, copy)
        brain = open_brain(copy)
        try:
            yield BrainReplayTarget(brain, f"a copy of {db}")
        finally:
            brain.close()
