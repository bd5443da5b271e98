"""Operational metrics of a suite run: a workspace wrapper that times every search and keeps
what it returned, so a sweep can report latency and context size per question, and answer
questions from the same results, without changing the suites.

* `p99_latency_ms`: the nearest-rank 99th percentile of the searches' wall times.
* `avg_tokens`: the context an answerer would be handed per question: the mode's first `k`
  results (5 conservative, 10 balanced, 20 tokenmax) that fit its recall budget (1,000, 2,000,
  6,000 tokens), counted by `retrieval.tokens.count_tokens`. tokenmax's recall also adds
  neighbouring chunks, which a search result does not carry, so its figure is a lower bound.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nexusbrain.evals.targets import Retrieved, SearchRequest, Workspace, WorkspaceFactory
from nexusbrain.ingest.conversation import Session
from nexusbrain.latency import percentile
from nexusbrain.records import SearchMode
from nexusbrain.retrieval.modes import PRESETS
from nexusbrain.retrieval.tokens import count_tokens, fit_budget


@dataclass(frozen=True, slots=True)
class Searched:
    """One search a suite made: its query, scope and results, and how long it took."""

    query: str
    scope: str | None
    results: tuple[Retrieved, ...]
    milliseconds: float


@dataclass
class Meter:
    """Every search made through the workspaces of one factory, in order."""

    keep: int = 50  # results kept per search: enough for any mode's context (k <= 20)
    searches: list[Searched] = field(default_factory=list)

    def by_question(self) -> dict[tuple[str | None, str], Searched]:
        """The last search of each (scope, query)."""
        return {(s.scope, s.query): s for s in self.searches}

    def p99_latency_ms(self) -> float | None:
        times = [s.milliseconds for s in self.searches]
        return percentile(times, 99) if times else None


def context(results: Sequence[Retrieved], mode: str) -> list[Retrieved]:
    """The results an answerer gets in `mode`: its first k that fit its token budget."""
    config = PRESETS[SearchMode(mode)]
    return fit_budget(results[: config.k], config.budget_tokens, lambda r: r.text)[0]


def context_tokens(results: Sequence[Retrieved], mode: str) -> int:
    return sum(count_tokens(r.text) for r in context(results, mode))


class MeteredWorkspace:
    """A workspace whose searches are timed and recorded in a `Meter`. A search shallower than
    the mode's own k (LoCoMo asks for 10, tokenmax returns 20) is made at the mode's k, so the
    meter sees the mode's whole context; the suite still gets the k it asked for."""

    def __init__(self, inner: Workspace, meter: Meter) -> None:
        self.inner = inner
        self.meter = meter

    def search(
        self, query: str, request: SearchRequest, *, path_prefix: str | None = None
    ) -> list[Retrieved]:
        depth = max(request.k, PRESETS[SearchMode(request.mode)].k)
        started = time.perf_counter()
        results = self.inner.search(query, replace(request, k=depth), path_prefix=path_prefix)
        spent = (time.perf_counter() - started) * 1000
        kept = tuple(results[: self.meter.keep])
        self.meter.searches.append(Searched(query, path_prefix, kept, spent))
        return results[: request.k]

    def describe(self) -> Mapping[str, Any]:
        return self.inner.describe()

    def export_records(self) -> Iterator[Mapping[str, Any]]:
        return self.inner.export_records()

    def add_markdown(self, items: Sequence[tuple[str, str, str]]) -> None:
        self.inner.add_markdown(items)

    def add_folder(self, folder: Path) -> int:
        return self.inner.add_folder(folder)

    def add_sessions(self, sessions: Sequence[Session], index_roles: Sequence[str] | None) -> None:
        self.inner.add_sessions(sessions, index_roles)


def metered(factory: WorkspaceFactory, meter: Meter) -> WorkspaceFactory:
    """`factory`, with every workspace's searches recorded in `meter`."""

    def opened() -> AbstractContextManager[Workspace]:
        return _wrap(factory, meter)

    return opened


@contextmanager
def _wrap(factory: WorkspaceFactory, meter: Meter) -> Iterator[Workspace]:
    with factory() as workspace:
        yield MeteredWorkspace(workspace, meter)
