"""Answers from the brain in this process: each one calls one Brain method and returns its
JSON view. The command line uses this when no server is running for the brain, or with
--local."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nexusbrain import views
from nexusbrain.brain import Brain
from nexusbrain.cli.answers import Filters, View
from nexusbrain.records import SearchFilters
from nexusbrain.retrieval.filters import make_filters

if TYPE_CHECKING:  # the graph's model loads with the first graph command
    from nexusbrain.graph.model import AsOf


class Local:
    def __init__(self, brain: Brain) -> None:
        self.brain = brain

    def search(
        self, query: str, *, k: int | None, mode: str, filters: Filters, best_per_document: bool
    ) -> View:
        hits = self.brain.search(
            query,
            k=k,
            filters=_filters(filters),
            best_per_document=best_per_document,
            mode=mode,
        )
        return views.search(query, mode, hits)

    def recall(self, query: str, *, k: int | None, budget_tokens: int | None, mode: str) -> View:
        return views.recall(self.brain.recall(query, k=k, budget_tokens=budget_tokens, mode=mode))

    def explain(
        self,
        query: str,
        document: str,
        *,
        k: int | None,
        mode: str,
        filters: Filters,
        best_per_document: bool,
    ) -> View:
        found = self.brain.explain(
            query,
            document,
            k=k,
            filters=_filters(filters),
            mode=mode,
            best_per_document=best_per_document,
        )
        return views.explanation(found)

    def document(self, ref: str, *, chunks: bool) -> View:
        found = self.brain.document(ref)
        return views.document(found, self.brain.document_chunks(found.id) if chunks else None)

    def add(
        self, text: str, *, source: str | None, domain: str | None, tags: tuple[str, ...]
    ) -> View:
        return views.write_result(
            self.brain.add_memory(text, source=source, domain=domain, tags=tags)
        )

    def stats(self) -> View:
        return views.stats(self.brain.stats())

    def graph_add(self, request: Mapping[str, Any], *, dry_run: bool) -> View:
        from nexusbrain.graph.model import inputs_from_json

        entities, relationships = inputs_from_json(request)
        return views.graph_ingest(self.brain.graph.ingest(entities, relationships, dry_run=dry_run))

    def relations(
        self,
        from_name: str | None,
        *,
        to_name: str | None,
        type: str | None,
        as_of_valid: str | None,
        as_of_known: str | None,
    ) -> View:
        when = _as_of(as_of_valid, as_of_known)
        found = self.brain.graph.relations(from_name, to_name=to_name, type=type, as_of=when)
        return views.relations(found, when)

    def history(self, relationship_id: int) -> View:
        return views.relationship_history(self.brain.graph.history(relationship_id))

    def traverse(
        self, start: str, *, depth: int, as_of_valid: str | None, as_of_known: str | None
    ) -> View:
        when = _as_of(as_of_valid, as_of_known)
        return views.traversal(self.brain.graph.traverse(start, depth, as_of=when))


def _filters(chosen: Filters) -> SearchFilters:
    return make_filters(
        domain=chosen.domain, path_prefix=chosen.path_prefix, document_id=chosen.document_id
    )


def _as_of(valid: str | None, known: str | None) -> AsOf:
    from nexusbrain.graph.model import AsOf, parse_instant

    return AsOf(parse_instant("as_of_valid", valid), parse_instant("as_of_known", known))
