"""BM25 from postings, in numpy, for every backend: the formula (pure functions) and a scorer
that caches what a backend's postings give it (`PostingsSource`).

The formula, per query token t with weight w_t in a chunk of length D (tokens over all its
columns), over N chunks of average length avgdl, n_t of which hold t:

    score = Σ_t w_t · idf_t · f · (k1 + 1) / (f + k1 · (1 − b + b · D / avgdl))
    idf_t = ln(1 + (N − n_t + 0.5) / (n_t + 0.5))            (Lucene's: never negative)
    f     = Σ_columns weight_column · tf_column                (text 1, heading 0.5, context 0.3)
    w_t   = 1 + ln(times t occurs in the query)

A word said twice in a long question counts for more than a word said once, but not twice as
much (docs/tuning.md has the measurements that chose this over FTS5's own bm25()).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from nexusbrain.config import LexicalConfig
from nexusbrain.records import Scored, SearchFilters
from nexusbrain.storage.analyzer import query_tokens
from nexusbrain.storage.base import LexicalHits

Ids = NDArray[np.int64]
Floats = NDArray[np.float64]
# the rows holding a token (int32 where every id fits, so that the cache holds a third more),
# and its share of each row's score
Shares = tuple[NDArray[np.int32] | Ids, Floats]
_ID_BATCH = 900
_INT32 = 2**31
# A query's postings are summed over an array of every row once they number more than
# one in this many rows (_summed); fewer are sorted.
_DENSE_FROM = 32


def idf(n_rows: int, holding: int) -> float:
    return math.log(1.0 + (n_rows - holding + 0.5) / (holding + 0.5))


def query_weight(count: int) -> float:
    return 1.0 + math.log(count)


def shares(
    freq: Floats, sizes: Floats, idf_value: float, avgdl: float, k1: float, b: float
) -> Floats:
    """A token's BM25 share of each row holding it, from its weighted frequency there."""
    out: Floats = idf_value * (freq * (k1 + 1.0)) / (freq + k1 * (1.0 - b + b * sizes / avgdl))
    return out


class PostingsRead(Protocol):
    """One consistent read of a backend's lexical index (a read transaction)."""

    @property
    def seq(self) -> int:
        """The chunk change this read sees the index up to."""
        ...

    @property
    def cacheable(self) -> bool:
        """False when the read is inside a write that may yet roll back: nothing it shows may
        be kept past it."""
        ...

    def totals(self) -> tuple[int, int]:
        """(chunks, tokens over every column of every chunk)."""
        ...

    def rows(self, chunk_ids: Sequence[int] | None) -> tuple[Ids, Ids, Ids]:
        """(chunk ids, their lengths in tokens, their documents) for these chunks, or for
        every chunk."""
        ...

    def added_since(self, seq: int) -> list[int]:
        """Chunk ids added (or re-used) since that change."""
        ...

    def postings(self, token: str) -> tuple[Ids, NDArray[np.float64]]:
        """The chunk ids holding `token`, ascending, and its frequency in each of the three
        columns (text, heading path, context): shape (rows, 3)."""
        ...

    def matching(self, filters: SearchFilters) -> Ids:
        """Ids of the live chunks that pass the filters."""
        ...


@dataclass(frozen=True, slots=True)
class _Rows:
    """Every chunk's length in tokens and its document, by chunk id (0 where no chunk is)."""

    sizes: NDArray[np.int32]
    documents: Ids

    def placed(self, ids: Ids, sizes: Ids, documents: Ids) -> _Rows:
        """These rows set, in these arrays (grown, with room to spare, when an id is past
        their end). Only new or re-used ids change, so a search reading them meanwhile is
        safe."""
        if not len(ids):
            return self
        need = int(ids.max()) + 1
        size_of, document_of = self.sizes, self.documents
        if need > len(size_of):
            room = max(need, len(size_of) + len(size_of) // 4)
            size_of = np.concatenate([size_of, np.zeros(room - len(size_of), np.int32)])
            document_of = np.concatenate([document_of, np.zeros(room - len(document_of), np.int64)])
        size_of[ids] = sizes
        document_of[ids] = documents
        return _Rows(size_of, document_of)

    def copy(self) -> _Rows:
        return _Rows(self.sizes.copy(), self.documents.copy())


_NO_ROWS = _Rows(np.zeros(0, np.int32), np.zeros(0, np.int64))


@dataclass(frozen=True, slots=True)
class _Query:
    n_rows: int
    avgdl: float
    rows: _Rows


class PostingScorer:
    """A `LexicalIndex` by BM25 over one backend's postings: the backend's index, a subclass,
    reads them (`read`) and says what its failures mean (`_failing`). Row lengths are kept in
    one array by chunk id, brought up to date from the change log; scored postings are cached
    by (change, token) within a byte budget, least recently used out first. Any write moves
    the change on, so nothing stale is read. Shared by every thread of a backend."""

    def __init__(self, config: LexicalConfig) -> None:
        self.config = config
        self._weights = np.array(config.weights, np.float64)
        self._lock = threading.Lock()
        self._rows = _NO_ROWS
        self._rows_seq = -1
        self._cache: OrderedDict[tuple[int, str], Shares] = OrderedDict()
        self._cache_seq = -1
        self._cache_used = 0
        self._cache_budget = config.postings_cache_mb << 20

    def read(self) -> AbstractContextManager[PostingsRead]:
        """One consistent read of the postings."""
        raise NotImplementedError

    def _failing(self, terms: Sequence[str], what: str) -> AbstractContextManager[object]:
        """A block in which the backend's errors become storage errors naming the lexical
        `what` ("search", "scoring") that failed for these words."""
        raise NotImplementedError

    def search(
        self,
        terms: Sequence[str],
        k: int,
        filters: SearchFilters,
        *,
        best_per_document: bool = False,
    ) -> LexicalHits:
        """The top k chunks (or documents' best chunks) for these query words, best first;
        equal scores go to the lower chunk id."""
        with self._failing(terms, "search"):
            counts = query_tokens(terms)
            if not counts or k <= 0:
                return LexicalHits([])
            with self.read() as read:
                seq = read.seq if read.cacheable else None
                query, lists, weights = self._weighted(read, terms)
                rarest = idf(query.n_rows, 0)
                if not lists:
                    return LexicalHits([], weights, rarest, seq)
                rows, scores = _summed(lists, len(query.rows.sizes))
                if not filters.is_empty():
                    keep = np.isin(rows, read.matching(filters))
                    rows, scores = rows[keep], scores[keep]
                if best_per_document:
                    found = _best_documents(query.rows, rows, scores, k)
                    return LexicalHits(found, weights, rarest, seq)
                top = _top(rows, scores, k)
                found = [Scored(int(r), float(s)) for r, s in zip(top[0], top[1], strict=True)]
                return LexicalHits(found, weights, rarest, seq)

    def scores(
        self, terms: Sequence[str], chunk_ids: Sequence[int], *, per_document: bool = False
    ) -> dict[int, float]:
        """The BM25 score of each of these chunks for the query words (0.0 for a chunk that
        holds none of them), or with `per_document`, of the best chunk of each of their
        documents, keyed by document id. Ids past every chunk the index has seen are left out.
        Cheap next to `search`: the postings of the query's tokens are cached by then, so when
        the cache holds them all it answers with no read of its own (`_cached_lists`)."""
        with self._failing(terms, "scoring"):
            if not chunk_ids:
                return {}
            cached = self._cached_lists(terms)
            if cached is not None:
                return _chunk_scores(*cached, chunk_ids, per_document)
            with self.read() as read:
                query, lists, _ = self._weighted(read, terms)
                return _chunk_scores(query.rows, lists, chunk_ids, per_document)

    def _cached_lists(self, terms: Sequence[str]) -> tuple[_Rows, list[Shares]] | None:
        """The rows and weighted lists `_weighted` would give, from the cache alone, when it
        holds every query token at the change the rows are at. That change is the newest a
        read of this index has kept, so it is at least that of any search that has ended: a
        search's scores then see every write its list saw, with no second snapshot."""
        hits = []
        with self._lock:
            seq = self._cache_seq
            if seq < 0 or seq != self._rows_seq:
                return None
            for token, count in query_tokens(terms).items():
                hit = self._cache.get((seq, token))
                if hit is None:
                    return None
                self._cache.move_to_end((seq, token))
                hits.append((hit, count))
            rows = self._rows
        lists = [(held, share * query_weight(count)) for (held, share), count in hits if len(held)]
        return rows, lists

    def _weighted(
        self, read: PostingsRead, terms: Sequence[str]
    ) -> tuple[_Query, list[Shares], dict[str, float]]:
        """The read's statistics; each query token's rows with its share of their scores,
        times the token's query weight (tokens no row holds left out); and each token's
        weight, idf × query weight (tokens no row holds included)."""
        n_rows, n_tokens = read.totals()
        query = _Query(n_rows, n_tokens / n_rows if n_rows else 0.0, self._synced_rows(read))
        if n_rows == 0:
            return query, [], {}
        lists: list[Shares] = []
        weights: dict[str, float] = {}
        for token, count in query_tokens(terms).items():
            rows, share = self._shares(read, query, token)
            weights[token] = query_weight(count) * idf(n_rows, len(rows))
            if len(rows):
                lists.append((rows, share * query_weight(count)))
        return query, lists, weights

    def cached(self) -> tuple[int, frozenset[str]]:
        """(the change seq the scored-postings cache is for, the tokens it holds): a backend
        may fetch the other tokens' postings ahead, in one round trip."""
        with self._lock:
            return self._cache_seq, frozenset(token for _, token in self._cache)

    def _synced_rows(self, read: PostingsRead) -> _Rows:
        """Every chunk's length and document, as this read sees them. A read that may roll
        back gets a private copy."""
        with self._lock:
            if read.cacheable and read.seq <= self._rows_seq:
                return self._rows
            if self._rows_seq < 0:
                fresh = _NO_ROWS.placed(*read.rows(None))
            else:
                base = self._rows if read.cacheable else self._rows.copy()
                fresh = base.placed(*read.rows(read.added_since(self._rows_seq)))
            if read.cacheable:
                self._rows, self._rows_seq = fresh, read.seq
            return fresh

    def _shares(self, read: PostingsRead, query: _Query, token: str) -> Shares:
        key = (read.seq, token)
        with self._lock:
            hit = self._cache.get(key) if read.cacheable else None
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        rows, tf = read.postings(token)
        freq = tf @ self._weights
        size = query.rows.sizes[rows].astype(np.float64)
        value = idf(query.n_rows, len(rows))
        kept = rows.astype(np.int32) if len(rows) and rows[-1] < _INT32 else rows
        found = (kept, shares(freq, size, value, query.avgdl, self.config.k1, self.config.b))
        if read.cacheable:
            self._remember(key, found)
        return found

    def _remember(self, key: tuple[int, str], value: Shares) -> None:
        cost = value[0].nbytes + value[1].nbytes
        seq = key[0]
        with self._lock:
            if seq < self._cache_seq or cost > self._cache_budget:
                return
            if seq > self._cache_seq:
                self._cache.clear()
                self._cache_used, self._cache_seq = 0, seq
            if key in self._cache:
                return
            self._cache[key] = value
            self._cache_used += cost
            while self._cache_used > self._cache_budget:
                _, (rows, share) = self._cache.popitem(last=False)
                self._cache_used -= rows.nbytes + share.nbytes


def distinct(values: Ids) -> Ids:
    """The distinct values, ascending: np.unique's answer without its check for a masked
    array, which imports numpy.ma, a cost a fresh process's first search would pay
    (docs/design/retrieval.md)."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), np.bool_)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def _summed(lists: list[Shares], size: int) -> tuple[Ids, Floats]:
    """Every row holding a token, ascending, with its score: the tokens' shares added in
    query order, from 0.0. `size` is past every row (the rows' table's length).

    Many postings are added into an array over every row: one pass over each list, where
    sorting their concatenation (np.unique) costs more with every posting. A token's rows
    are distinct, so each list adds once to a row, and a row's shares are added in the same
    order either way: the same scores to the bit."""
    total = sum(len(rows) for rows, _ in lists)
    if total * _DENSE_FROM < size:
        rows = np.concatenate([r for r, _ in lists])
        weights = np.concatenate([s for _, s in lists])
        held, inverse = np.unique(rows, return_inverse=True)
        scores = np.bincount(inverse, weights=weights, minlength=len(held)).astype(np.float64)
        return held.astype(np.int64, copy=False), scores
    summed = np.zeros(size, np.float64)
    seen = np.zeros(size, np.bool_)
    for rows, share in lists:
        summed[rows] += share
        seen[rows] = True
    found = np.flatnonzero(seen)
    return found, summed[found]


def _chunk_scores(
    known: _Rows, lists: list[Shares], chunk_ids: Sequence[int], per_document: bool
) -> dict[int, float]:
    """`PostingScorer.scores` from the rows and the weighted lists."""
    wanted = distinct(np.fromiter(chunk_ids, np.int64, len(chunk_ids)))
    wanted = wanted[(wanted > 0) & (wanted < len(known.sizes))]
    if per_document:
        return _document_scores(known, lists, wanted)
    summed = np.zeros(len(wanted), np.float64)
    for rows, share in lists:
        at = np.minimum(np.searchsorted(rows, wanted), len(rows) - 1)
        held = rows[at] == wanted
        summed[held] += share[at[held]]
    return dict(zip(wanted.tolist(), summed.tolist(), strict=True))


def _document_scores(known: _Rows, lists: list[Shares], wanted: Ids) -> dict[int, float]:
    """The best score among each wanted chunk's document's chunks (0.0 when none holds a
    query token), keyed by document id."""
    documents = distinct(known.documents[wanted])
    best = dict.fromkeys(documents.tolist(), 0.0)
    held = [
        (rows[keep], share[keep])
        for rows, share in lists
        for keep in (np.isin(known.documents[rows], documents),)
        if keep.any()
    ]
    if held:
        rows, scores = _summed(held, len(known.sizes))
        order = np.lexsort((rows, -scores))
        of_row = known.documents[rows[order]]
        _, first = np.unique(of_row, return_index=True)
        best.update(zip(of_row[first].tolist(), scores[order][first].tolist(), strict=True))
    return best


def _top(rows: Ids, scores: Floats, k: int) -> tuple[Ids, Floats]:
    """The k best rows, higher score first and the lower row id among equals."""
    if len(rows) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= kth  # every row tied with the k-th, so that ids break the tie
        rows, scores = rows[keep], scores[keep]
    order = np.lexsort((rows, -scores))[:k]
    return rows[order], scores[order]


def _best_documents(known: _Rows, rows: Ids, scores: Floats, k: int) -> list[Scored]:
    """Each document's best row (ties to the lower row id), for the k best documents."""
    order = np.lexsort((rows, -scores))
    ranked, ranked_scores = rows[order], scores[order]
    documents = known.documents[ranked]
    _, first = np.unique(documents, return_index=True)
    best = np.sort(first)[:k]
    return [Scored(int(ranked[i]), float(ranked_scores[i]), int(documents[i])) for i in best]


def batches(ids: Sequence[int]) -> Iterator[list[int]]:
    """Ids a few hundred at a time, for `IN (...)` lists."""
    for start in range(0, len(ids), _ID_BATCH):
        yield list(ids[start : start + _ID_BATCH])
