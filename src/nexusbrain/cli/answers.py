"""What the command line's answering commands ask, and the two places that answer it: the
brain in this process (local.py), or a server already running for it (client.py). Both answer
with the JSON view HTTP returns (views.py), so that a command prints the same either way."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

View = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Filters:
    """The search filters the command line offers."""

    domain: str | None = None
    path_prefix: str | None = None
    document_id: int | None = None

    def params(self) -> dict[str, str | int]:
        return given(domain=self.domain, path_prefix=self.path_prefix, document_id=self.document_id)


class Answers(Protocol):
    def search(
        self, query: str, *, k: int | None, mode: str, filters: Filters, best_per_document: bool
    ) -> View: ...

    def recall(
        self, query: str, *, k: int | None, budget_tokens: int | None, mode: str
    ) -> View: ...

    def explain(
        self,
        query: str,
        document: str,
        *,
        k: int | None,
        mode: str,
        filters: Filters,
        best_per_document: bool,
    ) -> View: ...

    def document(self, ref: str, *, chunks: bool) -> View: ...

    def add(
        self, text: str, *, source: str | None, domain: str | None, tags: tuple[str, ...]
    ) -> View: ...

    def stats(self) -> View: ...

    def graph_add(self, request: Mapping[str, Any], *, dry_run: bool) -> View: ...

    def relations(
        self,
        from_name: str | None,
        *,
        to_name: str | None,
        type: str | None,
        as_of_valid: str | None,
        as_of_known: str | None,
    ) -> View: ...

    def history(self, relationship_id: int) -> View: ...

    def traverse(
        self, start: str, *, depth: int, as_of_valid: str | None, as_of_known: str | None
    ) -> View: ...


def given(**values: str | int | None) -> dict[str, str | int]:
    """The arguments that were given (not None)."""
    return {name: value for name, value in values.items() if value is not None}
