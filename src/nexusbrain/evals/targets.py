"""What an evaluation runs against: a search target, and a scratch workspace it may write to.

The evals package sits above Brain, beside the interfaces. The command that starts an
evaluation (the CLI) wraps a Brain, in process or behind the HTTP API, in these protocols and
hands them in, so a suite runs the same against either. A suite that needs its own data gets a
`WorkspaceFactory` and opens one fresh workspace per corpus scope (a dataset, a conversation, a
question).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from nexusbrain.ingest.conversation import Session
from nexusbrain.retrieval.confidence import Band


@dataclass(frozen=True, slots=True)
class Retrieved:
    """One search result as an evaluation sees it: enough to map it to a dataset id, and
    the confidence of the result set it came from, in a number and in a word (None when
    the target gives none)."""

    chunk_id: int
    uri: str
    unit: str | None
    text: str
    confidence: float | None = field(default=None, kw_only=True)
    band: Band | None = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """The retrieval settings of one evaluation run; recorded in its config."""

    k: int = 10
    mode: str = "balanced"
    best_per_document: bool = False


class SearchTarget(Protocol):
    """A brain to search: in process or over HTTP."""

    def search(
        self, query: str, request: SearchRequest, *, path_prefix: str | None = None
    ) -> list[Retrieved]:
        """The ranked results for `query`, best first."""
        ...

    def describe(self) -> Mapping[str, Any]:
        """What the run's config should record about this target (kind, embedder, url...)."""
        ...

    def export_records(self) -> Iterator[Mapping[str, Any]]:
        """Every stored record, as `nexusbrain export` writes them."""
        ...


class Workspace(SearchTarget, Protocol):
    """A fresh, writable brain that a suite fills through the normal ingest path."""

    def add_markdown(self, items: Sequence[tuple[str, str, str]]) -> None:
        """Store documents given as (uri, title, markdown content)."""
        ...

    def add_folder(self, folder: Path) -> int:
        """Ingest a folder of markdown the way `ingest-dir` does; returns the documents added."""
        ...

    def add_sessions(self, sessions: Sequence[Session], index_roles: Sequence[str] | None) -> None:
        """Store conversation sessions; only turns whose role is in `index_roles` are indexed."""
        ...


WorkspaceFactory = Callable[[], AbstractContextManager[Workspace]]
"""Opens a new empty workspace; closing it throws it away."""
