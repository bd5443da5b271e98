"""Retrievers: the ranked lists a search fuses, each behind one small protocol.

A retriever turns a query into a probe (the lexical one: its terms; a dense one: the
query's vector, moved into its index's space), ranks chunks for a probe, and scores any
other chunk for it (z-score fusion gives every candidate each list's evidence). The pipeline
(retrieval/pipeline.py) holds its retrievers by list name; a pseudo-relevance-feedback list
is the same retriever asked with another probe (more terms; the Rocchio vector). A user's
model is a `Dense` retriever over its own vectors: nothing else changes for it.

The lists' names in words are said here once (`LABELS`); every interface reads them from the
answers (views.search's `lists`)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from threading import Lock
from typing import Protocol, TypeVar

import numpy as np

from nexusbrain.embeddings import Embedder
from nexusbrain.embeddings.base import QueryEncoder
from nexusbrain.records import Scored, SearchFilters
from nexusbrain.storage.base import DenseIndex, LexicalIndex, Vector

# The lists a hit can come from, in words a reader knows.
LABELS: Mapping[str, str] = {
    "bm25": "keywords",
    "dense": "meaning",
    "bm25_prf": "keywords, expanded",
    "dense_prf": "meaning, expanded",
}


def label(name: str) -> str:
    """A list's name in words (its own name when it has none)."""
    return LABELS.get(name, name)


P_contra = TypeVar("P_contra", contravariant=True)


@dataclass(frozen=True, slots=True)
class Found:
    """A retriever's list, best first. A lexical list also gives each query token's weight
    (idf × (1 + ln q)) and `rarest`, the weight of a token no chunk holds: what the
    confidence reads. `seq`: the chunk change a lexical list's read saw (LexicalHits.seq)."""

    scored: list[Scored]
    weights: Mapping[str, float] = field(default_factory=dict)
    rarest: float = 0.0
    seq: int | None = None


class Retriever(Protocol[P_contra]):
    """A ranked list for a probe, and the score it gives any chunk (or, per document, each
    document's best chunk, keyed by document id)."""

    def search(
        self, probe: P_contra, depth: int, filters: SearchFilters, best_per_document: bool
    ) -> Found: ...

    def scores(
        self, probe: P_contra, chunk_ids: Sequence[int], per_document: bool
    ) -> dict[int, float]: ...


class Lexical:
    """BM25 over the backend's lexical index; its probe is the query's terms."""

    def __init__(self, index: LexicalIndex) -> None:
        self.index = index

    def search(
        self, probe: Sequence[str], depth: int, filters: SearchFilters, best_per_document: bool
    ) -> Found:
        found = self.index.search(probe, depth, filters, best_per_document=best_per_document)
        return Found(found.scored, found.weights, found.rarest, found.seq)

    def scores(
        self, probe: Sequence[str], chunk_ids: Sequence[int], per_document: bool
    ) -> dict[int, float]:
        return self.index.scores(probe, chunk_ids, per_document=per_document)


QUERY_CACHE = 1024  # query vectors kept, most recently used first


class Dense:
    """Cosines over one model's dense index; its probe is the query's vector, centred as the
    index centres. Query vectors are cached by text (a repeated query, or one a provider
    answered before, makes no round trip). A provider that fails or is too slow raises
    `errors.ModelUnavailable` from `probe`."""

    def __init__(self, embedder: Embedder, index: DenseIndex, *, cache: int = QUERY_CACHE) -> None:
        self.embedder = embedder
        self.index = index
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._size = cache
        self._lock = Lock()

    def centred(self, vector: Vector, at: int | None = None) -> Vector:
        """The probe: the query's vector, centred. The start of every dense search (it also
        brings the index up to date once, so the searches and scores that follow see the same
        rows); `at`, the change the search's BM25 read saw, spares the index a read of the
        change log when it is there already (DenseIndex.centre)."""
        return self.index.centre(vector, at)

    def vector(self, query: str) -> Vector:
        with self._lock:
            found = self._cache.get(query)
            if found is not None:
                self._cache.move_to_end(query)
                return found
        if isinstance(self.embedder, QueryEncoder):
            vector = self.embedder.encode_query(query)
        else:
            vector = self.embedder.encode([query])[0]
        with self._lock:
            self._cache[query] = vector
            if len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return vector

    def search(
        self, probe: Vector, depth: int, filters: SearchFilters, best_per_document: bool
    ) -> Found:
        return Found(self.index.search(probe, depth, filters, best_per_document=best_per_document))

    def scores(
        self, probe: Vector, chunk_ids: Sequence[int], per_document: bool
    ) -> dict[int, float]:
        return self.index.scores(probe, chunk_ids, per_document=per_document)

    def feedback(self, chunk_ids: Sequence[int]) -> np.ndarray:
        """The centred vectors of these chunks (those the index holds), in order."""
        rows = self.index.vectors_of(chunk_ids)
        return np.array([rows[c] for c in chunk_ids if c in rows])
