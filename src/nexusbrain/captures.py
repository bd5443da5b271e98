"""Captured searches as replay records: each result resolved to an id that outlives the database.

Chunk ids belong to one database, so each result gets a stable `id`: ``<uri>#<unit>`` for a
chunk with a unit (a conversation turn), else ``<uri>@<char_start>-<char_end>``; a chunk that no
longer exists is ``chunk:<n>``, which nothing matches (see evals/replay.py for how they are
replayed)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from nexusbrain.clock import format_time
from nexusbrain.records import Capture, Chunk, DocumentHead

Fetch = Callable[[Sequence[int]], Mapping[int, tuple[Chunk, DocumentHead]]]


def stable_id(uri: str, unit: str | None, char_start: int, char_end: int) -> str:
    return f"{uri}#{unit}" if unit else f"{uri}@{char_start}-{char_end}"


def capture_records(captures: Iterable[Capture], fetch: Fetch) -> Iterator[dict[str, Any]]:
    """The NDJSON objects of `captures`, each result resolved to a stable id."""
    for capture in captures:
        found = fetch(list(capture.results))
        yield {
            "at": format_time(capture.at),
            "operation": capture.operation,
            "query": capture.query,
            "mode": capture.mode,
            "filters": dict(capture.filters),
            "results": [_result(chunk_id, found.get(chunk_id)) for chunk_id in capture.results],
            "latency_ms": round(capture.latency_ms, 3),
        }


def _result(chunk_id: int, found: tuple[Chunk, DocumentHead] | None) -> dict[str, Any]:
    if found is None:
        return {"id": f"chunk:{chunk_id}", "chunk_id": chunk_id}
    chunk, head = found
    return {
        "id": stable_id(head.uri, chunk.unit, chunk.char_start, chunk.char_end),
        "chunk_id": chunk_id,
        "uri": head.uri,
        "unit": chunk.unit,
        "char_start": chunk.char_start,
        "char_end": chunk.char_end,
    }
