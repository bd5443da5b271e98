"""Turning ranked chunk ids into hits that cite their source."""

from __future__ import annotations

from collections.abc import Sequence

from nexusbrain.records import Hit, Trace
from nexusbrain.storage import Store


def build_hits(store: Store, ranked: Sequence[tuple[int, float, Trace]]) -> list[Hit]:
    """Hits in the given order, ranks from 1. Chunks that vanished meanwhile are skipped."""
    found = store.fetch_chunks([chunk_id for chunk_id, _, _ in ranked])
    hits: list[Hit] = []
    for chunk_id, score, trace in ranked:
        if chunk_id not in found:
            continue
        chunk, head = found[chunk_id]
        hits.append(
            Hit(
                rank=len(hits) + 1,
                score=score,
                chunk_id=chunk.id,
                document_id=head.id,
                uri=head.uri,
                title=head.title,
                domain=head.domain,
                kind=head.kind,
                revision=head.revision,
                unit=chunk.unit,
                text=chunk.text,
                char_start=chunk.char_start,
                char_end=chunk.char_end,
                line_start=chunk.line_start,
                line_end=chunk.line_end,
                heading_path=chunk.heading_path,
                trace=trace,
            )
        )
    return hits
