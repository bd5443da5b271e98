"""Import validates every record as strictly as ingest does, all or nothing (issue 17, finding
6): a record that would break a later read is refused with its line, field and value."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nexusbrain.brain import Brain
from nexusbrain.clock import FrozenClock
from nexusbrain.config import CaptureConfig, Profile, Settings
from nexusbrain.errors import InvalidInput
from nexusbrain.graph.model import inputs_from_json

from .conftest import LiveServer
from .test_api import assert_error

NOTE = "---\nrelations:\n  - {type: works_at, to: Acme}\n---\n# Alice\n\nAlice knows [[Bob]]."
BOB = {"entities": [{"name": "Bob", "type": "person", "aliases": ["Robert"]}]}


def manages(valid_at: str) -> dict[str, Any]:
    return {
        "relationships": [{"from": "Bob", "type": "manages", "to": "Carol", "valid_at": valid_at}]
    }


@pytest.fixture
def exported(tmp_path: Path) -> list[dict[str, Any]]:
    """Every kind of record: documents, revisions, chunks, captures, entities, aliases and
    relationships, a retired one among them."""
    clock = FrozenClock(datetime(2026, 1, 2, tzinfo=UTC))
    settings = Settings(
        db=tmp_path / "source.db",
        embedder=Profile.HASHING,
        capture=CaptureConfig(enabled=True),
    )
    with Brain.open(settings=settings, clock=clock) as brain:
        brain.ingest_markdown(NOTE, title="Alice", uri="alice.md")
        brain.add_memory("the okapi grazes")
        brain.search("okapi")
        for body in (BOB, manages("2020-01-01"), manages("2021-01-01")):
            clock.advance(seconds=1)
            brain.graph.ingest(*inputs_from_json(body))
        return list(brain.admin.export())


def wrong(name: str, value: Any) -> Any:
    """A value of the wrong type or form for a field that holds `value`."""
    if name.endswith("_at") or name == "at":
        return "not a time"
    if isinstance(value, dict):
        return [1, 2]
    if isinstance(value, str):
        return 12345
    if isinstance(value, list | type(None)):
        return {"a": 1}
    return "7"  # an int or a float


def test_every_field_of_every_kind_of_record_is_checked(
    exported: list[dict[str, Any]], brain: Brain
) -> None:
    kinds = {r["type"] for r in exported}
    assert kinds >= {"document", "revision", "chunk", "capture", "entity", "alias", "relationship"}
    assert any(r["type"] == "relationship" and r["reason"] for r in exported)
    tried = 0
    for line, record in enumerate(exported, start=1):
        for name, value in record.items():
            if name == "type" or record["type"] == "header":
                continue
            bad = [*exported[: line - 1], {**record, name: wrong(name, value)}, *exported[line:]]
            with pytest.raises(InvalidInput, match=rf"import record {line}\b.*{name}"):
                brain.admin.import_records(bad)
            tried += 1
    assert tried > 60
    assert list(brain.admin.export())[1:] == []  # every refusal left nothing behind
    brain.admin.import_records(exported)
    assert list(brain.admin.export()) == exported


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        ("created_at", "not a time", "not a UTC time as export writes it"),
        ("created_at", "2026-01-02", "not a UTC time as export writes it"),
        ("metadata", [1, 2], "must be a JSON object"),
        (
            "metadata",
            {"deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]},
            "nested",
        ),
        ("id", 0, "must be an id"),
        ("id", 2**63, "must be an id"),
        ("id", True, "must be an id"),
        ("kind", "poem", "must be one of"),
        ("uri", "", "must not be empty"),
        ("bogus", 1, "unknown field"),
    ],
)
def test_a_bad_document_names_its_line_field_and_value(
    exported: list[dict[str, Any]], brain: Brain, name: str, value: Any, reason: str
) -> None:
    line = next(i for i, r in enumerate(exported, start=1) if r["type"] == "document")
    bad = list(exported)
    bad[line - 1] = {**bad[line - 1], name: value}
    with pytest.raises(InvalidInput, match=rf"^import record {line} \(document\): ") as refused:
        brain.admin.import_records(bad)
    assert name in refused.value.message and reason in refused.value.message
    assert brain.stats().store.documents == 0


def test_chunk_spans_must_run_forwards(exported: list[dict[str, Any]], brain: Brain) -> None:
    line = next(i for i, r in enumerate(exported, start=1) if r["type"] == "chunk")
    bad = list(exported)
    bad[line - 1] = {**bad[line - 1], "char_start": 10, "char_end": 3}
    with pytest.raises(InvalidInput, match="char_end 3 is before char_start 10"):
        brain.admin.import_records(bad)


def test_over_http_a_bad_record_is_a_400_and_later_reads_work(
    exported: list[dict[str, Any]], live_server: LiveServer
) -> None:
    import orjson

    for name, value in (("created_at", "not a time"), ("metadata", [1, 2])):
        records = [dict(r) for r in exported]
        doc = next(r for r in records if r["type"] == "document")
        doc[name] = value
        body = b"".join(orjson.dumps(r) + b"\n" for r in records)
        with live_server.client() as http:
            headers = {"content-type": "application/x-ndjson"}
            error = assert_error(
                http.post("/import", content=body, headers=headers), 400, "invalid_input"
            )
            assert name in error["message"]
            assert http.get("/stats").json()["documents"] == 0
            assert http.get(f"/documents/{doc['id']}").status_code == 404
