"""The brains a sweep and a replay run against (interface code: it only adapts).

* `sweep_factory`: a fresh brain per corpus scope in a temporary folder, capture off, whose
  results carry their line spans (so answers can cite them).
* `BrainReplayTarget`: a brain re-running captured searches and recalls, results as stable ids.
* `replay_copy`: a copy of the user's brain in a temporary folder, for a sweep's replay suite:
  the user's own database is only read, through a read-only connection.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from nexusbrain.brain import Brain
from nexusbrain.cli.eval_targets import BrainTarget
from nexusbrain.config import CaptureConfig, Settings
from nexusbrain.evals.answer import Passage
from nexusbrain.evals.replay import stable_id
from nexusbrain.evals.targets import Retrieved, SearchRequest, Workspace, WorkspaceFactory
from nexusbrain.records import SearchFilters
from nexusbrain.retrieval.filters import make_filters
from nexusbrain.storage.snapshot import copy_database


def quiet_brain(db: Path | None) -> Brain:
    """The brain at `db` (else $BRAIN_DB_PATH, else the default) with capture off, so that an
    evaluation never records its own queries."""
    return Brain(replace(Settings.from_env(db), capture=CaptureConfig(enabled=False)))


class SpanTarget(BrainTarget):
    """A brain in process whose results are `Passage`s: they know their line spans."""

    def search(
        self, query: str, request: SearchRequest, *, path_prefix: str | None = None
    ) -> list[Retrieved]:
        hits = self.brain.search(
            query,
            k=request.k,
            filters=SearchFilters(path_prefix=path_prefix),
            best_per_document=request.best_per_document,
            mode=request.mode,
        )
        return [Passage(h.chunk_id, h.uri, h.unit, h.text, h.line_start, h.line_end) for h in hits]


def sweep_factory() -> WorkspaceFactory:
    @contextmanager
    def scratch() -> Iterator[Workspace]:
        with tempfile.TemporaryDirectory(prefix="nexusbrain-sweep-") as folder:
            brain = quiet_brain(Path(folder) / "scratch.db")
            try:
                yield SpanTarget(brain, label="scratch")
            finally:
                brain.close()

    return scratch


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
        return {"target": self.label, "embedder": self.brain.settings.embedder.value}


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
        brain = quiet_brain(copy)
        try:
            yield BrainReplayTarget(brain, f"a copy of {db}")
        finally:
            brain.close()
