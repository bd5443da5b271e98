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
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from nexusbrain.config import LexicalConfig, Profile
from nexusbrain.dates import is_time_token, token_time, without_dates
from nexusbrain.embeddings import Embedder
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
from nexusbrain.retrieval.confidence import OVERLAP_DEPTH, confidence, held_weight
from nexusbrain.retrieval.copies import Distinct, distinct
from nexusbrain.retrieval.fusion import Fused, rrf, zscore
from nexusbrain.retrieval.hits import build_hits
from nexusbrain.retrieval.modes import SearchConfig, fusion_of
from nexusbrain.retrieval.prf import rm3_terms, rocchio
from nexusbrain.retrieval.terms import query_terms
from nexusbrain.retrieval.turns import Turns
from nexusbrain.storage.analyzer import query_tokens, tokens
from nexusbrain.storage.base import DenseIndex, DocumentStore, LexicalHits, LexicalIndex


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
    ) -> None:
        """`profile`: the embedding profile, whose model the confidence reads; `at_once`: how
        many searches rank at the same time (config.SEARCHES_AT_ONCE)."""
        self.store = store
        self.profile = profile
        self.lexical = lexical
        self.config = config
        self.embedder = embedder
        self.index = index
        self._at_once = at_once
        self._turns = Turns(at_once)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def close(self) -> None:
        """Stop the worker threads (each holds its own database connection)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _workers(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                # one BM25 thread per search that may run at once; each keeps one
                # connection to the database open
                self._pool = ThreadPoolExecutor(self._at_once, "nexusbrain-bm25")
            return self._pool

    def search(
        self,
        query: str,
        k: int,
        filters: SearchFilters,
        config: SearchConfig,
        *,
        best_per_document: bool = False,
    ) -> list[Hit]:
        return self.answer(query, k, filters, config, best_per_document=best_per_document).hits

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
        chunks, texts = self._shown(kept, k, config.distinct)
        sure = self._confidence(query, ranked, kept, chunks)
        shown = [] if sure is not None and sure.weak and config.withhold_weak else texts.kept
        positions = _Positions(ranked.lists)
        said = _said_on(ranked, shown, chunks)
        traced = [
            _traced(f, i, ranked, positions, config.fusion, sure, said.get(f.chunk_id))
            for i, f in enumerate(shown, 1)
        ]
        return Answer(build_hits(traced, chunks, texts.copies), ranked, kept, sure, texts)

    def _shown(
        self, kept: list[Fused], k: int, collapse: bool
    ) -> tuple[dict[int, tuple[Chunk, DocumentHead]], Distinct]:
        """The chunks a search reads, and the hits it shows: the first k, or with `collapse`
        the first k distinct texts, read a window at a time (twice k or _FIRST_READ, then
        doubling) until k are found or the candidates end. The best chunk is always read
        (the confidence's)."""
        if not collapse:
            first = self.store.fetch_chunks([f.chunk_id for f in kept[: max(k, 1)]])
            return first, Distinct(kept[:k], {f.chunk_id: [] for f in kept[:k]})
        chunks: dict[int, tuple[Chunk, DocumentHead]] = {}
        read, window = 0, max(2 * k, _FIRST_READ)
        while True:
            chunks.update(self.store.fetch_chunks([f.chunk_id for f in kept[read : read + window]]))
            read, window = read + window, window * 2
            texts = distinct(kept[:read], chunks, k)
            if len(texts.kept) >= k or read >= len(kept):
                return chunks, texts

    def _confidence(
        self,
        query: str,
        ranked: Ranked,
        kept: list[Fused],
        chunks: Mapping[int, tuple[Chunk, DocumentHead]],
    ) -> Confidence | None:
        """From the evidence the ranking holds (retrieval/confidence.py): no database read
        beyond the chunks the search shows."""
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
        probes: dict[str, np.ndarray] = {}  # the centred query vector of each dense list
        index = self.index if config.dense and self.embedder is not None else None
        if index is None:
            found = self._bm25(terms, depth, filters, best_per_document)
        else:
            assert self.embedder is not None
            # SQLite lets go of the GIL while it reads postings (and numpy while it scores),
            # so BM25 runs on a worker thread while this one embeds the query and searches
            # the vectors.
            lexical = self._workers().submit(self._bm25, terms, depth, filters, best_per_document)
            probes["dense"] = index.centre(self.embedder.encode([query])[0])
            dense = index.search(
                probes["dense"], depth, filters, best_per_document=best_per_document
            )
            found = lexical.result()
            lists["bm25"] = found.scored
            lists["dense"] = dense
        lists.setdefault("bm25", found.scored)
        expansion: list[str] = []
        worded = {"bm25": terms}  # the words of each lexical list
        feedback = lists["bm25"][: config.prf_config.feedback_docs] if config.prf else []
        if feedback:
            expansion = self._expansion_terms(feedback, terms, config)
            if expansion:
                worded["bm25_prf"] = terms + expansion
                prf = self._bm25(terms + expansion, depth, filters, best_per_document)
                lists["bm25_prf"] = prf.scored
            if index is not None:
                probes["dense_prf"] = self._rocchio(probes["dense"], feedback, config)
                lists["dense_prf"] = index.search(
                    probes["dense_prf"], depth, filters, best_per_document=best_per_document
                )
        fused, cosine = self._fuse(lists, probes, worded, config, depth)
        return Ranked(lists, fused, tuple(expansion), found.weights, found.rarest, cosine)

    def _bm25(
        self, terms: Sequence[str], depth: int, filters: SearchFilters, best: bool
    ) -> LexicalHits:
        return self.lexical.search(terms, depth, filters, best_per_document=best)

    def _expansion_terms(
        self, feedback: list[Scored], terms: list[str], config: SearchConfig
    ) -> list[str]:
        if config.prf_config.expansion_terms <= 0:
            return []
        found = self.store.fetch_chunks([f.chunk_id for f in feedback])
        texts = [found[f.chunk_id][0].text for f in feedback if f.chunk_id in found]
        chosen = rm3_terms(texts, [1.0] * len(texts), terms, config.prf_config.expansion_terms)
        return [term for term, _ in chosen]

    def _rocchio(
        self, vector: np.ndarray, feedback: list[Scored], config: SearchConfig
    ) -> np.ndarray:
        assert self.index is not None
        rows = self.index.vectors_of([f.chunk_id for f in feedback])
        matrix = np.array([rows[f.chunk_id] for f in feedback if f.chunk_id in rows])
        prf = config.prf_config
        return rocchio(vector, matrix, [1.0] * len(matrix), prf.rocchio_alpha, prf.rocchio_beta)

    def _fuse(
        self,
        lists: Mapping[str, list[Scored]],
        probes: Mapping[str, np.ndarray],
        worded: Mapping[str, list[str]],
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
        dense: dict[int, float] = {}
        profile = fusion_of(self.profile)
        weights = profile.weights if config.weights is None else config.weights
        if config.fusion == "rrf":
            ids = {name: [key(s) for s in results] for name, results in lists.items()}
            fused = rrf(ids, weights, config.rrf_k)
        else:
            scored = {name: [(key(s), s.score) for s in found] for name, found in lists.items()}
            extra = self._dense_scores(lists, probes, per_document)
            dense = extra.get("dense", {})
            extra.update(self._lexical_scores(lists, worded, per_document))
            floors = profile.min_z if config.min_z is None else config.min_z
            fused = zscore(scored, weights, extra, positions=depth, min_z=floors)
        cosine = _first_score(lists.get("dense"), fused, key, dense)
        if not per_document:
            return fused, cosine
        shown: dict[int, tuple[int, str, int]] = {}  # document -> (rank, list name, chunk)
        for name, results in lists.items():
            for rank, item in enumerate(results, start=1):
                best = shown.get(_doc(item))
                if best is None or (rank, name) < best[:2]:
                    shown[_doc(item)] = (rank, name, item.chunk_id)
        return [f.shown_as(shown[f.chunk_id][2]) for f in fused], cosine

    def _dense_scores(
        self,
        lists: Mapping[str, list[Scored]],
        probes: Mapping[str, np.ndarray],
        per_document: bool,
    ) -> dict[str, dict[int, float]]:
        """For z-score fusion: each dense list's score for the candidates other lists found
        (a dense retriever can score any chunk; for documents, their best chunk)."""
        if self.index is None or not probes:
            return {}
        chunks = sorted({s.chunk_id for results in lists.values() for s in results})
        return {
            name: self.index.scores(probe, chunks, per_document=per_document)
            for name, probe in probes.items()
        }

    def _lexical_scores(
        self,
        lists: Mapping[str, list[Scored]],
        worded: Mapping[str, list[str]],
        per_document: bool,
    ) -> dict[str, dict[int, float]]:
        """For z-score fusion: each lexical list's real BM25 score for the candidates it did
        not rank. Without it a candidate only the dense list found would take BM25's lowest
        listed score, as if it held the query's words as well as BM25's 100th hit does, and
        push BM25's own lower ranks out of the fused top."""
        key = _doc if per_document else _chunk
        out: dict[str, dict[int, float]] = {}
        for name, terms in worded.items():
            listed = {key(s) for s in lists.get(name, [])}
            missing = sorted(
                {s.chunk_id for results in lists.values() for s in results if key(s) not in listed}
            )
            if missing:
                out[name] = self.lexical.scores(terms, missing, per_document=per_document)
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
    )
    return fused.chunk_id, fused.score, trace
