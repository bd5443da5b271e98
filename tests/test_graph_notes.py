"""Edges from notes: wikilinks and front matter relations, kept in line with the note."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexusbrain.brain import Brain
from nexusbrain.clock import FrozenClock
from nexusbrain.errors import InvalidInput
from nexusbrain.graph.notes import note_edges, wikilink_targets
from nexusbrain.graph.service import note_source
from nexusbrain.records import Relationship, RetireReason

NOTE = """---
relations:
  - {type: works_at, to: Acme, valid_at: 2020-01-01}
  - lives_in: Berlin
  - "reports_to: Carol"
---
# Alice

Alice pairs with [[Bob Smith|Bob]] and reads [[notes/Dave.md#Intro]].
"""

EDITED = """---
relations:
  - {type: works_at, to: Acme, valid_at: 2020-01-01, invalid_at: 2024-01-01}
  - lives_in: Berlin
---
# Alice

Alice pairs with [[Bob Smith]] and [[Erin]].
"""


def edges_of(brain: Brain, document_id: int) -> dict[tuple[str, str], Relationship]:
    """The current edges whose source is the note, by (type, to)."""
    found = brain.graph.relations("Alice")
    return {(r.type, r.to_name): r for r in found if r.source == note_source(document_id)}


def test_wikilinks_and_relations_become_edges_with_the_note_as_source(brain: Brain) -> None:
    doc = brain.ingest_markdown(NOTE, uri="n/alice.md").document_id
    edges = edges_of(brain, doc)
    assert sorted(edges) == [
        ("links_to", "Bob Smith"),
        ("links_to", "Dave"),
        ("lives_in", "Berlin"),
        ("reports_to", "Carol"),
        ("works_at", "Acme"),
    ]
    acme = edges[("works_at", "Acme")]
    assert acme.valid_at is not None and acme.valid_at.isoformat() == "2020-01-01T00:00:00+00:00"
    assert {r.from_name for r in edges.values()} == {"Alice"}


def test_editing_a_note_retires_the_edges_of_its_old_revision(
    brain: Brain, clock: FrozenClock
) -> None:
    doc = brain.ingest_markdown(NOTE, uri="n/alice.md").document_id
    before = edges_of(brain, doc)
    clock.advance(minutes=1)
    brain.ingest_markdown(EDITED, uri="n/alice.md")
    after = edges_of(brain, doc)
    assert sorted(after) == [
        ("links_to", "Bob Smith"),
        ("links_to", "Erin"),
        ("lives_in", "Berlin"),
        ("works_at", "Acme"),
    ]
    # still stated, same window: the very same version, untouched
    assert after[("lives_in", "Berlin")] == before[("lives_in", "Berlin")]
    assert after[("links_to", "Bob Smith")] == before[("links_to", "Bob Smith")]
    # no longer stated: retired, reason source_revised
    for gone in (("links_to", "Dave"), ("reports_to", "Carol")):
        [version] = brain.graph.history(before[gone].id).versions
        assert (version.reason, version.superseded_at) == (RetireReason.SOURCE_REVISED, clock())
    # stated with a new window: a new version in the same lineage
    acme = brain.graph.history(after[("works_at", "Acme")].id)
    assert [v.reason for v in acme.versions] == [RetireReason.WINDOW_CHANGED, None]
    assert acme.versions[0].id == before[("works_at", "Acme")].id


def test_an_unchanged_note_touches_nothing_and_a_deleted_one_is_retracted(
    brain: Brain, clock: FrozenClock
) -> None:
    doc = brain.ingest_markdown(NOTE, uri="n/alice.md").document_id
    ids = sorted(r.id for r in edges_of(brain, doc).values())
    clock.advance(minutes=1)
    assert brain.ingest_markdown(NOTE, uri="n/alice.md").status.value == "duplicate"
    assert sorted(r.id for r in edges_of(brain, doc).values()) == ids
    clock.advance(minutes=1)
    assert brain.delete_document(doc)
    assert edges_of(brain, doc) == {}
    for edge_id in ids:
        [version] = brain.graph.history(edge_id).versions
        assert (version.reason, version.superseded_at) == (RetireReason.RETRACTED, clock())


def test_ingest_dir_keeps_note_edges_in_line_with_the_files(
    brain: Brain, clock: FrozenClock, tmp_path: Path
) -> None:
    notes = tmp_path / "vault"
    notes.mkdir()
    (notes / "alice.md").write_text(NOTE)
    (notes / "bob.md").write_text("# Bob\n\nBob knows [[Alice]].\n")
    brain.ingest_dir(notes)
    alice_doc = brain.find_document((notes / "alice.md").as_posix()).id
    assert ("links_to", "Dave") in edges_of(brain, alice_doc)
    [bob_link] = brain.graph.relations("Bob")
    clock.advance(minutes=1)
    (notes / "alice.md").write_text(EDITED)
    (notes / "bob.md").unlink()
    report = brain.ingest_dir(notes)
    assert (report.updated, report.deleted) == (1, 1)
    assert ("links_to", "Dave") not in edges_of(brain, alice_doc)
    assert ("links_to", "Erin") in edges_of(brain, alice_doc)
    assert brain.graph.relations("Bob") == []
    assert brain.graph.history(bob_link.id).versions[-1].reason is RetireReason.RETRACTED


def test_a_bad_relation_refuses_the_note_and_stores_nothing(brain: Brain, tmp_path: Path) -> None:
    bad = "---\nrelations:\n  - {type: works_at, to: Acme, valid_at: someday}\n---\n# Zed\n\nx\n"
    with pytest.raises(InvalidInput, match=r"relations\[0\]\.valid_at='someday'"):
        brain.ingest_markdown(bad, uri="n/zed.md")
    assert brain.stats().store.documents == 0
    notes = tmp_path / "vault"
    notes.mkdir()
    (notes / "zed.md").write_text(bad)
    (notes / "ok.md").write_text("# Ok\n\nSee [[Zed]].\n")
    report = brain.ingest_dir(notes)
    assert report.added == 1
    [problem] = report.errors
    assert problem.path.endswith("zed.md") and "someday" in problem.reason
    assert [r.to_name for r in brain.graph.relations("Ok")] == ["Zed"]


def test_wikilink_targets() -> None:
    text = (
        "[[Bob]] [[Bob Smith|Bobby]] [[people/Carol.md]] [[Dave#Intro]] [[Erin^block]] "
        "![[image.png]] [[#Just a heading]] `[[inline code]]`\n"
        "```\n[[fenced]]\n```\n"
        "~~~~python\n[[tilde fenced]]\n~~~\nstill code [[x]]\n~~~~\n"
        "after [[Frank]]\n"
    )
    assert wikilink_targets(text) == ["Bob", "Bob Smith", "Carol", "Dave", "Erin", "Frank"]


def test_note_edges_skip_self_links_and_count_each_edge_once() -> None:
    edges = note_edges("Alice", {}, "[[alice]] [[Bob]] and [[bob|again]]", "links_to")
    assert [(e.from_name, e.type, e.to_name) for e in edges] == [("Alice", "links_to", "Bob")]


@pytest.mark.parametrize(
    ("relations", "message"),
    [
        ("nope", "must be a list"),
        ([{"type": "works_at"}], "write it as"),
        ([{"type": "works_at", "to": "Acme", "since": 2020}], "unknown field"),
        (["works_at Acme"], "write it as"),
        (
            [{"type": "works_at", "to": "A", "valid_at": "2024-01-01", "invalid_at": "2020-01-01"}],
            "must be after",
        ),
        (
            ["works_at: Acme", {"type": "works_at", "to": "Acme", "valid_at": "2020-01-01"}],
            "different windows",
        ),
    ],
)
def test_bad_front_matter_relations_are_named(relations: object, message: str) -> None:
    with pytest.raises(InvalidInput, match=message) as caught:
        note_edges("Alice", {"relations": relations}, "", "links_to")
    assert "note 'Alice'" in caught.value.message


def test_a_fact_two_notes_state_outlives_either(brain: Brain, clock: FrozenClock) -> None:
    first = brain.ingest_markdown(NOTE, uri="n/alice.md").document_id
    second = brain.ingest_markdown(NOTE + "\nAnother note on Alice.\n", uri="m/alice.md")
    shared = edges_of(brain, first)[("works_at", "Acme")]
    assert edges_of(brain, second.document_id) == {}  # the first note is the source
    clock.advance(minutes=1)
    assert brain.delete_document(first)
    now = edges_of(brain, second.document_id)
    assert set(now) == set(edges_of_note(NOTE))  # every shared fact still holds
    successor = now[("works_at", "Acme")]
    versions = brain.graph.history(shared.id).versions
    assert [v.id for v in versions] == [shared.id, successor.id]
    assert versions[0].superseded_at == successor.created_at == clock()
    assert successor.valid_at == shared.valid_at
    clock.advance(minutes=1)
    brain.delete_document(second.document_id)  # the last note that states it: retracted
    assert brain.graph.relations("Alice") == []


def test_a_note_that_stops_stating_a_shared_fact_hands_it_on(
    brain: Brain, clock: FrozenClock
) -> None:
    first = brain.ingest_markdown(NOTE, uri="n/alice.md").document_id
    second = brain.ingest_markdown(NOTE + "\nAgain.\n", uri="m/alice.md").document_id
    clock.advance(minutes=1)
    brain.ingest_markdown(EDITED, uri="n/alice.md")  # no longer: reports_to Carol
    carol = {(r.type, r.to_name): r for r in brain.graph.relations("Alice")}
    assert carol[("reports_to", "Carol")].source == note_source(second)
    assert ("reports_to", "Carol") not in edges_of(brain, first)


def edges_of_note(text: str) -> set[tuple[str, str]]:
    return {(e.type, e.to_name) for e in note_edges("Alice", _front(text), text, "links_to")}


def _front(text: str) -> dict[str, object]:
    from nexusbrain.ingest.frontmatter import parse_front_matter

    return dict(parse_front_matter(text).data)
