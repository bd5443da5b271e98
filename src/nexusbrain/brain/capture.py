"""The capture log: searches and recalls recorded as they are answered (BRAIN_CAPTURE=1), for
`nexusbrain eval replay` to run again against a later brain."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from nexusbrain.clock import Clock
from nexusbrain.config import CaptureConfig
from nexusbrain.records import Capture, Hit, SearchFilters, SearchMode
from nexusbrain.storage.base import DocumentStore


class CaptureLog:
    def __init__(self, store: DocumentStore, config: CaptureConfig, clock: Clock) -> None:
        self._store = store
        self._config = config
        self._clock = clock

    def record(
        self,
        operation: str,
        query: str,
        mode: SearchMode | str,
        filters: SearchFilters | None,
        hits: Sequence[Hit],
        started: float,
    ) -> None:
        """Keep one answered search or recall (`started`: its time.perf_counter() at the
        start), when capture is on; the store keeps the newest `max_rows`."""
        if not self._config.enabled:
            return
        capture = Capture(
            at=self._clock(),
            operation=operation,
            query=query,
            mode=str(mode),
            filters=_filters_dict(filters),
            results=tuple(h.chunk_id for h in hits),
            latency_ms=(time.perf_counter() - started) * 1000,
        )
        self._store.record_capture(capture, self._config.max_rows)

    def records(self) -> Iterator[dict[str, Any]]:
        """Every captured search and recall, as replay records: results get stable ids."""
        from nexusbrain.captures import capture_records

        return capture_records(self._store.captures(), self._store.fetch_chunks)


def _filters_dict(filters: SearchFilters | None) -> dict[str, Any]:
    if filters is None:
        return {}
    return {
        name: str(value)
        for name in SearchFilters.__slots__
        if (value := getattr(filters, name)) is not None
    }
