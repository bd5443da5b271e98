"""The rows of the in-process dense index (vector_index.py): every live chunk's unit vector as
float16, with |v|², a sign code and the exact sum the centre comes from. Pure numpy, no store:
a `Rows` is immutable as a search sees it, and every change makes a new one."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from nexusbrain.storage.bm25 import distinct

_BUFFERED = ("ids", "docs", "half", "sq", "codes")  # the per-row arrays of Buffers
# A float16 value in [-1, 1] times 2**24 is a whole number: summed as integers, the vectors'
# total is exact, so the centre is the same whatever order the rows came and went in.
_EXACT = float(2**24)
# A float16's bits shifted left by 13 are the float32 bits of that value times 2**-112, for
# normal and subnormal values alike (the exponent field lands 112 short of float32's bias):
# see single.
_UNBIAS = np.float32(2.0**112)
_SIGN_AND_BELOW = np.int32(-0x70000001)  # 0x8FFFFFFF: the sign bit, and the bits under 28


class Buffers:
    """Row arrays with room to grow. A `Rows` is a view of their first rows, so appending
    past its end changes nothing it can see. Arrays that cannot be written (the cache file's,
    mapped read-only: vector_index.py) have no room: the first append copies them."""

    def __init__(
        self,
        ids: NDArray[np.int64],
        docs: NDArray[np.int64],
        half: NDArray[np.float16],
        sq: NDArray[np.float32],
        codes: NDArray[np.uint64],
    ) -> None:
        self.ids, self.docs, self.half, self.sq = ids, docs, half, sq
        self.codes = np.asfortranarray(codes)  # a cache file of before codes were kept word-major
        self.used = len(ids)  # rows written; views past it would see garbage

    @classmethod
    def grown(cls, rows: Rows, capacity: int) -> Buffers:
        """New buffers holding `rows` and room for `capacity` rows in all."""
        n = len(rows.ids)
        out = cls(
            np.empty(capacity, np.int64),
            np.empty(capacity, np.int64),
            np.empty((capacity, rows.half.shape[1]), np.float16),
            np.empty(capacity, np.float32),
            np.empty((capacity, rows.codes.shape[1]), np.uint64, order="F"),
        )
        for name in _BUFFERED:
            getattr(out, name)[:n] = getattr(rows, name)
        out.used = n
        return out

    @property
    def capacity(self) -> int:
        return len(self.ids)

    def has_room(self, used: int, more: int) -> bool:
        """Whether `more` rows can be written after the first `used` of these arrays: they are
        writable, no other `Rows` has written past `used`, and they are long enough."""
        writable = all(getattr(self, name).flags.writeable for name in _BUFFERED)
        return writable and self.used == used and used + more <= self.capacity


@dataclass(frozen=True, slots=True)
class Space:
    """How similarities are taken: around the centre c (a function of the live vectors
    alone), with sign codes taken around a fixed reference r (a property of the model, so
    that they never need rebuilding)."""

    centring: bool
    prior: int  # the centre is the mean vector × n / (n + prior)
    reference: NDArray[np.float32]

    def centre_of(self, total: NDArray[np.int64], n: int) -> NDArray[np.float32]:
        if not self.centring or n == 0:
            return np.zeros(len(total), np.float32)
        centre: NDArray[np.float32] = (total / _EXACT / (n + self.prior)).astype(np.float32)
        return centre


@dataclass(frozen=True, slots=True)
class Rows:
    """The index content: row r is chunk ids[r] of document docs[r], searched while alive[r].

    Immutable as a search sees it: every change makes a new `Rows`, so a search in flight
    keeps a consistent view. A change costs what it changes, not a copy of the index: new
    rows are written past the end of shared buffers, and removed rows are only marked dead in
    a copy of the one-byte-per-row `alive` mask. Dead rows are dropped when they pass a fifth
    of the rows (`compacted`)."""

    ids: NDArray[np.int64]
    docs: NDArray[np.int64]
    half: NDArray[np.float16]  # the stored unit vectors, float16 (what is cached)
    sq: NDArray[np.float32]  # |v|² of each row
    codes: NDArray[np.uint64]  # sign bits of (v - reference), packed; word-major (order F)
    full: NDArray[np.float32] | None  # float32 rows while exact search is used
    alive: NDArray[np.bool_]
    dead: int
    buffers: Buffers
    space: Space
    total: NDArray[np.int64]  # the live rows' sum, times 2**24 (exact)
    center: NDArray[np.float32]  # the centre c that similarities are taken around
    vc: NDArray[np.float32] | None  # v·c of every row, while exact search is used
    ascending: bool  # ids strictly ascending (as chunk ids are handed out): binary search

    @classmethod
    def build(
        cls,
        ids: NDArray[np.int64],
        docs: NDArray[np.int64],
        half: NDArray[np.float16],
        space: Space,
        exact_max: int,
    ) -> Rows:
        sq, codes = squares_and_codes(half, space.reference)
        return cls.of(Buffers(ids, docs, half, sq, codes), space, exact_max)

    @classmethod
    def of(
        cls,
        buffers: Buffers,
        space: Space,
        exact_max: int,
        total: NDArray[np.int64] | None = None,
    ) -> Rows:
        """Live rows over these very arrays (no room to grow: the first append copies);
        `total` is their exact sum when it is known (the cache file keeps it)."""
        ids, half = buffers.ids, buffers.half
        full = single(half) if len(half) <= exact_max else None
        total = exact_sum(half) if total is None else total
        center = space.centre_of(total, len(ids))
        return cls(
            ids,
            buffers.docs,
            half,
            buffers.sq,
            buffers.codes,
            full,
            alive=np.ones(len(ids), np.bool_),
            dead=0,
            buffers=buffers,
            space=space,
            total=total,
            center=center,
            vc=full @ center if full is not None else None,
            ascending=is_ascending(ids),
        )

    @property
    def live(self) -> int:
        return len(self.ids) - self.dead

    def _recentred(self, **changes: object) -> Rows:
        """A copy with these fields changed, and its centre (and v·c) for its live rows."""
        rows = replace(self, **changes)  # type: ignore[arg-type]
        center = rows.space.centre_of(rows.total, rows.live)
        vc = rows.full @ center if rows.full is not None else None
        return replace(rows, center=center, vc=vc)

    def plus(
        self,
        ids: NDArray[np.int64],
        docs: NDArray[np.int64],
        half: NDArray[np.float16],
        exact_max: int,
    ) -> Rows:
        """These rows added at the end (none: these very rows)."""
        n, m = len(self.ids), len(ids)
        if not m:
            return self
        buffers = self.buffers
        if not buffers.has_room(n, m):
            buffers = Buffers.grown(self, n + m + max(1024, (n + m) // 4))
        sq, codes = squares_and_codes(half, self.space.reference)
        end = n + m
        added = dict(zip(_BUFFERED, (ids, docs, half, sq, codes), strict=True))
        for name, values in added.items():
            getattr(buffers, name)[n:end] = values
        buffers.used = end
        full = None
        if end <= exact_max:
            old = self.full if self.full is not None else single(self.half)
            full = np.concatenate([old, single(half)])
        return self._recentred(
            **{name: getattr(buffers, name)[:end] for name in _BUFFERED},
            full=full,
            alive=np.concatenate([self.alive, np.ones(m, np.bool_)]),
            buffers=buffers,
            total=self.total + exact_sum(half),
            ascending=self.ascending
            and is_ascending(ids)
            and (not n or not m or ids[0] > self.ids[-1]),
        )

    def without(self, chunk_ids: NDArray[np.int64]) -> Rows:
        """The rows of these chunks marked dead."""
        hit = np.isin(self.ids, chunk_ids) & self.alive
        found = int(np.count_nonzero(hit))
        if not found:
            return self
        return self._recentred(
            alive=self.alive & ~hit,
            dead=self.dead + found,
            total=self.total - exact_sum(self.half[hit]),
        )

    def live_positions(self, chunk_ids: NDArray[np.int64]) -> NDArray[np.intp]:
        """The positions of the live rows of these chunks, ascending. A search asks this of
        a few hundred candidates among every row, so it is a binary search where it can be
        (the ids ascending, as they are unless a chunk's vector came back after a newer one)."""
        if not self.ascending:
            return np.flatnonzero(np.isin(self.ids, chunk_ids) & self.alive)
        at = np.searchsorted(self.ids, chunk_ids)
        inside = at < len(self.ids)
        at = at[inside]
        at = distinct(at[self.ids[at] == chunk_ids[inside]])
        return at[self.alive[at]]

    def compacted(self, exact_max: int) -> Rows:
        """The live rows alone, in new arrays."""
        live = Buffers(*(getattr(self, name)[self.alive] for name in _BUFFERED))
        return Rows.of(live, self.space, exact_max)

    def norms(
        self, positions: NDArray[np.intp] | None, vectors: NDArray[np.float32] | None = None
    ) -> NDArray[np.float32]:
        """|v - c| of these rows (every row when None): sqrt(|v|² - 2 v·c + |c|²). `vectors`
        are these rows as float32, when the caller has them already."""
        if positions is None:
            assert self.vc is not None
            sq, vc = self.sq, self.vc
        else:
            sq = self.sq[positions]
            if self.vc is not None:
                vc = self.vc[positions]
            else:
                vc = (single(self.half[positions]) if vectors is None else vectors) @ self.center
        cc = float(self.center @ self.center)
        out: NDArray[np.float32] = np.sqrt(np.maximum(sq - 2 * vc + cc, np.float32(1e-12)))
        return out


def single(half: NDArray[np.float16]) -> NDArray[np.float32]:
    """Finite float16 values as float32: the values `astype` gives, in a few whole-array
    integer operations where numpy converts float16 one value at a time (a quantized search
    converts every row it rescores: docs/design/retrieval.md). Sign-extended to 32 bits and
    shifted, the sign lands in bits 28-31; the mask keeps it in bit 31 alone, and the power of
    two puts the exponent back. A stored vector is a unit vector, so no value is infinite or
    NaN."""
    bits = half.view(np.int16).astype(np.int32)
    bits <<= 13
    bits &= _SIGN_AND_BELOW
    out: NDArray[np.float32] = bits.view(np.float32)
    out *= _UNBIAS
    return out


def is_ascending(ids: NDArray[np.int64]) -> bool:
    return bool(np.all(ids[1:] > ids[:-1]))


def squares_and_codes(
    half: NDArray[np.float16], reference: NDArray[np.float32], block: int = 8192
) -> tuple[NDArray[np.float32], NDArray[np.uint64]]:
    """|v|² and the sign codes of every row, a block of rows at a time: converting all the
    rows to float32 at once would briefly hold several times the index in memory."""
    sq = np.empty(len(half), np.float32)
    codes = np.empty((len(half), words(half.shape[1])), np.uint64, order="F")
    for start in range(0, len(half), block):
        part = single(half[start : start + block])
        sq[start : start + block] = np.einsum("ij,ij->i", part, part)
        codes[start : start + block] = sign_codes(part, reference)
    return sq, codes


def exact_sum(half: NDArray[np.float16]) -> NDArray[np.int64]:
    """The rows' sum times 2**24, exactly (see _EXACT)."""
    total = np.zeros(half.shape[1], np.int64)
    for start in range(0, len(half), 8192):
        part = half[start : start + 8192].astype(np.float64) * _EXACT
        total += part.astype(np.int64).sum(axis=0)
    return total


def words(dim: int) -> int:
    return (dim + 63) // 64


def sign_codes(matrix: NDArray[np.floating], center: NDArray[np.float32]) -> NDArray[np.uint64]:
    """The sign bits of (row - center), packed into 64-bit words (zero-padded)."""
    bits = np.packbits(np.asarray(matrix, dtype=np.float32) > center, axis=1)
    width = words(matrix.shape[1]) * 8
    if bits.shape[1] < width:
        bits = np.pad(bits, ((0, 0), (0, width - bits.shape[1])))
    return np.ascontiguousarray(bits).view(np.uint64)
