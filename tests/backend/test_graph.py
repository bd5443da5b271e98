"""Conformance: the graph's invariants, kept by the backend, and the graph's answers over it."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest

from nexusbrain import views
from nexusbrain.clock import FrozenClock
from nexusbrain.config import GraphConfig
from nexusbrain.errors import StorageError
from nexusbrain.graph import AsOf, Graph
from nexusbrain.records import RelationshipDraft, RetireReason, WriteStatus
from nexusbrain.storage.base import Backend

T1 = datetime(2020, 1, 1, tzinfo=UTC)
T2 = datetime(2022, 1, 1, tzinfo=UTC)


def graph_of(backend: Backend) -> tuple[Graph, FrozenClock]:
    clock = FrozenClock(datetime(2026, 1, 1, tzinfo=UTC))
    return Graph(backend.graph, GraphConfig(), clock), clock


def test_one_current_version_per_triple_is_enforced_by_the_database(backend: Backend) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    with backend.graph.session() as session:
        ada = session.insert_entity("ada", "Ada", "person", now)
        acme = session.insert_entity("acme", "Acme", None, now)
        first = RelationshipDraft(ada.id, "works_at", acme.id, None, None, None, None)
        session.insert_relationship(first, now)
    with pytest.raises(StorageError), backend.graph.session() as session:
        session.insert_relationship(first, now)  # a second current version of the triple
    with backend.graph.session() as session:
        (current,) = session.current_of(ada.id, "works_at")
        session.retire(current.id, RetireReason.RETRACTED, now)
        session.retire(current.id, RetireReason.CONTRADICTED, now)  # once only: no change
    (retired,) = backend.graph.lineage(current.id)
    assert retired.superseded_at == now and retired.reason is RetireReason.RETRACTED
    assert backend.graph.relations(from_ids=[ada.id]) == []


def test_a_dry_run_writes_nothing(backend: Backend) -> None:
    graph, _ = graph_of(backend)
    result = graph.relate("Ada", "works_at", "Acme", dry_run=True)
    assert result.status is WriteStatus.CREATED and result.id is None
    assert backend.graph.find_entity("ada") is None


def test_supersession_history_and_both_time_axes(backend: Backend) -> None:
    graph, clock = graph_of(backend)
    first = graph.relate("Ada", "works_at", "Acme", valid_at=T1)
    graph.relate("Acme", "located_in", "Berlin", valid_at=T1)
    known_then = clock()
    clock.advance(days=1)
    changed = graph.relate("Ada", "works_at", "Acme", valid_at=T2)  # a new window: a new version
    moved = graph.relate("Ada", "works_at", "Globex", valid_at=datetime(2024, 1, 1, tzinfo=UTC))
    clock.advance(days=1)
    history = views.relationship_history(graph.history(first.id))
    chain = [
        (v["valid_at"][:4], (v["invalid_at"] or "-")[:4], v["created_at"][:10], v["reason"])
        for v in history["versions"]
    ]
    assert chain == [
        ("2020", "-", "2026-01-01", "window_changed"),
        ("2022", "-", "2026-01-02", "contradicted"),  # Globex closed its window
        ("2022", "2024", "2026-01-02", None),
    ]
    versions = history["versions"]
    for old, new in itertools.pairwise(versions):
        assert old["superseded_at"] == new["created_at"] and new["supersedes"] == old["id"]
    assert history["current"] == versions[-1]
    assert changed.supersedes == first.id and moved.retired[0].successor == versions[-1]["id"]
    then = graph.relations("Ada", as_of=AsOf(known=known_then))
    assert [(r.to_name, r.valid_at) for r in then] == [("Acme", T1)]
    in_2021 = AsOf(valid=datetime(2021, 6, 1, tzinfo=UTC))
    assert graph.relations("Ada", type="works_at", as_of=in_2021) == []
    in_2023 = AsOf(valid=datetime(2023, 1, 1, tzinfo=UTC))
    hops = graph.traverse("Ada", depth=2, as_of=in_2023).hops
    assert {h.relationship.to_name for h in hops} == {"Acme", "Berlin"}


def test_entities_and_aliases(backend: Backend) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    with backend.graph.session() as session:
        ada = session.insert_entity("ada lovelace", "Ada Lovelace", None, now)
        session.add_alias(ada.id, "ada", "Ada", now)
        session.set_entity_type(ada.id, "person", now)
    found = backend.graph.find_entity("ada")
    assert found is not None and found.id == ada.id and found.aliases == ("Ada",)
    assert found.type == "person"
    assert set(backend.graph.entities_named(["ada", "ada lovelace", "nobody"])) == {
        "ada",
        "ada lovelace",
    }
