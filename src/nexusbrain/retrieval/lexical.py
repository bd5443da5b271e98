"""The lexical retriever: BM25 over the store's full-text index."""

from __future__ import annotations

from nexusbrain.config import LexicalConfig
from nexusbrain.records import RetrieverScore, Scored, SearchFilters, Trace
from nexusbrain.retrieval.terms import query_terms
from nexusbrain.storage import Store

NAME = "bm25"


def bm25_search(
    store: Store,
    query: str,
    k: int,
    filters: SearchFilters,
    config: LexicalConfig,
    *,
    best_per_document: bool = False,
) -> list[Scored]:
    terms = query_terms(query, drop_stopwords=config.drop_stopwords)
    return store.lexical_search(
        terms,
        k,
        filters,
        best_per_document=best_per_document,
        weights=(config.text_weight, config.heading_weight),
    )


def traced(results: list[Scored]) -> list[tuple[int, float, Trace]]:
    """A single list's results with their trace: rank and raw score for this retriever."""
    return [
        (r.chunk_id, r.score, Trace(retrievers=(RetrieverScore(NAME, rank, r.score),)))
        for rank, r in enumerate(results, start=1)
    ]
