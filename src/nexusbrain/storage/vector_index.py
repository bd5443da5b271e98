"""The SQLite backend's dense index: every live chunk's vector for one model, in memory.

The index holds the unit rows as float16 with a binary code each (and a float32 copy while it is
small enough for exact search). It follows the store through its chunk change log, so writes by
this process or any other show up on the next search without a full reload, and it keeps a
cache file beside the database so that a restart does not read every vector out of SQLite.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from nexusbrain.embeddings.base import normalise_rows
from nexusbrain.records import Scored, SearchFilters

log = logging.getLogger(__name__)


class VectorSource(Protocol):
    """What the index reads from its store."""

    def identity(self) -> str:
        """A random id the store got when it was created (the cache file checks it)."""
        ...

    def latest_chunk_change(self) -> int: ...

    def chunk_changes_since(self, seq: int) -> tuple[int, list[int], list[int]]: ...

    def load_vectors(
        self, model: str, dim: int, chunk_ids: Sequence[int] | None = None
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]:
        """(chunk ids, document ids, vectors) of live chunks with a vector for `model`."""
        ...

    def chunk_ids_matching(self, filters: SearchFilters) -> set[int]: ...


@dataclass(frozen=True, slots=True)
class IndexConfig:
    """Where exact search stops and quantized search starts (docs/design/retrieval.md)."""

    exact_max: int = 20_000  # up to this many vectors, an exact float32 product
    candidates: int = 2_000  # past it, this many nearest by Hamming distance, rescored exactly
    # rewrite the cache file after this many changed rows, or a tenth of the rows if more
    # (and on close)
    save_every: int = 2_000
    centre: bool = True  # take similarities around the mean vector (per model: profiles.py)
    centre_prior: int = 100  # the centre is the mean vector × n / (n + centre_prior)


_BUFFERED = ("ids", "docs", "half", "norms", "codes")  # the per-row arrays of _Buffers


class _Buffers:
    """Row arrays with room to grow. A `_Rows` is a view of their first rows, so appending
    past its end changes nothing it can see."""

    def __init__(
        self,
        ids: NDArray[np.int64],
        docs: NDArray[np.int64],
        half: NDArray[np.float16],
        norms: NDArray[np.float32],
        codes: NDArray[np.uint64],
    ) -> None:
        self.ids, self.docs, self.half, self.norms, self.codes = ids, docs, half, norms, codes
        self.used = len(ids)  # rows written; views past it would see garbage

    @classmethod
    def grown(cls, rows: _Rows, capacity: int) -> _Buffers:
        """New buffers holding `rows` and room for `capacity` rows in all."""
        n = len(rows.ids)
        out = cls(
            np.empty(capacity, np.int64),
            np.empty(capacity, np.int64),
            np.empty((capacity, rows.half.shape[1]), np.float16),
            np.empty(capacity, np.float32),
            np.empty((capacity, rows.codes.shape[1]), np.uint64),
        )
        for name in _BUFFERED:
            getattr(out, name)[:n] = getattr(rows, name)
        out.used = n
        return out

    @property
    def capacity(self) -> int:
        return len(self.ids)


@dataclass(frozen=True, slots=True)
class _Rows:
    """The index content: row r is chunk ids[r] of document docs[r], searched while alive[r].

    Immutable as a search sees it: every change makes a new `_Rows`, so a search in flight
    keeps a consistent view. A change costs what it changes, not a copy of the index: new
    rows are written past the end of shared buffers, and removed rows are only marked dead in
    a copy of the one-byte-per-row `alive` mask. Dead rows are dropped when they pass a fifth
    of the rows (`compacted`)."""

    ids: NDArray[np.int64]
    docs: NDArray[np.int64]
    half: NDArray[np.float16]  # the stored unit vectors, float16 (what is cached)
    center: NDArray[np.float32]  # the centre c that similarities are taken around
    norms: NDArray[np.float32]  # |v - c| of each row
    codes: NDArray[np.uint64]  # sign bits of (v - c), packed
    full: NDArray[np.float32] | None  # float32 rows while exact search is used
    alive: NDArray[np.bool_]
    dead: int
    buffers: _Buffers

    @classmethod
    def build(
        cls,
        ids: NDArray[np.int64],
        docs: NDArray[np.int64],
        half: NDArray[np.float16],
        center: NDArray[np.float32],
        exact_max: int,
    ) -> _Rows:
        norms, codes = _norms_and_codes(half, center)
        return cls.of(ids, docs, half, center, norms, codes, exact_max)

    @classmethod
    def of(
        cls,
        ids: NDArray[np.int64],
        docs: NDArray[np.int64],
        half: NDArray[np.float16],
        center: NDArray[np.float32],
        norms: NDArray[np.float32],
        codes: NDArray[np.uint64],
        exact_max: int,
    ) -> _Rows:
        """Live rows over these very arrays (no room to grow: the first append copies)."""
        full = half.astype(np.float32) if len(half) <= exact_max else None
        alive = np.ones(len(ids), np.bool_)
        buffers = _Buffers(ids, docs, half, norms, codes)
        return cls(ids, docs, half, center, norms, codes, full, alive, 0, buffers)

    @property
    def live(self) -> int:
        return len(self.ids) - self.dead

    def plus(
        self,
        ids: NDArray[np.int64],
        docs: NDArray[np.int64],
        half: NDArray[np.float16],
        exact_max: int,
    ) -> _Rows:
        """These rows added at the end."""
        n, m = len(self.ids), len(ids)
        buffers = self.buffers
        if buffers.used != n or n + m > buffers.capacity:
            buffers = _Buffers.grown(self, n + m + max(1024, (n + m) // 4))
        norms, codes = _norms_and_codes(half, self.center)
        end = n + m
        added = dict(zip(_BUFFERED, (ids, docs, half, norms, codes), strict=True))
        for name, values in added.items():
            getattr(buffers, name)[n:end] = values
        buffers.used = end
        full = None
        if end <= exact_max:
            old = self.full if self.full is not None else self.half.astype(np.float32)
            full = np.concatenate([old, half.astype(np.float32)])
        return replace(
            self,
            **{name: getattr(buffers, name)[:end] for name in _BUFFERED},
            full=full,
            alive=np.concatenate([self.alive, np.ones(m, np.bool_)]),
            buffers=buffers,
        )

    def without(self, chunk_ids: NDArray[np.int64]) -> _Rows:
        """The rows of these chunks marked dead."""
        hit = np.isin(self.ids, chunk_ids) & self.alive
        found = int(np.count_nonzero(hit))
        if not found:
            return self
        return replace(self, alive=self.alive & ~hit, dead=self.dead + found)

    def compacted(self, center: NDArray[np.float32], exact_max: int) -> _Rows:
        """The live rows alone, in new arrays; with a new centre, new norms and codes."""
        keep = self.alive
        ids, docs, half = self.ids[keep], self.docs[keep], self.half[keep]
        if np.array_equal(center, self.center):
            return _Rows.of(ids, docs, half, center, self.norms[keep], self.codes[keep], exact_max)
        return _Rows.build(ids, docs, half, center, exact_max)


class VectorIndex:
    """Centred cosine search over every live chunk that has a vector for one model.

    Similarities are cosines around a centre c (the mean stored vector, shrunk towards zero
    while the store is small): cos(v - c, q - c). The edge model's vectors share one strong
    direction, which centring takes out (docs/tuning.md). `search` takes a query already centred by
    `centre`, and `vectors_of` gives centred rows, so PRF works in the same space.

    Up to `IndexConfig.exact_max` vectors the search is an exact float32 product. Past that,
    the `candidates` rows whose sign codes are nearest the query's by Hamming distance are
    rescored from their float16 vectors. The rows are cached in one file beside the
    database, stamped with the chunk change log's sequence number, so a restart reads that
    file and applies only the changes made since, instead of reading every vector out of
    SQLite."""

    def __init__(
        self,
        store: VectorSource,
        model: str,
        dim: int,
        *,
        cache: Path | None = None,
        config: IndexConfig | None = None,
    ) -> None:
        self.store = store
        self.model = model
        self.dim = dim
        self.cache = cache
        self.config = config or IndexConfig()
        self._lock = threading.Lock()
        self._seq = -1
        self._unsaved = 0  # rows changed since the cache file was written
        self._drift = 0  # rows changed since the centre was computed
        empty = np.zeros((0, dim), np.float16)
        zeros = np.zeros(dim, np.float32)
        self._rows = _Rows.build(np.zeros(0, np.int64), np.zeros(0, np.int64), empty, zeros, 0)

    def __len__(self) -> int:
        return self._rows.live

    @property
    def quantized(self) -> bool:
        return self._rows.full is None and self._rows.live > 0

    # keeping up with the store

    def sync(self) -> None:
        with self._lock:
            if self._seq < 0:
                self._start()
            seq, added, gone = self.store.chunk_changes_since(self._seq)
            if seq != self._seq:
                self._apply(added, gone)
                self._seq = seq
                self._unsaved += len(added) + len(gone)
                self._drift += len(added) + len(gone)
            if self._drift > max(32, self._rows.live):
                self._recentre()
            # a tenth of a large index: rewriting a large file often would cost more than the
            # reads it saves at the next start
            if self._unsaved >= max(self.config.save_every, self._rows.live // 10):
                self._save()

    def save(self) -> None:
        """Write the cache file if the index changed since it was last written."""
        with self._lock:
            if self._seq >= 0 and self._unsaved:
                self._save()

    def refresh(self) -> None:
        self.sync()
        self.save()

    def close(self) -> None:
        self.save()

    def _start(self) -> None:
        if self._read_cache():
            return
        seq = self.store.latest_chunk_change()
        ids, docs, matrix = self.store.load_vectors(self.model, self.dim)
        half = matrix.astype(np.float16)
        center = self._center_of(half)
        self._rows = _Rows.build(ids, docs, half, center, self.config.exact_max)
        self._seq = seq
        self._unsaved = max(len(ids), 1)
        log.info("loaded %d vectors for %s from the store", len(ids), self.model)

    def _apply(self, added: list[int], gone: list[int]) -> None:
        rows = self._rows
        drop = set(gone) | set(added)
        if drop:
            rows = rows.without(np.fromiter(drop, dtype=np.int64, count=len(drop)))
        if added:
            ids, docs, matrix = self.store.load_vectors(self.model, self.dim, added)
            rows = rows.plus(ids, docs, matrix.astype(np.float16), self.config.exact_max)
        small = rows.full is None and rows.live <= self.config.exact_max  # exact search again
        if rows.dead * 5 > len(rows.ids) or (rows.dead and small):
            rows = rows.compacted(rows.center, self.config.exact_max)
        self._rows = rows

    def _recentre(self) -> None:
        rows = self._rows
        center = self._center_of(rows.half[rows.alive])
        self._rows = rows.compacted(center, self.config.exact_max)
        self._drift = 0

    def _center_of(self, half: NDArray[np.float16]) -> NDArray[np.float32]:
        """The mean vector, shrunk towards zero while there are few: a handful of vectors
        says little about the model's common direction."""
        if len(half) == 0 or not self.config.centre:
            return np.zeros(half.shape[1], np.float32)
        mean: NDArray[np.float32] = half.mean(axis=0, dtype=np.float32)
        shrunk: NDArray[np.float32] = mean * (len(half) / (len(half) + self.config.centre_prior))
        return shrunk

    # the cache file

    def _read_cache(self) -> bool:
        if self.cache is None or not self.cache.exists():
            return False
        try:
            with np.load(self.cache, allow_pickle=False) as data:
                same = (
                    str(data["model"]) == self.model
                    and str(data["store"]) == self.store.identity()
                    and int(data["seq"]) <= self.store.latest_chunk_change()
                    and data["half"].shape[1:] == (self.dim,)
                    and bool(data["centred"]) == self.config.centre
                )
                if not same:
                    log.info("ignoring the stale vector cache %s", self.cache)
                    return False
                ids, docs, half, center = data["ids"], data["docs"], data["half"], data["center"]
                seq = int(data["seq"])
        except (OSError, ValueError, KeyError) as exc:
            log.warning("ignoring the unreadable vector cache %s: %s", self.cache, exc)
            return False
        self._rows = _Rows.build(ids, docs, half, center, self.config.exact_max)
        self._seq = seq
        self._unsaved = 0
        log.info("read %d vectors for %s from %s", len(ids), self.model, self.cache)
        return True

    def _save(self) -> None:
        if self.cache is None:
            self._unsaved = 0
            return
        rows = self._rows
        partial = self.cache.with_name(self.cache.name + f".{os.getpid()}.part")
        try:
            with partial.open("wb") as out:
                np.savez(
                    out,
                    model=np.array(self.model),
                    store=np.array(self.store.identity()),
                    seq=np.array(self._seq, dtype=np.int64),
                    centred=np.array(self.config.centre),
                    center=rows.center,
                    ids=rows.ids[rows.alive],
                    docs=rows.docs[rows.alive],
                    half=rows.half[rows.alive],
                )
            os.replace(partial, self.cache)
            self._unsaved = 0
        except OSError as exc:
            partial.unlink(missing_ok=True)
            log.warning("could not write the vector cache %s: %s", self.cache, exc)

    # centred vectors

    def centre(self, vector: NDArray[np.float32]) -> NDArray[np.float32]:
        """A raw unit vector (a query's), moved to the index's centred space, unit length.
        The start of every query: it brings the index up to date once, so that the searches
        and scores that follow see the rows this centre belongs to."""
        self.sync()
        out: NDArray[np.float32] = normalise_rows(
            (vector.astype(np.float32) - self._rows.center)[None, :]
        )[0]
        return out

    def vectors_of(self, chunk_ids: Sequence[int]) -> dict[int, NDArray[np.float32]]:
        """The centred unit vectors of these chunks (those in the index)."""
        rows = self._rows
        wanted = np.fromiter(chunk_ids, dtype=np.int64, count=len(chunk_ids))
        found = np.flatnonzero(np.isin(rows.ids, wanted) & rows.alive)
        centred = (rows.half[found].astype(np.float32) - rows.center) / rows.norms[found, None]
        return {int(rows.ids[r]): row for r, row in zip(found, centred, strict=True)}

    # searching

    def search(
        self,
        query: NDArray[np.float32],
        k: int,
        filters: SearchFilters | None = None,
        *,
        best_per_document: bool = False,
        allowed: set[int] | None = None,
    ) -> list[Scored]:
        """The k rows most similar to a centred query (see `centre`, which syncs), best first,
        among the chunks that pass the filters (and, given `allowed`, among those ids)."""
        rows = self._rows
        if rows.live == 0 or k <= 0:
            return []
        if filters is not None and not filters.is_empty():
            matching = self.store.chunk_ids_matching(filters)
            allowed = matching if allowed is None else allowed & matching
        query = query.astype(np.float32)
        positions = None  # every row, dead ones too (their scores are dropped below)
        if allowed is not None:
            wanted = np.fromiter(allowed, dtype=np.int64, count=len(allowed))
            positions = np.flatnonzero(np.isin(rows.ids, wanted) & rows.alive)
        if rows.full is None:  # quantized: rescore the nearest codes
            codes = rows.codes if positions is None else rows.codes[positions]
            dead = ~rows.alive if positions is None and rows.dead else None
            near = self._nearest(codes, query, dead)
            positions = near if positions is None else positions[near]
        scores = _scores(rows, positions, query)
        if rows.dead and allowed is None:
            live = rows.alive if positions is None else rows.alive[positions]
            scores = np.where(live, scores, np.float32(-np.inf))
        return _ranked(rows, positions, scores, k, best_per_document)

    def scores(
        self, query: NDArray[np.float32], chunk_ids: Sequence[int], *, per_document: bool = False
    ) -> dict[int, float]:
        """A centred query's similarity to each of these chunks, or with `per_document`, to
        the best chunk of each of these chunks' documents (keyed by document id)."""
        rows = self._rows
        wanted = np.fromiter(chunk_ids, dtype=np.int64, count=len(chunk_ids))
        positions = np.flatnonzero(np.isin(rows.ids, wanted) & rows.alive)
        if per_document:
            positions = np.flatnonzero(np.isin(rows.docs, rows.docs[positions]) & rows.alive)
        scores = _scores(rows, positions, query.astype(np.float32))
        keys = (rows.docs if per_document else rows.ids)[positions]
        best: dict[int, float] = {}
        for key, score in zip(keys.tolist(), scores.tolist(), strict=True):
            if score > best.get(key, -np.inf):
                best[key] = score
        return best

    def _nearest(
        self,
        codes: NDArray[np.uint64],
        query: NDArray[np.float32],
        dead: NDArray[np.bool_] | None = None,
    ) -> NDArray[np.intp]:
        """Positions in `codes` of the `candidates` codes nearest to the query's (the query
        is centred already, so its signs are taken around zero); `dead` rows come last."""
        if len(codes) <= self.config.candidates:
            return np.arange(len(codes))
        mine = _codes(query[None, :], np.zeros_like(query))[0]
        bits = np.bitwise_count(codes ^ mine)
        distance = bits[:, 0].astype(np.int32)
        for word in range(1, bits.shape[1]):
            distance += bits[:, word]
        if dead is not None:
            distance[dead] = 64 * codes.shape[1] + 1
        return np.argpartition(distance, self.config.candidates - 1)[: self.config.candidates]


def _ranked(
    rows: _Rows,
    positions: NDArray[np.intp] | None,
    scores: NDArray[np.float32],
    k: int,
    best_per_document: bool,
) -> list[Scored]:
    ids, docs = rows.ids, rows.docs
    if positions is not None:
        ids, docs = ids[positions], docs[positions]
    order = _top(scores, ids, len(ids) if best_per_document else k)
    if best_per_document:
        _, first = np.unique(docs[order], return_index=True)
        order = order[np.sort(first)][:k]
    order = order[scores[order] > 0]  # no closer to the query than the average vector is
    if best_per_document:
        return [Scored(int(ids[i]), float(scores[i]), int(docs[i])) for i in order]
    return [Scored(int(ids[i]), float(scores[i])) for i in order]


def _scores(
    rows: _Rows, positions: NDArray[np.intp] | None, query: NDArray[np.float32]
) -> NDArray[np.float32]:
    """cos(v - c, q') for a centred unit query q': (v·q' - c·q') / |v - c|."""
    offset = float(rows.center @ query)
    dots: NDArray[np.float32]
    if positions is None:
        assert rows.full is not None
        dots = rows.full @ query
        norms = rows.norms
    else:
        dots = (rows.full if rows.full is not None else rows.half)[positions].astype(
            np.float32
        ) @ query
        norms = rows.norms[positions]
    out: NDArray[np.float32] = (dots - offset) / norms
    return out


def _top(scores: NDArray[np.float32], ids: NDArray[np.int64], k: int) -> NDArray[np.intp]:
    """Indices of the k best scores, best first; ties broken by lower chunk id."""
    part = np.arange(len(scores)) if k >= len(scores) else np.argpartition(-scores, k - 1)[:k]
    return part[np.lexsort((ids[part], -scores[part]))]


def _norms_and_codes(
    half: NDArray[np.float16], center: NDArray[np.float32], block: int = 8192
) -> tuple[NDArray[np.float32], NDArray[np.uint64]]:
    """|v - c| and the sign codes of every row, a block of rows at a time: converting all the
    rows to float32 at once would briefly hold several times the index in memory."""
    norms = np.empty(len(half), np.float32)
    codes = np.empty((len(half), _words(half.shape[1])), np.uint64)
    for start in range(0, len(half), block):
        part = half[start : start + block].astype(np.float32)
        norms[start : start + block] = np.linalg.norm(part - center, axis=1)
        codes[start : start + block] = _codes(part, center)
    return np.maximum(norms, np.float32(1e-6)), codes


def _words(dim: int) -> int:
    return (dim + 63) // 64


def _codes(matrix: NDArray[np.floating], center: NDArray[np.float32]) -> NDArray[np.uint64]:
    """The sign bits of (row - center), packed into 64-bit words (zero-padded)."""
    bits = np.packbits(np.asarray(matrix, dtype=np.float32) > center, axis=1)
    width = _words(matrix.shape[1]) * 8
    if bits.shape[1] < width:
        bits = np.pad(bits, ((0, 0), (0, width - bits.shape[1])))
    return np.ascontiguousarray(bits).view(np.uint64)
