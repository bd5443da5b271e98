"""A chunk's near-duplicate signature (pure): a 64-bit SimHash of its text's word shingles.

Two chunks whose texts are the same after case and whitespace are set aside get the same
signature; texts that differ in a few words out of many get signatures a few bits apart
(Charikar's SimHash: each of the 64 bits is the sign of a sum over the shingles' hashes). A
search keeps one hit per text, its copies listed under it (retrieval/copies.py). Every backend
stores it with each chunk, so it is computed once, at write time.

- Words are what whitespace separates, case-folded; the shingles are runs of SHINGLE words.
- A text of fewer than SHINGLE words hashes its words as one shingle: a short text matches only
  its exact copies.
- Everything runs in numpy (words hashed as polynomials over their bytes, mixed with
  splitmix64's finaliser), once per chunk.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

SHINGLE = 3  # words a shingle
_IN_WORD = np.ones(256, dtype=np.bool_)  # by byte: not ASCII whitespace
_IN_WORD[[9, 10, 11, 12, 13, 32]] = False
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_ODD = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9], dtype=np.uint64)
_BITS = np.uint64(1) << np.arange(64, dtype=np.uint64)
with np.errstate(over="ignore"):
    _POWERS = np.cumprod(np.full(64, 0x100000001B3, dtype=np.uint64))  # a byte's weight by place


def signature(text: str) -> int:
    """The text's signature, as a signed 64-bit integer (as SQLite and PostgreSQL store it)."""
    with np.errstate(over="ignore"):  # the hashes wrap around 2**64 by design
        value = _unsigned(text)
    return value - (1 << 64) if value >= 1 << 63 else value


def _unsigned(text: str) -> int:
    hashes = _word_hashes(text)
    if len(hashes) == 0:
        return 0
    if len(hashes) < SHINGLE:
        hashes = np.pad(hashes, (0, SHINGLE - len(hashes)))
    shingles = _mix(_windows(hashes))
    # each shingle's 64 bits, bit i in column i (the little-endian bytes, each from its low bit)
    bits = np.unpackbits(shingles.astype("<u8", copy=False).view(np.uint8), bitorder="little")
    votes = bits.reshape(len(shingles), 64).sum(axis=0, dtype=np.int64) * 2 - len(shingles)
    return int((_BITS[votes > 0]).sum(dtype=np.uint64))


def _word_hashes(text: str) -> NDArray[np.uint64]:
    """A hash of each word (a run of bytes between ASCII whitespace, case-folded), in order:
    a polynomial over its UTF-8 bytes, summed per word in one numpy pass."""
    data = np.frombuffer(text.casefold().encode("utf-8"), dtype=np.uint8)
    inside = _IN_WORD[data]
    kept = np.flatnonzero(inside)
    if not len(kept):
        return np.zeros(0, dtype=np.uint64)
    first = inside.copy()
    first[1:] &= ~inside[:-1]
    starts = np.flatnonzero(first)
    word = np.cumsum(first)[kept] - 1
    offset = np.minimum(kept - starts[word], len(_POWERS) - 1)
    terms = (data[kept].astype(np.uint64) + np.uint64(1)) * _POWERS[offset]
    # each word's first byte among the kept bytes: words are runs, so it is where its number
    # first appears in `word`
    sums = np.add.reduceat(terms, np.searchsorted(word, np.arange(len(starts))))
    return _mix(sums)


def distance(a: int, b: int) -> int:
    """How many bits two signatures differ in."""
    return ((a ^ b) & 0xFFFFFFFFFFFFFFFF).bit_count()


def _windows(hashes: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """Each run of SHINGLE consecutive word hashes, combined in order."""
    count = len(hashes) - SHINGLE + 1
    out = np.zeros(count, dtype=np.uint64)
    for offset in range(SHINGLE):
        out ^= hashes[offset : offset + count] * _ODD[offset]
    return out


def _mix(values: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """splitmix64's finaliser: every input bit moves about half the output bits."""
    values = values ^ (values >> np.uint64(30))
    values = values * _M1
    values = values ^ (values >> np.uint64(27))
    values = values * _M2
    return values ^ (values >> np.uint64(31))
