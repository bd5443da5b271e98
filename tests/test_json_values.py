"""What a stored JSON value may hold (records.json_problem), and ingest refusing the rest."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nexusbrain.brain import Brain
from nexusbrain.errors import InvalidInput
from nexusbrain.records import MAX_JSON_DEPTH, json_problem


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        None,
        {"a": [1, 2.5, None, True, "é", "😀", {"b": []}]},
        {"n": 2**63 - 1, "m": -(2**63), "u": 2**64 - 1},
        nested(MAX_JSON_DEPTH),
    ],
)
def test_storable_values_have_no_problem(value: Any) -> None:
    assert json_problem(value) is None


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (json.loads('{"text": "a \\ud800"}'), "text: holds a lone surrogate U+D800"),
        (json.loads('{"tags": ["ok", "\\udfff"]}'), "tags[1]: holds a lone surrogate U+DFFF"),
        (json.loads('{"a": {"\\ud800": 1}}'), "a: the key '\\ud800' is not Unicode text"),
        ({"n": 2**64}, "n: the integer 18446744073709551616 is beyond 64 bits"),
        ({"n": -(2**63) - 1}, "is beyond 64 bits"),
        ({"x": float("nan")}, "x: nan is not a finite number"),
        ({"x": float("inf")}, "x: inf is not a finite number"),
        ({"x": {1, 2}}, "x: a set is not a JSON value"),
        ({1: "a"}, "value: the key '1' is not Unicode text"),
        ({"deep": nested(MAX_JSON_DEPTH)}, f"deep: nested more than {MAX_JSON_DEPTH} levels"),
        (nested(300), f"value: nested more than {MAX_JSON_DEPTH} levels"),
    ],
)
def test_each_problem_is_named_with_where_it_is(value: Any, problem: str) -> None:
    found = json_problem(value)
    assert found is not None and problem in found


def test_a_very_deep_value_is_checked_without_recursion() -> None:
    assert json_problem(nested(100_000)) is not None


@pytest.mark.parametrize(
    ("content", "metadata"),
    [
        ("# Note\n\ntext", {"deep": nested(300)}),
        ("# Note\n\ntext", {"n": 2**70}),
        ("---\nx: " + "[" * 40 + "1" + "]" * 40 + "\n---\ntext", None),
    ],
)
def test_ingest_refuses_metadata_it_could_not_read_back(
    brain: Brain, content: str, metadata: dict[str, Any] | None
) -> None:
    with pytest.raises(InvalidInput, match="metadata cannot be stored"):
        brain.ingest_markdown(content, title="t", uri="n.md", metadata=metadata)
    assert brain.stats().store.documents == 0


def test_front_matter_values_json_lacks_are_kept_as_text(brain: Brain) -> None:
    note = "---\nn: 99999999999999999999999\nx: .nan\nday: 2024-01-31\n---\n# Note\n\ntext"
    result = brain.ingest_markdown(note, title="t", uri="n.md")
    front = brain.get_document(result.document_id).metadata["front_matter"]
    assert front == {"n": "99999999999999999999999", "x": "nan", "day": "2024-01-31"}
