"""The graph's pure rules, names and inputs, against hand-computed tables."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nexusbrain.errors import InvalidInput
from nexusbrain.graph.model import describe, inputs_from_json, parse_instant
from nexusbrain.graph.names import entity_key, mention_keys, relationship_type
from nexusbrain.graph.rules import (
    Cut,
    TripleChange,
    Window,
    checked_window,
    contradiction_cut,
    triple_change,
    visible,
)
from nexusbrain.records import Relationship, RetireReason


def y(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=UTC)


def edge(
    start: datetime | None = None,
    end: datetime | None = None,
    created: datetime | None = None,
    superseded: datetime | None = None,
) -> Relationship:
    reason = RetireReason.WINDOW_CHANGED if superseded else None
    return Relationship(
        7,
        1,
        "alice",
        "manages",
        2,
        "bob",
        start,
        end,
        created or y(2026),
        superseded,
        reason,
        None,
        None,
    )


LEARNED = y(2026)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # an older fact is closed where the new one starts
        (Window(y(2019)), Window(y(2023)), Cut(Window(y(2019), y(2023)))),
        (Window(y(2020), y(2030)), Window(y(2022), y(2024)), Cut(Window(y(2020), y(2022)))),
        # an undated new fact wins from when the brain learned it
        (Window(), Window(), Cut(Window(None, LEARNED))),
        (Window(y(2019)), Window(None, y(2030)), Cut(Window(y(2019), LEARNED))),
        # an old fact starting inside the new one keeps what lies after it, if anything
        (Window(y(2025)), Window(y(2020), y(2026)), Cut(Window(y(2026)))),
        (Window(y(2025)), Window(y(2020)), Cut(None)),
        (Window(y(2025), y(2026)), Window(y(2020), y(2027)), Cut(None)),
        # never both at once: nothing changes
        (Window(y(2020), y(2022)), Window(y(2023)), None),
        (Window(y(2025)), Window(y(2020), y(2024)), None),
        (Window(y(2020), y(2022)), Window(y(2022)), None),
    ],
)
def test_contradiction_cut(old: Window, new: Window, expected: Cut | None) -> None:
    assert contradiction_cut(old, new, LEARNED) == expected


years = st.one_of(st.none(), st.integers(2018, 2030).map(y))
windows = (
    st.tuples(years, years).filter(lambda w: None in w or w[0] < w[1]).map(lambda w: Window(*w))
)


@given(windows, windows)
def test_a_cut_fact_never_holds_alongside_the_new_one(old: Window, new: Window) -> None:
    cut = contradiction_cut(old, new, LEARNED)
    claim = Window(new.start or LEARNED, new.end)
    if cut is None:
        assert not old.overlaps(claim)
    elif cut.successor is not None:
        assert not cut.successor.overlaps(claim)
        assert old.intersect(cut.successor) == cut.successor  # it only ever shrinks


@given(windows, windows)
def test_intersection_is_symmetric_and_within_both(a: Window, b: Window) -> None:
    both = a.intersect(b)
    assert both == b.intersect(a)
    assert (both is None) == (not a.overlaps(b))
    if both is not None:
        assert a.intersect(both) == both and b.intersect(both) == both


def test_windows_are_half_open() -> None:
    w = Window(y(2020), y(2023))
    assert w.holds_at(y(2020)) and not w.holds_at(y(2023)) and Window().holds_at(y(1))
    assert not w.overlaps(Window(y(2023))) and w.overlaps(Window(None, y(2021)))
    with pytest.raises(InvalidInput, match="must be after"):
        checked_window(y(2023), y(2023))


def test_triple_change() -> None:
    current = edge(y(2020), y(2023))
    assert triple_change(None, Window()) is TripleChange.CREATE
    assert triple_change(current, Window(y(2020), y(2023))) is TripleChange.DUPLICATE
    assert triple_change(current, Window(y(2020))) is TripleChange.REPLACE


def test_visible_on_both_axes() -> None:
    retired = edge(y(2020), y(2023), created=y(2024), superseded=y(2025))
    assert not visible(retired, None, None)  # not current
    assert visible(retired, None, y(2024)) and not visible(retired, None, y(2025))
    assert not visible(retired, None, datetime(2023, 12, 31, tzinfo=UTC))
    assert visible(retired, y(2022), y(2024)) and not visible(retired, y(2023), y(2024))
    assert visible(edge(), y(1900), None)


def test_names_and_types() -> None:
    assert entity_key("  Bob \t Smith ") == "bob smith" == entity_key("BOB SMITH")
    assert entity_key("Straße") == entity_key("STRASSE")
    with pytest.raises(InvalidInput, match="empty"):
        entity_key(" ")
    assert relationship_type(" Works at ") == "works_at" == relationship_type("works-at")
    with pytest.raises(InvalidInput, match="'is/was'"):
        relationship_type("is/was")
    assert mention_keys("Ask Bob O'Brien.", max_words=2) == [
        "ask",
        "ask bob",
        "bob",
        "bob o'brien",
        "o'brien",
    ]


def test_describe() -> None:
    assert describe(edge(y(2020), y(2023))) == (
        "alice manages bob (valid 2020-01-01..2023-01-01) [relationship 7]"
    )
    assert describe(edge(y(2020))) == "alice manages bob (valid from 2020-01-01) [relationship 7]"
    assert describe(edge(None, y(2023)), cite=False) == "alice manages bob (valid until 2023-01-01)"
    noon = datetime(2020, 1, 1, 12, tzinfo=UTC)
    assert describe(edge(noon), cite=False) == (
        "alice manages bob (valid from 2020-01-01T12:00:00.000000+00:00)"
    )


def test_inputs_from_json() -> None:
    entities, relationships = inputs_from_json(
        {
            "entities": [{"name": "Bob", "aliases": ["Robert"]}],
            "relationships": [{"from": "a", "type": "t", "to": "b", "valid_at": "2020-01-01Z"}],
        }
    )
    assert entities[0].aliases == ("Robert",) and entities[0].type is None
    assert relationships[0].valid_at == y(2020) and relationships[0].invalid_at is None
    for body, message in [
        ({"relationships": [{"from": "a", "type": "t"}]}, r"relationships\[0\].to must be"),
        ({"relationships": [{"from": "a", "type": "t", "to": "b", "w": 1}]}, "unknown field"),
        ({"entities": {"name": "x"}}, "entities must be a list"),
        ({"entities": [{"name": "x", "aliases": "y"}]}, "aliases must be a list"),
        ({"nodes": []}, "unknown field"),
    ]:
        with pytest.raises(InvalidInput, match=message):
            inputs_from_json(body)
    assert parse_instant("t", "2020-01-01T05:00:00+05:00") == y(2020)
    with pytest.raises(InvalidInput, match="t='soon'"):
        parse_instant("t", "soon")
