"""'Why not': where a given document's chunks ranked in each list, or which filter excluded it."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from nexusbrain.records import Document, SearchFilters
from nexusbrain.retrieval.modes import SearchConfig
from nexusbrain.retrieval.pipeline import Ranked, Searcher

EXPLAIN_DEPTH = 1000


@dataclass(frozen=True, slots=True)
class ListPosition:
    retriever: str
    rank: int | None  # None: not among the first EXPLAIN_DEPTH results of that list
    score: float | None
    chunk_id: int | None


@dataclass(frozen=True, slots=True)
class Explanation:
    query: str
    document_id: int
    uri: str
    retired: bool
    excluded_by: tuple[str, ...]  # filters the document fails
    positions: tuple[ListPosition, ...]  # best chunk of the document in each list
    fused_rank: int | None
    fused_score: float | None
    returned: bool  # whether it made the top k
    k: int
    depth: int


def explain(
    searcher: Searcher,
    query: str,
    document: Document,
    filters: SearchFilters,
    config: SearchConfig,
    k: int,
) -> Explanation:
    excluded = _failing_filters(searcher, document, filters)
    ranked = searcher.rank(query, EXPLAIN_DEPTH, SearchFilters(), config)
    chunk_ids = {c.id for c in searcher.store.chunks_of(document.id)}
    fused_rank, fused_score = _fused_position(ranked, chunk_ids)
    visible = not excluded and document.deleted_at is None
    return Explanation(
        query=query,
        document_id=document.id,
        uri=document.uri,
        retired=document.deleted_at is not None,
        excluded_by=excluded,
        positions=_positions(ranked, chunk_ids),
        fused_rank=fused_rank,
        fused_score=fused_score,
        returned=visible and fused_rank is not None and fused_rank <= k,
        k=k,
        depth=EXPLAIN_DEPTH,
    )


def _positions(ranked: Ranked, chunk_ids: set[int]) -> tuple[ListPosition, ...]:
    out = []
    for name, results in ranked.lists.items():
        found = next(
            ((i, r) for i, r in enumerate(results, start=1) if r.chunk_id in chunk_ids), None
        )
        if found is None:
            out.append(ListPosition(name, None, None, None))
        else:
            rank, scored = found
            out.append(ListPosition(name, rank, scored.score, scored.chunk_id))
    return tuple(out)


def _fused_position(ranked: Ranked, chunk_ids: set[int]) -> tuple[int | None, float | None]:
    for rank, fused in enumerate(ranked.fused, start=1):
        if fused.chunk_id in chunk_ids:
            return rank, fused.score
    return None, None


def _failing_filters(
    searcher: Searcher, document: Document, filters: SearchFilters
) -> tuple[str, ...]:
    failing = []
    for item in fields(SearchFilters):
        value = getattr(filters, item.name)
        if value is None:
            continue
        single = replace(SearchFilters(), **{item.name: value})
        allowed = searcher.store.chunk_ids_matching(single)
        chunks = {c.id for c in searcher.store.chunks_of(document.id)}
        if chunks and not chunks & allowed:
            failing.append(f"{item.name}={value}")
    return tuple(failing)
