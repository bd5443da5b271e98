"""Invariants of the graph under random sequences of ingests (hypothesis, real SQLite)."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nexusbrain.clock import FrozenClock
from nexusbrain.config import GraphConfig
from nexusbrain.graph import AsOf, Graph, RelationshipInput
from nexusbrain.graph.rules import visible
from nexusbrain.records import Relationship, RetireReason, WriteStatus
from nexusbrain.storage.sql.graph import SQLGraphStore
from nexusbrain.storage.sqlite.store import SQLiteStore

DATES = [datetime(year, 1, 1, tzinfo=UTC) for year in (2020, 2021, 2022, 2023)]
dates = st.one_of(st.none(), st.sampled_from(DATES))
windows = st.tuples(dates, dates).filter(lambda w: None in w or w[0] < w[1])
ingests = st.builds(
    lambda head, kind, tail, window: RelationshipInput(head, kind, tail, *window),
    st.sampled_from(["alice", "bob"]),
    st.sampled_from(["manages", "works_at"]),  # works_at is functional
    st.sampled_from(["acme", "globex", "initech"]),
    windows,
)
steps = st.lists(st.tuples(ingests, st.sampled_from([0, 1])), min_size=1, max_size=12)
# every fact dated: then a functional type holds at most one value at any valid time
dated_windows = st.tuples(st.sampled_from(DATES), dates).filter(
    lambda w: w[1] is None or w[0] < w[1]
)
dated_steps = st.lists(
    st.tuples(
        st.builds(
            lambda head, kind, tail, window: RelationshipInput(head, kind, tail, *window),
            st.sampled_from(["alice", "bob"]),
            st.sampled_from(["manages", "works_at"]),
            st.sampled_from(["acme", "globex", "initech"]),
            dated_windows,
        ),
        st.sampled_from([0, 1]),
    ),
    min_size=1,
    max_size=12,
)


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated, empty database: copying it is much faster than migrating per example."""
    path = tmp_path_factory.mktemp("graph") / "template.db"
    SQLiteStore(path).close()
    return path


@contextmanager
def scratch_graph(template: Path) -> Iterator[tuple[Graph, SQLiteStore, FrozenClock]]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "graph.db"
        shutil.copyfile(template, path)
        store = SQLiteStore(path)
        clock = FrozenClock(datetime(2026, 1, 1, tzinfo=UTC))
        try:
            yield Graph(SQLGraphStore(store.db), GraphConfig(), clock), store, clock
        finally:
            store.close()


def all_versions(graph: Graph, store: SQLiteStore) -> list[Relationship]:
    ids = [row[0] for row in store.db.connection().execute("SELECT id FROM relationships")]
    return sorted({v for i in ids for v in graph.history(i).versions}, key=lambda r: r.id)


@settings(max_examples=40, deadline=None)
@given(plan=steps)
def test_ingests_keep_one_current_version_per_triple_and_one_chain_per_lineage(
    plan: list[tuple[RelationshipInput, int]], template: Path
) -> None:
    with scratch_graph(template) as (graph, store, clock):
        for item, pause in plan:
            clock.advance(seconds=pause)
            first = graph.ingest(relationships=[item]).relationships[0]
            changes = store.db.connection().total_changes
            again = graph.ingest(relationships=[item]).relationships[0]
            assert (again.status, again.id) == (WriteStatus.DUPLICATE, first.id)
            assert store.db.connection().total_changes == changes  # a duplicate writes nothing

        versions = all_versions(graph, store)
        current: dict[tuple[int, str, int], list[int]] = defaultdict(list)
        for v in versions:
            if v.current:
                current[(v.from_id, v.type, v.to_id)].append(v.id)
        assert all(len(ids) == 1 for ids in current.values())

        chained: set[int] = set()
        for v in versions:
            history = graph.history(v.id)
            chain = history.versions
            assert graph.history(chain[-1].id).versions == chain  # the same from any id
            assert chain[0].supersedes is None
            for older, newer in itertools.pairwise(chain):
                assert newer.supersedes == older.id
                assert older.superseded_at == newer.created_at
                assert older.reason in (RetireReason.WINDOW_CHANGED, RetireReason.CONTRADICTED)
                assert (older.from_id, older.type, older.to_id) == (
                    newer.from_id,
                    newer.type,
                    newer.to_id,
                )
            assert [x for x in chain if x.current] in ([], [chain[-1]])
            assert history.current == (chain[-1] if chain[-1].current else None)
            chained.update(x.id for x in chain)
        assert chained == {v.id for v in versions}


@settings(max_examples=30, deadline=None)
@given(plan=steps)
def test_as_of_queries_match_the_pure_rule(
    plan: list[tuple[RelationshipInput, int]], template: Path
) -> None:
    with scratch_graph(template) as (graph, store, clock):
        times = []
        for item, pause in plan:
            clock.advance(seconds=1 + pause)
            times.append(graph.ingest(relationships=[item]).at)
        versions = all_versions(graph, store)
        entity_ids = sorted({v.from_id for v in versions})
        for valid in [None, *DATES, datetime(2019, 6, 1, tzinfo=UTC)]:
            for known in [None, *times]:
                found = SQLGraphStore(store.db).relations(
                    from_ids=entity_ids, valid=valid, known=known
                )
                assert found == [v for v in versions if visible(v, valid, known)]


@settings(max_examples=30, deadline=None)
@given(plan=dated_steps)
def test_a_functional_type_holds_one_value_at_any_valid_time(
    plan: list[tuple[RelationshipInput, int]], template: Path
) -> None:
    with scratch_graph(template) as (graph, _, clock):
        for item, pause in plan:
            clock.advance(seconds=pause)
            graph.ingest(relationships=[item])
        probes = [datetime(2019, 6, 1, tzinfo=UTC), *DATES, datetime(2030, 1, 1, tzinfo=UTC)]
        for name in {i.from_name for i, _ in plan}:
            for valid in probes:
                jobs = graph.relations(name, type="works_at", as_of=AsOf(valid=valid))
                assert len(jobs) <= 1, (name, valid, jobs)
