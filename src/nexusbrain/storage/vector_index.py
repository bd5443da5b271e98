"""The in-process dense index of both backends: every live chunk's vector for one model.

The index holds the unit rows as float16 with a binary code each (and a float32 copy while it is
small enough for exact search). It follows the store through its chunk change log, so writes by
this process or any other show up on the next search without a full reload, and it keeps a
cache file beside the database so that a restart does not read every vector out of SQLite.
"""

from __future__ import annotations

import logging
import mmap
import os
import threading
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from nexusbrain.embeddings.base import normalise_rows
from nexusbrain.records import Scored, SearchFilters
from nexusbrain.storage.mapped import load_mapped
from nexusbrain.storage.vector_rows import Buffers, Rows, Space, exact_sum, sign_codes, single

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
    cache_from: int = 0  # write no cache file while the index holds fewer rows than this
    centre: bool = True  # take similarities around the mean vector (per model: profiles.py)
    centre_prior: int = 100  # the centre is the mean vector × n / (n + centre_prior)


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
        reference: NDArray[np.float32] | None = None,
    ) -> None:
        self.store = store
        self.model = model
        self.dim = dim
        self.cache = cache
        self.config = config or IndexConfig()
        self._lock = threading.Lock()
        self._seq = -1
        self._unsaved = 0  # rows changed since the cache file was written
        zeros = np.zeros(dim, np.float32)
        centring = self.config.centre
        mark = reference.astype(np.float32) if centring and reference is not None else zeros
        self._space = Space(centring, self.config.centre_prior, mark)
        empty = np.zeros((0, dim), np.float16)
        self._rows = Rows.build(np.zeros(0, np.int64), np.zeros(0, np.int64), empty, self._space, 0)

    def __len__(self) -> int:
        return self._rows.live

    @property
    def quantized(self) -> bool:
        return self._rows.full is None and self._rows.live > 0

    # keeping up with the store

    def sync(self, at: int | None = None) -> None:
        """Catch up with the store: read the change log since the index's seq, unless it is
        at `at` already (DenseIndex.centre)."""
        with self._lock:
            if self._seq < 0:
                self._start()
            if at is None or self._seq < at:
                seq, added, gone = self.store.chunk_changes_since(self._seq)
                if seq != self._seq:
                    self._apply(added, gone)
                    self._seq = seq
                    self._unsaved += len(added) + len(gone)
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

    def warm(self) -> None:
        """Catch up with the store, and read a byte of every page of the rows' vectors.
        They are mapped from the cache file, and a quantized search reads its candidates'
        rows from all over it, so a new process's first searches would each wait on page
        faults until every page had been read once (docs/design/retrieval.md)."""
        self.sync()
        half = self._rows.half
        if half.size:
            flat = np.ascontiguousarray(half).reshape(-1).view(np.uint8)
            np.add.reduce(flat[:: mmap.PAGESIZE], dtype=np.int64)  # the reads are the point

    def _start(self) -> None:
        if self._read_cache():
            return
        seq = self.store.latest_chunk_change()
        ids, docs, matrix = self.store.load_vectors(self.model, self.dim)
        half = matrix.astype(np.float16)
        self._rows = Rows.build(ids, docs, half, self._space, self.config.exact_max)
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
            rows = rows.compacted(self.config.exact_max)
        self._rows = rows

    # the cache file

    def _read_cache(self) -> bool:
        """Start from the cache file, mapped into memory (storage/mapped.py): the rows are
        read from it as searches touch them, and are shared with every other process that
        maps it. A change copies the rows it needs into memory of this process's own."""
        if self.cache is None or not self.cache.exists():
            return False
        try:
            data = load_mapped(self.cache)
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
            ids, docs, half = data["ids"], data["docs"], data["half"]
            _check_rows(data, ("ids", "docs", "half"), len(ids))
            derived = self._derived(data, len(ids))
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            log.warning("ignoring the unreadable vector cache %s: %s", self.cache, exc)
            return False
        if derived is None:
            self._rows = Rows.build(ids, docs, half, self._space, self.config.exact_max)
        else:
            sq, codes, total = derived
            buffers = Buffers(ids, docs, half, sq, codes)
            self._rows = Rows.of(buffers, self._space, self.config.exact_max, total)
        self._seq = int(data["seq"])
        current = derived is not None and derived[1].flags.f_contiguous
        self._unsaved = 0 if current else 1  # an older cache: rewrite it once
        log.info("read %d vectors for %s from %s", len(ids), self.model, self.cache)
        return True

    def _derived(
        self, data: Mapping[str, NDArray[Any]], rows: int
    ) -> tuple[NDArray[np.float32], NDArray[np.uint64], NDArray[np.int64]] | None:
        """The rows' squares, sign codes and exact sum as the cache file keeps them, when they
        were taken around this model's reference point (a cache written before they were kept
        has none): a start then does not recompute them from every vector."""
        if "sq" not in data or "reference" not in data:
            return None
        if not np.array_equal(data["reference"], self._space.reference):
            return None
        _check_rows(data, ("sq", "codes"), rows)
        total = data["total"]
        if total.shape != (self.dim,) or total.dtype != np.int64:
            raise ValueError(f"its sum has shape {total.shape} and type {total.dtype}")
        return data["sq"], data["codes"], total

    def _save(self) -> None:
        if self.cache is None or self._rows.live < self.config.cache_from:
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
                    ids=rows.ids[rows.alive],
                    docs=rows.docs[rows.alive],
                    half=rows.half[rows.alive],
                    sq=rows.sq[rows.alive],
                    codes=np.asfortranarray(rows.codes[rows.alive]),
                    total=rows.total,
                    reference=self._space.reference,
                )
            os.replace(partial, self.cache)
            self._unsaved = 0
        except OSError as exc:
            partial.unlink(missing_ok=True)
            log.warning("could not write the vector cache %s: %s", self.cache, exc)

    # centred vectors

    def centre(self, vector: NDArray[np.float32], at: int | None = None) -> NDArray[np.float32]:
        """A raw unit vector (a query's), moved to the index's centred space, unit length.
        The start of every query: it brings the index up to date once (to `at` at least: see
        DenseIndex.centre), so that the searches and scores that follow see the rows this
        centre belongs to."""
        self.sync(at)
        out: NDArray[np.float32] = normalise_rows(
            (vector.astype(np.float32) - self._rows.center)[None, :]
        )[0]
        return out

    def vectors_of(self, chunk_ids: Sequence[int]) -> dict[int, NDArray[np.float32]]:
        """The centred unit vectors of these chunks (those in the index). It brings the index
        up to date first: a search whose query vector failed never called `centre`, and what
        it says about its hits' vectors must not come from a stale or unstarted index."""
        self.sync()
        rows = self._rows
        wanted = np.fromiter(chunk_ids, dtype=np.int64, count=len(chunk_ids))
        found = rows.live_positions(wanted)
        vectors = single(rows.half[found])
        centred = (vectors - rows.center) / rows.norms(found, vectors)[:, None]
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
            positions = rows.live_positions(wanted)
        if rows.full is None:  # quantized: rescore the nearest codes
            codes = rows.codes if positions is None else rows.codes[positions]
            ids = rows.ids if positions is None else rows.ids[positions]
            dead = ~rows.alive if positions is None and rows.dead else None
            near = self._nearest(rows, codes, ids, query, dead)
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
        positions = rows.live_positions(wanted)
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
        rows: Rows,
        codes: NDArray[np.uint64],
        ids: NDArray[np.int64],
        query: NDArray[np.float32],
        dead: NDArray[np.bool_] | None = None,
    ) -> NDArray[np.intp]:
        """Positions in `codes` of the `candidates` codes nearest to the query's, by Hamming
        distance, ties by position; `dead` rows come last."""
        if len(codes) <= self.config.candidates:
            return np.arange(len(codes))
        # the query as a stored row would be (float16), so that a row equal to it has its code
        raw = _uncentred(query, rows.center).astype(np.float16)
        mine = sign_codes(raw[None, :], rows.space.reference)[0]
        # a word (column) at a time: the codes are kept word-major, so each column is
        # contiguous and read in one pass, where counting the whole matrix would stride across
        # rows and then sum them (docs/design/retrieval.md)
        distance = np.bitwise_count(codes[:, 0] ^ mine[0]).astype(np.int16)
        for word in range(1, codes.shape[1]):
            distance += np.bitwise_count(codes[:, word] ^ mine[word])
        if dead is not None:
            distance[dead] = 64 * codes.shape[1] + 1
        return _smallest(distance, ids, self.config.candidates)


# What each per-row array of the cache file holds: a file that says otherwise is not used.
_ROW_TYPES = {
    "ids": np.int64,
    "docs": np.int64,
    "half": np.float16,
    "sq": np.float32,
    "codes": np.uint64,
}


def _check_rows(data: Mapping[str, NDArray[Any]], names: Sequence[str], rows: int) -> None:
    for name in names:
        found = data[name]
        if len(found) != rows or found.dtype != _ROW_TYPES[name]:
            raise ValueError(f"{name} has {len(found)} rows of {found.dtype}, not {rows}")


def _ranked(
    rows: Rows,
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
    rows: Rows, positions: NDArray[np.intp] | None, query: NDArray[np.float32]
) -> NDArray[np.float32]:
    """cos(v - c, q') for a centred unit query q': (v·q' - c·q') / |v - c|."""
    offset = float(rows.center @ query)
    if positions is None:
        assert rows.full is not None
        dots, norms = rows.full @ query, rows.norms(None)
    else:
        vectors = rows.full[positions] if rows.full is not None else single(rows.half[positions])
        dots, norms = vectors @ query, rows.norms(positions, vectors)
    out: NDArray[np.float32] = (dots - offset) / norms
    return out


def _uncentred(query: NDArray[np.float32], center: NDArray[np.float32]) -> NDArray[np.float32]:
    """The unit vector q whose centred form is the unit vector q': q = q'·s + c, with s the
    root of |q'·s + c| = 1 (a query that was not a unit vector first maps to a nearby one)."""
    qc = float(query @ center)
    s = -qc + np.sqrt(max(qc * qc - float(center @ center) + 1.0, 0.0))
    out: NDArray[np.float32] = (query * s + center).astype(np.float32)
    return out


def _smallest(distance: NDArray[np.int16], ids: NDArray[np.int64], k: int) -> NDArray[np.intp]:
    """Positions of the k smallest distances (Hamming distances: small whole numbers, so the
    k-th smallest is read off their histogram, with no partition of the array); at
    the cut, the lowest chunk ids win, so that the same rows give the same candidates
    whatever order the index holds them in."""
    cut = int(np.searchsorted(np.cumsum(np.bincount(distance)), k))
    below = np.flatnonzero(distance < cut)
    at = np.flatnonzero(distance == cut)
    at = at[np.argsort(ids[at], kind="stable")][: k - len(below)]
    return np.concatenate([below, at])


def _top(scores: NDArray[np.float32], ids: NDArray[np.int64], k: int) -> NDArray[np.intp]:
    """Indices of the k best scores, best first; ties broken by lower chunk id."""
    part = np.arange(len(scores)) if k >= len(scores) else np.argpartition(-scores, k - 1)[:k]
    return part[np.lexsort((ids[part], -scores[part]))]


def centre_of(half: NDArray[np.float16], config: IndexConfig) -> NDArray[np.float32]:
    """The centre an index of these live rows takes similarities around: for a dense index
    kept elsewhere (pgvector's), so that it centres as this one would."""
    space = Space(config.centre, config.centre_prior, np.zeros(half.shape[1], np.float32))
    return space.centre_of(exact_sum(half), len(half))
