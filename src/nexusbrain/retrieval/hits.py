"""Turning ranked chunk ids into hits that cite their source."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nexusbrain.records import Chunk, Copy, DocumentHead, Hit, Trace
from nexusbrain.storage.base import DocumentStore


def build_hits(
    ranked: Sequence[tuple[int, float, Trace]],
    found: Mapping[int, tuple[Chunk, DocumentHead]],
    copies: Mapping[int, Sequence[int]] | None = None,
) -> list[Hit]:
    """Hits in the given order, ranks from 1, from the chunks `found` (the store's
    `fetch_chunks` of at least these ids and their `copies`). Chunks that vanished meanwhile
    are skipped."""
    copies = copies or {}
    hits: list[Hit] = []
    for chunk_id, score, trace in ranked:
        if chunk_id not in found:
            continue
        chunk, head = found[chunk_id]
        also_in = tuple(_copy(*found[c]) for c in copies.get(chunk_id, ()) if c in found)
        hits.append(_hit(len(hits) + 1, score, chunk, head, trace, also_in))
    return hits


def _hit(
    rank: int,
    score: float,
    chunk: Chunk,
    head: DocumentHead,
    trace: Trace,
    also_in: tuple[Copy, ...],
) -> Hit:
    return Hit(
        rank=rank,
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
        also_in=also_in,
        page=page_of(chunk),
        tags=head.tags,
    )


def page_of(chunk: Chunk) -> int | None:
    """The page a chunk lies on: a PDF's chunks each keep theirs in `meta` (ingest/formats/
    pdf.py); other chunks have none."""
    page = chunk.meta.get("page")
    return page if isinstance(page, int) else None


def _copy(chunk: Chunk, head: DocumentHead) -> Copy:
    span = (chunk.char_start, chunk.char_end, chunk.line_start, chunk.line_end)
    return Copy(chunk.id, head.id, head.uri, *span, page=page_of(chunk))


def with_neighbours(store: DocumentStore, hits: Sequence[Hit], n: int) -> list[Hit]:
    """Each hit followed by up to `n` chunks before and after it in its document, as context
    (trace.context = "neighbour", same rank as the hit). A chunk appears once."""
    taken = {h.chunk_id for h in hits}
    out: list[Hit] = []
    by_document: dict[int, list[Chunk]] = {}
    for hit in hits:
        out.append(hit)
        chunks = by_document.setdefault(hit.document_id, store.chunks_of(hit.document_id))
        position = next((i for i, c in enumerate(chunks) if c.id == hit.chunk_id), None)
        if position is None:
            continue
        around = chunks[max(0, position - n) : position] + chunks[position + 1 : position + 1 + n]
        for chunk in around:
            if chunk.id not in taken:
                taken.add(chunk.id)
                out.append(_neighbour(hit, chunk))
    return out


def _neighbour(hit: Hit, chunk: Chunk) -> Hit:
    """`chunk` as a hit beside `hit`: the same document, rank and `also_in`, no score of its
    own."""
    head = DocumentHead(hit.document_id, hit.uri, hit.title, hit.domain, hit.kind, hit.revision)
    trace = Trace(retrievers=(), context=f"neighbour of chunk {hit.chunk_id}")
    return _hit(hit.rank, 0.0, chunk, head, trace, hit.also_in)
