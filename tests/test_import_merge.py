"""Import into a brain that holds data merges: documents by path, facts by lineage, notes'
statements with their notes; contradictions are refused, listed, with nothing written. Every
test runs on both backends (the merge is storage/exchange.py's, whichever engine writes it)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nexusbrain.brain import Brain
from nexusbrain.clock import FrozenClock
from nexusbrain.config import Profile, Settings
from nexusbrain.errors import Conflict
from nexusbrain.graph.service import note_source
from nexusbrain.records import RetireReason

ALICE = """---
relations:
  - {type: works_at, to: Acme, valid_at: 2020-01-01}
---
# Alice

Alice pairs with [[Bob]].
"""

ALICE_LATER = """---
relations:
  - {type: works_at, to: Globex, valid_at: 2024-01-01}
---
# Alice

Alice pairs with [[Bob]] and [[Erin]].
"""


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(datetime(2026, 1, 2, tzinfo=UTC))


def _brain(db: str | Path, clock: FrozenClock) -> Brain:
    settings = Settings(db=db, embedder=Profile.HASHING)
    return Brain.open(settings=settings, clock=clock)


@pytest.fixture(params=["sqlite", "postgres"])
def two(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FrozenClock
) -> Iterator[tuple[Brain, Brain]]:
    if request.param == "postgres":
        server = request.getfixturevalue("postgres")
        places: tuple[str | Path, str | Path] = (server.url(), server.url())
    else:
        places = (tmp_path / "a.db", tmp_path / "b.db")
    with _brain(places[0], clock) as a, _brain(places[1], clock) as b:
        yield a, b


def _documents(brain: Brain) -> list[dict[str, object]]:
    return [r for r in brain.admin.export() if r["type"] == "document"]


def _current(brain: Brain, name: str) -> set[tuple[str, str]]:
    return {(r.type, r.to_name) for r in brain.graph.relations(name)}


def test_one_memory_exported_into_a_brain_with_data_is_added(
    two: tuple[Brain, Brain],
) -> None:
    a, b = two
    a.add_memory("the launch moved to May", tags=["plans"])
    b.ingest_markdown("# Notes\n\nbudget review on Friday", uri="notes.md")
    b.graph.relate("Carol", "manages", "Dan")
    result = b.admin.import_records(list(a.admin.export()))
    assert (result.documents, result.chunks, result.duplicates) == (1, 1, 0)
    assert {d["uri"] for d in _documents(b)} == {"notes.md", _documents(a)[0]["uri"]}
    assert [h.text for h in b.search("launch May", k=1)] == ["the launch moved to May"]
    assert _current(b, "Carol") == {("manages", "Dan")}


def test_the_same_export_twice_changes_nothing(two: tuple[Brain, Brain]) -> None:
    a, b = two
    a.ingest_markdown(ALICE, uri="people/alice.md")
    b.ingest_markdown("# Other\n\ntext", uri="other.md")
    first = b.admin.import_records(list(a.admin.export()))
    assert (first.documents, first.relationships) == (1, 2)
    before = list(b.admin.export())
    again = b.admin.import_records(list(a.admin.export()))
    assert (again.documents, again.unchanged, again.relationships) == (0, 1, 0)
    assert again.duplicates == 2
    assert list(b.admin.export()) == before


def test_a_newer_version_of_a_note_replaces_the_older_and_keeps_both_histories(
    two: tuple[Brain, Brain], clock: FrozenClock
) -> None:
    a, b = two
    b.ingest_markdown(ALICE, uri="people/alice.md")
    here = b.document("people/alice.md").id
    b.ingest_markdown("# Filler\n\nso the ids differ", uri="filler.md")
    clock.advance(days=1)
    a.ingest_markdown("# Zed\n\nfirst here", uri="zed.md")
    a.ingest_markdown(ALICE, uri="people/alice.md")
    clock.advance(days=1)
    a.ingest_markdown(ALICE_LATER, uri="people/alice.md")

    result = b.admin.import_records(list(a.admin.export()))
    assert (result.documents, result.updated) == (1, 1)
    doc = b.document("people/alice.md")
    assert doc.id == here and doc.content == ALICE_LATER
    (hit,) = b.search("Erin", k=1, mode="conservative")
    assert hit.text.endswith("[[Erin]].")
    assert _current(b, "Alice") == {
        ("works_at", "Globex"),
        ("links_to", "Bob"),
        ("links_to", "Erin"),
    }
    old = next(
        v
        for v in b.admin.export()
        if v["type"] == "relationship" and v["relation"] == "works_at" and v["superseded_at"]
    )
    assert old["reason"] == RetireReason.SOURCE_REVISED.value
    assert old["source"] == note_source(here)
    revisions = [
        r for r in b.admin.export() if r["type"] == "revision" and r["document_id"] == here
    ]
    assert len({r["revision"] for r in revisions}) == 2
    # the note's statements came with it: editing it here drops Erin
    b.ingest_markdown(ALICE_LATER.replace(" and [[Erin]]", ""), uri="people/alice.md")
    assert ("links_to", "Erin") not in _current(b, "Alice")


def test_a_newer_note_here_keeps_its_facts(two: tuple[Brain, Brain], clock: FrozenClock) -> None:
    a, b = two
    a.ingest_markdown(ALICE, uri="people/alice.md")
    clock.advance(days=1)
    b.ingest_markdown(ALICE_LATER, uri="people/alice.md")
    result = b.admin.import_records(list(a.admin.export()))
    assert (result.updated, result.kept, result.kept_facts) == (0, 1, 2)
    assert b.document("people/alice.md").content == ALICE_LATER
    assert _current(b, "Alice") == {
        ("works_at", "Globex"),
        ("links_to", "Bob"),
        ("links_to", "Erin"),
    }


def test_contradicting_facts_are_refused_listed_and_nothing_is_written(
    two: tuple[Brain, Brain],
) -> None:
    a, b = two
    a.ingest_markdown("# New\n\nfrom a", uri="new.md")
    a.graph.relate("Ada", "works_at", "Acme", valid_at=datetime(2020, 1, 1, tzinfo=UTC))
    a.graph.relate("Ada", "born_in", "London")
    a.graph.relate("Bo", "knows", "Cy", valid_at=datetime(2021, 1, 1, tzinfo=UTC))
    b.graph.relate("Ada", "works_at", "Globex", valid_at=datetime(2019, 1, 1, tzinfo=UTC))
    b.graph.relate("Bo", "knows", "Cy", valid_at=datetime(2022, 1, 1, tzinfo=UTC))
    before = list(b.admin.export())
    with pytest.raises(Conflict) as refused:
        b.admin.import_records(list(a.admin.export()))
    message = str(refused.value)
    assert "2 conflict(s)" in message and "nothing was written" in message
    assert "Ada works_at Acme" in message and "Bo knows Cy" in message
    assert list(b.admin.export()) == before


def test_ids_are_remapped_and_lineage_survives(two: tuple[Brain, Brain]) -> None:
    a, b = two
    a.graph.relate("Ada", "works_at", "Acme", valid_at=datetime(2020, 1, 1, tzinfo=UTC))
    a.graph.relate("Ada", "works_at", "Globex", valid_at=datetime(2023, 1, 1, tzinfo=UTC))
    for i in range(3):
        b.graph.relate(f"P{i}", "knows", f"Q{i}")
    b.admin.import_records(list(a.admin.export()))
    current = {r.to_name: r for r in b.graph.relations("Ada")}
    assert sorted(current) == ["Acme", "Globex"]  # Acme's window closed when Globex began
    assert current["Acme"].invalid_at == datetime(2023, 1, 1, tzinfo=UTC)
    history = b.graph.history(current["Acme"].id)
    assert [v.invalid_at for v in history.versions] == [None, current["Acme"].invalid_at]
    assert history.versions[0].reason == RetireReason.CONTRADICTED
    assert history.versions[1].supersedes == history.versions[0].id
    assert min(r.id for r in current.values()) > 3  # past the brain's own three facts


def test_a_fact_two_notes_state_outlives_either_after_a_restore(
    two: tuple[Brain, Brain],
) -> None:
    a, b = two
    a.ingest_markdown("# Alice\n\nsee [[Bob]]", uri="one.md")
    a.ingest_markdown("# Alice\n\nalso [[Bob]]", uri="two.md")
    b.admin.import_records(list(a.admin.export()))  # an empty brain: a restore
    assert list(b.admin.export()) == list(a.admin.export())
    b.delete_document(b.document("one.md").id)
    assert _current(b, "Alice") == {("links_to", "Bob")}
    (fact,) = b.graph.relations("Alice")
    assert fact.source == note_source(b.document("two.md").id)
