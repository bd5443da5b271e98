"""Conformance: export then import round-trips every record; a bad record is named and refused."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from nexusbrain.clock import FrozenClock
from nexusbrain.config import GraphConfig
from nexusbrain.errors import InvalidInput
from nexusbrain.graph import Graph
from nexusbrain.records import Capture, SearchFilters
from nexusbrain.storage.base import Backend

from .conftest import NOW, chunk, draft, write


def _fill(backend: Backend) -> None:
    texts = [f"word{i} common" for i in range(1_234)]  # several multi-row statements
    write(
        backend, draft("big.md", text=" ".join(texts)), [chunk(t, i) for i, t in enumerate(texts)]
    )
    small = write(backend, draft("small.md"), [chunk("alpha", 0, ("A", "B")), chunk("beta", 1)])
    write(backend, draft("small.md", "r2", "gamma"), [chunk("gamma")])
    gone = write(backend, draft("gone.md"), [chunk("delta")])
    backend.documents.retire_documents([gone.document_id], NOW)
    backend.documents.record_capture(
        Capture(NOW, "search", "alpha", "balanced", {}, (small.document_id,), 2.0), 100
    )
    graph = Graph(backend.graph, GraphConfig(), FrozenClock(NOW))
    graph.relate("Ada", "works_at", "Acme", valid_at=datetime(2020, 1, 1, tzinfo=UTC))
    graph.relate("Ada", "works_at", "Globex", valid_at=datetime(2022, 1, 1, tzinfo=UTC))


def test_export_then_import_round_trips_everything(
    backend: Backend, new_backend: Callable[[], Backend]
) -> None:
    _fill(backend)
    records = list(backend.documents.export_records())
    kinds = {r["type"] for r in records}
    assert {"header", "document", "revision", "chunk", "capture", "entity", "relationship"} <= kinds
    target = new_backend()
    result = target.documents.import_records(records)
    assert (result.documents, result.chunks) == (3, 1_235)
    assert list(target.documents.export_records()) == records
    assert len(target.lexical.search(["word777"], 5, SearchFilters()).scored) == 1
    assert target.lexical.search(["delta"], 5, SearchFilters()).scored == []


def test_a_bad_record_is_named_and_nothing_is_written(
    backend: Backend, new_backend: Callable[[], Backend]
) -> None:
    _fill(backend)
    records = [dict(r) for r in backend.documents.export_records()]
    lines = [i for i, r in enumerate(records, start=1) if r["type"] == "chunk"]
    records[lines[700] - 1]["id"] = records[lines[3] - 1]["id"]  # an id used twice
    fresh = new_backend()
    with pytest.raises(InvalidInput, match=f"import record {lines[700]} is invalid"):
        fresh.documents.import_records(records)
    stats = fresh.documents.stats()
    assert (stats.documents, stats.chunks) == (0, 0)
    assert fresh.graph.find_entity("ada") is None


def test_import_into_a_backend_with_data_merges_documents_by_uri(
    backend: Backend, new_backend: Callable[[], Backend]
) -> None:
    _fill(backend)
    records = list(backend.documents.export_records())
    target = new_backend()
    write(target, draft("mine.md", text="epsilon"), [chunk("epsilon")])
    write(target, draft("small.md", "r2", "gamma"), [chunk("gamma")])
    result = target.documents.import_records(records)
    assert (result.documents, result.unchanged) == (2, 1)  # small.md: the same revision
    assert result.chunks == 1_234  # big.md's; gone.md was retired, so it has none
    assert len(target.lexical.search(["epsilon"], 5, SearchFilters()).scored) == 1
    assert len(target.lexical.search(["word777"], 5, SearchFilters()).scored) == 1
    assert target.lexical.search(["alpha"], 5, SearchFilters()).scored == []  # history only
    again = target.documents.import_records(records)
    assert (again.documents, again.chunks, again.unchanged) == (0, 0, 3)
    stats = target.documents.stats()
    assert (stats.documents, stats.chunks) == (3, 1_236)
