"""'Why (not)': where a document ranked for a query, from the very search that `search` runs
(the same depth, fusion, filters, mode and best-per-document choice), and the chunk it speaks
of: the one search returned, or else the document's best fused chunk."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from enum import StrEnum

from nexusbrain.records import Document, SearchFilters
from nexusbrain.retrieval.fusion import Fused
from nexusbrain.retrieval.modes import SearchConfig
from nexusbrain.retrieval.pipeline import Answer, Ranked, Searcher


class Verdict(StrEnum):
    RETURNED = "returned"
    RETIRED = "retired"  # no longer searched
    FILTERED = "filtered"  # a filter excludes it
    NOT_A_CANDIDATE = "not_a_candidate"  # in no retriever's list, to the search's depth
    BELOW_FLOOR = "below_floor"  # under the mode's share of the best fused score
    WITHHELD = "withheld"  # the mode returns nothing for a result set this weak
    BELOW_K = "below_k"  # ranked, but after the first k
    COPY = "copy"  # its text is a hit's, shown once, under the copy that ranked first


@dataclass(frozen=True, slots=True)
class ListPosition:
    retriever: str
    rank: int | None  # None: not in that list (which is as deep as the search's)
    score: float | None
    chunk_id: int | None


@dataclass(frozen=True, slots=True)
class Explanation:
    query: str
    document_id: int
    uri: str
    mode: str
    k: int
    depth: int
    best_per_document: bool
    verdict: Verdict
    rank: int | None  # the document's place in the search's hits (its first hit)
    chunk_id: int | None  # the chunk that rank, or else the best fused rank, is about
    fused_rank: int | None  # that chunk's place in the fused list, before the cut to k
    fused_score: float | None
    excluded_by: tuple[str, ...]  # filters the document fails
    positions: tuple[ListPosition, ...]  # best chunk of the document in each list
    copy_of: int | None = None  # COPY: the chunk id of the hit that stands for its text

    @property
    def returned(self) -> bool:
        return self.verdict is Verdict.RETURNED

    @property
    def retired(self) -> bool:
        return self.verdict is Verdict.RETIRED


def explain(
    searcher: Searcher,
    query: str,
    document: Document,
    filters: SearchFilters,
    config: SearchConfig,
    k: int,
    *,
    mode: str,
    best_per_document: bool = False,
) -> Explanation:
    answer = searcher.answer(query, k, filters, config, best_per_document=best_per_document)
    chunk_ids = {c.id for c in searcher.store.chunks_of(document.id)}
    rank, shown = next(
        ((i, h.chunk_id) for i, h in enumerate(answer.hits, 1) if h.document_id == document.id),
        (None, None),
    )
    fused_rank, fused = _fused_position(answer.ranked.fused, chunk_ids)
    excluded = _failing_filters(searcher, document, filters)
    return Explanation(
        query=query,
        document_id=document.id,
        uri=document.uri,
        mode=mode,
        k=k,
        depth=max(k, config.depth),
        best_per_document=best_per_document,
        verdict=_verdict(document, excluded, rank, fused, answer),
        rank=rank,
        chunk_id=shown if shown is not None else (fused.chunk_id if fused else None),
        fused_rank=fused_rank,
        fused_score=fused.score if fused else None,
        excluded_by=excluded,
        positions=_positions(answer.ranked, chunk_ids),
        copy_of=answer.texts.copy_of.get(fused.chunk_id) if fused and rank is None else None,
    )


def _verdict(
    document: Document,
    excluded: tuple[str, ...],
    rank: int | None,
    fused: Fused | None,
    answer: Answer,
) -> Verdict:
    if rank is not None:
        return Verdict.RETURNED
    if document.deleted_at is not None:
        return Verdict.RETIRED
    if excluded:
        return Verdict.FILTERED
    if fused is None:
        return Verdict.NOT_A_CANDIDATE
    if fused not in answer.kept:
        return Verdict.BELOW_FLOOR
    if fused.chunk_id in answer.texts.copy_of:
        return Verdict.COPY
    if not answer.hits and answer.confidence is not None and answer.confidence.weak:
        return Verdict.WITHHELD
    return Verdict.BELOW_K


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


def _fused_position(fused: list[Fused], chunk_ids: set[int]) -> tuple[int | None, Fused | None]:
    for rank, item in enumerate(fused, start=1):
        if item.chunk_id in chunk_ids:
            return rank, item
    return None, None


def _failing_filters(
    searcher: Searcher, document: Document, filters: SearchFilters
) -> tuple[str, ...]:
    failing = []
    chunks = {c.id for c in searcher.store.chunks_of(document.id)}
    for item in fields(SearchFilters):
        value = getattr(filters, item.name)
        if value is None:
            continue
        single = replace(SearchFilters(), **{item.name: value})
        if chunks and not chunks & searcher.store.chunk_ids_matching(single):
            failing.append(f"{item.name}={value}")
    return tuple(failing)
