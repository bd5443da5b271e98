"""The hybrid search pipeline: BM25 and dense lists, optional PRF lists, fusion, explained hits.

query ─┬─ bm25 ─────────────────┬──(prf on)──> BM25's top chunks ─┬─ bm25 + RM3 terms ─┐
       └─ dense (centred query) ┤                                 └─ Rocchio vector ───┤
       bm25, dense, bm25_prf, dense_prf ───────────── z-score fusion or RRF ──> hits

Z-score fusion scores every candidate in every dense list (a dense retriever can score any
chunk), so a BM25 hit that the dense list did not rank still gets its dense evidence. BM25
runs on a worker thread beside the dense search.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from nexusbrain.config import LexicalConfig, Profile
from nexusbrain.dates import is_time_token, token_time, without_dates
from nexusbrain.embeddings import Embedder
from nexusbrain.errors import ModelUnavailable
from nexusbrain.records import (
    Chunk,
    Confidence,
    DocumentHead,
    Evidence,
    Hit,
    RetrieverScore,
    Scored,
    SearchFilters,
    Trace,
)
from nexusbrain.rerankers import Reranker
from nexusbrain.retrieval.confidence import OVERLAP_DEPTH, confidence, held_weight
from nexusbrain.retrieval.copies import Distinct, distinct
from nexusbrain.retrieval.fusion import Fused, rrf, zscore
from nexusbrain.retrieval.hits import build_hits
from nexusbrain.retrieval.modes import SearchConfig, fusion_of
from nexusbrain.retrieval.prf import rm3_terms, rocchio
from nexusbrain.retrieval.rerank import Reranked, calibrated, rerank
from nexusbrain.retrieval.retrievers import Dense, Lexical, Retriever
from nexusbrain.retrieval.terms import query_terms
from nexusbrain.retrieval.turns import Turns
from nexusbrain.retrieval.vectors import embed_text
from nexusbrain.storage.analyzer import query_tokens, tokens
from nexusbrain.storage.base import DenseIndex, DocumentStore, LexicalIndex


@dataclass(frozen=True, slots=True)
class Ranked:
    """The fused ranking before hits are built: what `explain` inspects too. `weights` are
    the query tokens' BM25 weights (idf × query weight), `rarest` the idf of a word no chunk
    holds."""

    lists: Mapping[str, list[Scored]]
    fused: list[Fused]
    prf_terms: tuple[str, ...]
    weights: Mapping[str, float]
    rarest: float
    cosine: float | None = None  # the dense score of the fused first (None: no dense list)
    notes: tuple[str, ...] = ()  # what went otherwise than asked (a model that did not answer)


@dataclass(frozen=True, slots=True)
class Answer:
    """A search's hits, the fused ranking they came from, what of it passed the mode's
    score floor (the hits are its first k texts, unless the mode withholds a weak result
    set), and the result set's confidence (None when nothing passed)."""

    hits: list[Hit]
    ranked: Ranked
    kept: list[Fused]
    confidence: Confidence | None
    texts: Distinct  # the hits' fused entries, and the copies each stands for


class Searcher:
    """The pipeline over one backend's parts: its documents, lexical index and dense index."""

    def __init__(
        self,
        store: DocumentStore,
        lexical: LexicalIndex,
        config: LexicalConfig,
        embedder: Embedder | None,
        index: DenseIndex | None,
        *,
        profile: Profile,
        at_once: int = 1,
        reranker: Reranker | None = None,
        rerank_budget: float | None = None,
    ) -> None:
        """`profile`: the embedding profile, whose model the confidence reads; `at_once`: how
        many searches rank at the same time (config.SEARCHES_AT_ONCE); `reranker`: re-orders
        the fused top of every search (retrieval/rerank.py), within `rerank_budget` seconds
        when given, else the mode's."""
        self.store = store
        self.profile = profile
        self.lexical = Lexical(lexical)
        self.config = config
        self.dense = Dense(embedder, index) if embedder is not None and index is not None else None
        self.reranker = reranker
        self.rerank_budget = rerank_budget
        self._at_once = at_once
        self._turns = Turns(at_once)
        self._pools: dict[str, ThreadPoolExecutor] = {}
        self._pool_lock = threading.Lock()

    def close(self) -> None:
        """Stop the worker threads (each BM25 one holds its own database connection)."""
        with self._pool_lock:
            pools, self._pools = self._pools, {}
        for pool in pools.values():
            pool.shutdown(wait=True)

    def use_dense(self, embedder: Embedder, index: DenseIndex, profile: Profile) -> None:
        """Search with this model from now on (a model switch: brain/models.py); the
        confidence reads its profile's model."""
        self.dense = Dense(embedder, index)
        self.profile = profile

    def _workers(self, kind: str = "bm25") -> ThreadPoolExecutor:
        """One thread per search that may run at once, for BM25 (each keeps one connection
        to the database open) or the reranker (whose budget the search waits out)."""
        with self._pool_lock:
            if kind not in self._pools:
                self._pools[kind] = ThreadPoolExecutor(self._at_once, f"nexusbrain-{kind}")
            return self._pools[kind]

    def answer(
        self,
        query: str,
        k: int,
        filters: SearchFilters,
        config: SearchConfig,
        *,
        best_per_document: bool = False,
    ) -> Answer:
        """The hits, and the ranking they were cut from (what `explain` reads). A search
        waits here while `at_once` others rank."""
        with self._turns:
            return self._answer(query, k, filters, config, best_per_document)

    def _answer(
        self,
        query: str,
        k: int,
        filters: SearchFilters,
        config: SearchConfig,
        best_per_document: bool,
    ) -> Answer:
        ranked = self.rank(query, max(k, config.depth), filters, config, best_per_document)
        kept = _above_floor(ranked.fused, config.min_relative_score)
        chunks: dict[int, tuple[Chunk, DocumentHead]] = {}
        reranked = None
        if self.reranker is not None and config.rerank.depth > 0 and kept:
            top = kept[: config.rerank.depth]
            chunks = self.store.fetch_chunks([f.chunk_id for f in top])
            reranked = self._rerank(query, top, chunks, config)
            kept = reranked.order + kept[len(top) :]
        chunks, texts = self._shown(kept, k, config.distinct, chunks)
        sure = self._confidence(query, ranked, kept, chunks, reranked)
        shown = [] if sure is not None and sure.weak and config.withhold_weak else texts.kept
        positions = _Positions(ranked.lists)
        said = _said_on(ranked, shown, chunks)
        if reranked is not None and reranked.note:
            ranked = replace(ranked, notes=(*ranked.notes, reranked.note))
        changes = reranked.changes if reranked is not None else {}
        traced = [
            _traced(f, i, ranked, positions, config.fusion, sure, said.get(f.chunk_id))
            for i, f in enumerate(shown, 1)
        ]
        if changes:
            traced = [(c, s, replace(t, rerank=changes.get(c))) for c, s, t in traced]
        return Answer(build_hits(traced, chunks, texts.copies), ranked, kept, sure, texts)

    def _rerank(
        self,
        query: str,
        top: list[Fused],
        chunks: Mapping[int, tuple[Chunk, DocumentHead]],
        config: SearchConfig,
    ) -> Reranked:
        assert self.reranker is not None
        texts = {c: embed_text(chunk.text, chunk.heading_path) for c, (chunk, _) in chunks.items()}
        pool = self._workers("rerank")
        chosen = config.rerank
        if self.rerank_budget is not None:
            chosen = replace(chosen, budget=self.rerank_budget)
        return rerank(self.reranker, query, top, texts, chosen, pool)

    def _shown(
        self,
        kept: list[Fused],
        k: int,
        collapse: bool,
        known: Mapping[int, tuple[Chunk, DocumentHead]],
    ) -> tuple[dict[int, tuple[Chunk, DocumentHead]], Distinct]:
        """The chunks a search reads (beside those `known` already), and the hits it shows:
        the first k, or with `collapse` the first k distinct texts, read a window at a time
        (twice k or _FIRST_READ, then doubling) until k are found or the candidates end. The
        best chunk is always read (the confidence's)."""
        chunks = dict(known)
        if not collapse:
            chunks.update(self._read(kept[: max(k, 1)], chunks))
            return chunks, Distinct(kept[:k], {f.chunk_id: [] for f in kept[:k]})
        read, window = 0, max(2 * k, _FIRST_READ)
        while True:
            chunks.update(self._read(kept[read : read + window], chunks))
            read, window = read + window, window * 2
            texts = distinct(kept[:read], chunks, k)
            if len(texts.kept) >= k or read >= len(kept):
                return chunks, texts

    def _read(
        self, fused: list[Fused], known: Mapping[int, tuple[Chunk, DocumentHead]]
    ) -> dict[int, tuple[Chunk, DocumentHead]]:
        """The chunks of these candidates that are not `known` already."""
        return self.store.fetch_chunks([f.chunk_id for f in fused if f.chunk_id not in known])

    def _confidence(
        self,
        query: str,
        ranked: Ranked,
        kept: list[Fused],
        chunks: Mapping[int, tuple[Chunk, DocumentHead]],
        reranked: Reranked | None,
    ) -> Confidence | None:
        """From the evidence the ranking holds (retrieval/confidence.py): no database read
        beyond the chunks the search shows. A reranker's score counts where the confidence
        models were fitted for its scale (`calibrated`)."""
        if not kept:
            return None
        found = chunks.get(kept[0].chunk_id)
        coverage, matched = held_weight(
            self._confidence_words(query, ranked), ranked.rarest, _tokens_of(found)
        )
        best = ranked.fused[0]
        ranks = {c.retriever: c.rank for c in best.contributions}
        lexical = ranked.lists.get("bm25", [])
        dense = ranked.lists.get("dense") if ranked.cosine is not None else None
        evidence = Evidence(
            coverage=coverage,
            matched=matched,
            fused_margin=best.score - (ranked.fused[1].score if len(ranked.fused) > 1 else 0.0),
            lexical_margin=_relative_margin(lexical),
            lexical_rank=ranks.get("bm25"),
            cosine=ranked.cosine,
            dense_margin=None if dense is None else _margin(dense),
            dense_rank=ranks.get("dense"),
            overlap=None if dense is None else _overlap(lexical, dense),
            rerank=reranked.best
            if reranked is not None and self.reranker is not None and calibrated(self.reranker)
            else None,
        )
        return confidence(evidence, self.profile)

    def _confidence_words(self, query: str, ranked: Ranked) -> Mapping[str, float]:
        """The query tokens the confidence weighs. A day or month the query names is left
        out, its words and its token: the turns said that day rarely write it ("what did
        Nate cook on 9 November, 2022?" is answered by a turn that holds "Nate" and
        "cooking"), and no note holds the token. A query that is nothing but a date is
        judged by its words."""
        words = ranked.weights
        if any(map(is_time_token, words)):
            rest = set(query_tokens(self._terms(without_dates(query))))
            words = {t: w for t, w in words.items() if t in rest} or {
                t: w for t, w in words.items() if not is_time_token(t)
            }
        return words

    def _terms(self, query: str) -> list[str]:
        return query_terms(
            query,
            drop_stopwords=self.config.drop_stopwords,
            extended_stopwords=self.config.extended_stopwords,
        )

    def rank(
        self,
        query: str,
        depth: int,
        filters: SearchFilters,
        config: SearchConfig,
        best_per_document: bool = False,
    ) -> Ranked:
        terms = self._terms(query)
        lists: dict[str, list[Scored]] = {}
        probes: dict[str, Any] = {"bm25": terms}  # what each list's retriever was asked with
        notes: list[str] = []
        dense = self.dense if config.dense else None
        if dense is None:
            found = self.lexical.search(terms, depth, filters, best_per_document)
        else:
            # SQLite lets go of the GIL while it reads postings (and numpy while it scores),
            # so BM25 runs on a worker thread while this one embeds the query. The dense
            # index then catches up to the change BM25's read saw: one read of the change
            # log a search.
            lexical = self._workers().submit(
                self.lexical.search, terms, depth, filters, best_per_document
            )
            try:
                vector = dense.vector(query)
            except ModelUnavailable as exc:  # the provider is down or slow: BM25 alone
                notes.append(f"{exc.message}; BM25 alone ranked this search")
                dense = None
            found = lexical.result()
            lists["bm25"] = found.scored
            if dense is not None:
                probes["dense"] = dense.centred(vector, found.seq)
                found_dense = dense.search(probes["dense"], depth, filters, best_per_document)
                lists["dense"] = found_dense.scored
        lists.setdefault("bm25", found.scored)
        expansion: list[str] = []
        feedback = lists["bm25"][: config.prf_config.feedback_docs] if config.prf else []
        if feedback:
            expansion = self._expansion_terms(feedback, terms, config)
            if expansion:
                probes["bm25_prf"] = terms + expansion
                prf = self.lexical.search(probes["bm25_prf"], depth, filters, best_per_document)
                lists["bm25_prf"] = prf.scored
            if dense is not None:
                probes["dense_prf"] = self._rocchio(dense, probes["dense"], feedback, config)
                lists["dense_prf"] = dense.search(
                    probes["dense_prf"], depth, filters, best_per_document
                ).scored
        fused, cosine = self._fuse(lists, probes, config, depth)
        return Ranked(
            lists, fused, tuple(expansion), found.weights, found.rarest, cosine, tuple(notes)
        )

    def _retriever(self, name: str) -> Retriever[Any]:
        """The retriever of a list: PRF lists are their retriever asked with another probe."""
        if name.startswith("bm25"):
            return self.lexical
        assert self.dense is not None
        return self.dense

    def _expansion_terms(
        self, feedback: list[Scored], terms: list[str], config: SearchConfig
    ) -> list[str]:
        if config.prf_config.expansion_terms <= 0:
            return []
        found = self.store.fetch_chunks([f.chunk_id for f in feedback])
        texts = [found[f.chunk_id][0].text for f in feedback if f.chunk_id in found]
        chosen = rm3_terms(texts, [1.0] * len(texts), terms, config.prf_config.expansion_terms)
        return [term for term, _ in chosen]

    @staticmethod
    def _rocchio(
        dense: Dense, vector: np.ndarray, feedback: list[Scored], config: SearchConfig
    ) -> np.ndarray:
        matrix = dense.feedback([f.chunk_id for f in feedback])
        prf = config.prf_config
        return rocchio(vector, matrix, [1.0] * len(matrix), prf.rocchio_alpha, prf.rocchio_beta)

    def _fuse(
        self,
        lists: Mapping[str, list[Scored]],
        probes: Mapping[str, Any],
        config: SearchConfig,
        depth: int,
    ) -> tuple[list[Fused], float | None]:
        """RRF or z-score fusion over chunk ids; with best-per-document lists, over document
        ids, so that a document found through different chunks by different retrievers gets
        one fused score (shown through the chunk of its best list position). Also the dense
        list's score of the fused first, for the confidence (None without a dense list; 0
        when RRF fused a first that the dense list did not rank, which z-score fusion scores)."""
        per_document = _per_document(lists)
        key = _doc if per_document else _chunk
        extra: dict[str, dict[int, float]] = {}
        profile = fusion_of(self.profile)
        weights = profile.weights if config.weights is None else config.weights
        if config.fusion == "rrf":
            ids = {name: [key(s) for s in results] for name, results in lists.items()}
            fused = rrf(ids, weights, config.rrf_k)
        else:
            scored = {name: [(key(s), s.score) for s in found] for name, found in lists.items()}
            extra = self._unranked_scores(lists, probes, per_document)
            floors = profile.min_z if config.min_z is None else config.min_z
            fused = zscore(scored, weights, extra, positions=depth, min_z=floors)
        cosine = _first_score(lists.get("dense"), fused, key, extra.get("dense", {}))
        if not per_document:
            return fused, cosine
        shown: dict[int, tuple[int, str, int]] = {}  # document -> (rank, list name, chunk)
        for name, results in lists.items():
            for rank, item in enumerate(results, start=1):
                best = shown.get(_doc(item))
                if best is None or (rank, name) < best[:2]:
                    shown[_doc(item)] = (rank, name, item.chunk_id)
        return [f.shown_as(shown[f.chunk_id][2]) for f in fused], cosine

    def _unranked_scores(
        self,
        lists: Mapping[str, list[Scored]],
        probes: Mapping[str, Any],
        per_document: bool,
    ) -> dict[str, dict[int, float]]:
        """For z-score fusion: each list's retriever's score for the candidates other lists
        found and it did not rank (for documents, their best chunk). Without it, a candidate
        only the dense list found would take BM25's lowest listed score, as if it held the
        query's words as well as BM25's 100th hit does, and push BM25's own lower ranks out of
        the fused top; and a BM25 hit the dense list did not rank would lose its dense
        evidence."""
        key = _doc if per_document else _chunk
        out: dict[str, dict[int, float]] = {}
        for name, found in lists.items():
            listed = {key(s) for s in found}
            missing = sorted(
                {s.chunk_id for results in lists.values() for s in results if key(s) not in listed}
            )
            if missing:
                out[name] = self._retriever(name).scores(probes[name], missing, per_document)
        return out


def _per_document(lists: Mapping[str, list[Scored]]) -> bool:
    entries = [s for results in lists.values() for s in results]
    return bool(entries) and all(s.document_id is not None for s in entries)


def _chunk(scored: Scored) -> int:
    return scored.chunk_id


def _doc(scored: Scored) -> int:
    assert scored.document_id is not None
    return scored.document_id


def _first_score(
    found: list[Scored] | None,
    fused: list[Fused],
    key: Callable[[Scored], int],
    scored: Mapping[int, float],
) -> float | None:
    """A list's score of the fused first (its fusion key): where the list ranked it, else
    what fusion scored it by (0 when nothing did). None when the list did not run."""
    if found is None:
        return None
    if not fused:
        return 0.0
    first = fused[0].chunk_id
    ranked = next((s.score for s in found if key(s) == first), None)
    return ranked if ranked is not None else scored.get(first, 0.0)


def _tokens_of(found: tuple[Chunk, DocumentHead] | None) -> set[str]:
    """The tokens a chunk is indexed with: its text, heading path and context."""
    held: set[str] = set()
    if found is not None:
        chunk = found[0]
        for text in (chunk.text, " ".join(chunk.heading_path), chunk.context):
            held.update(tokens(text))
    return held


def _margin(found: list[Scored]) -> float:
    """A list's first score minus its second (the first alone when it is alone)."""
    if not found:
        return 0.0
    return found[0].score - (found[1].score if len(found) > 1 else 0.0)


def _relative_margin(found: list[Scored]) -> float:
    """`_margin` over the first score (BM25's scale grows with the query's length)."""
    return _margin(found) / found[0].score if found and found[0].score > 0 else 0.0


def _overlap(first: list[Scored], second: list[Scored]) -> int:
    """How many of the first list's top hits the second list's top hits hold (documents
    when the lists are per document)."""
    first, second = first[:OVERLAP_DEPTH], second[:OVERLAP_DEPTH]
    key = _doc if all(s.document_id is not None for s in first + second) else _chunk
    return len({key(s) for s in first} & {key(s) for s in second})


_FIRST_READ = 10  # candidates read at least, so that a hit's copies are listed when k is 1


def _above_floor(fused: list[Fused], floor: float) -> list[Fused]:
    if floor <= 0 or not fused:
        return fused
    best = fused[0].score
    return [f for f in fused if f.score >= floor * best]


class _Positions:
    """Where each chunk and each document first appears in each list (1-based), so that a
    hit's trace is built by lookups instead of scanning every list."""

    def __init__(self, lists: Mapping[str, list[Scored]]) -> None:
        self.document_of: dict[int, int] = {}
        self.by_list: dict[str, tuple[dict[int, int], dict[int, int]]] = {}
        for name, results in lists.items():
            chunks: dict[int, int] = {}
            documents: dict[int, int] = {}
            for position, scored in enumerate(results, start=1):
                chunks.setdefault(scored.chunk_id, position)
                if scored.document_id is not None:
                    documents.setdefault(scored.document_id, position)
                    self.document_of.setdefault(scored.chunk_id, scored.document_id)
            self.by_list[name] = (chunks, documents)

    def first(self, name: str, chunk_id: int, document_id: int | None) -> int | None:
        """The first position in list `name` of the chunk or (when known) of its document."""
        chunks, documents = self.by_list[name]
        by_document = documents.get(document_id) if document_id is not None else None
        return min((p for p in (chunks.get(chunk_id), by_document) if p is not None), default=None)


def _said_on(
    ranked: Ranked, shown: list[Fused], chunks: Mapping[int, tuple[Chunk, DocumentHead]]
) -> dict[int, str]:
    """The shown hits said on a day or in a month that the query names, and that time."""
    named = [t for t in ranked.weights if is_time_token(t)]
    if not named:
        return {}
    said: dict[int, str] = {}
    for fused in shown:
        found = chunks.get(fused.chunk_id)
        held = set(found[0].context.split()) if found is not None else set()
        token = next((t for t in named if t in held), None)
        if token is not None:
            said[fused.chunk_id] = token_time(token)
    return said


def _traced(
    fused: Fused,
    rank: int,
    ranked: Ranked,
    positions: _Positions,
    method: str,
    sure: Confidence | None,
    day: str | None,
) -> tuple[int, float, Trace]:
    retrievers = []
    document = positions.document_of.get(fused.chunk_id)
    for name, results in ranked.lists.items():
        position = positions.first(name, fused.chunk_id, document)
        if position is not None:
            retrievers.append(RetrieverScore(name, position, results[position - 1].score))
    trace = Trace(
        retrievers=tuple(retrievers),
        fusion=fused.contributions,
        fusion_method=method,
        fused_rank=rank,
        prf_terms=ranked.prf_terms,
        confidence=sure,
        day=day,
        notes=ranked.notes,
    )
    return fused.chunk_id, fused.score, trace
