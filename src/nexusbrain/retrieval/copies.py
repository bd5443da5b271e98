"""One hit per repeated text (pure over what the store returns).

A brain often holds one text in several places: the stable and nightly copies of a README,
two copies of a changelog, a note pasted into another. A result list that shows each of them
spends its k on one answer. So a search keeps the best-ranked chunk of each text and lists
where else it lives.

Two chunks are copies when they are indexed with the same context (a conversation turn's is
the turns around it and its day: the same words said on two days are two memories), and
- their texts are the same once case and whitespace are set aside, or
- they sit under the same heading path and their texts are nearly the same: signatures
  (storage/signature.py) at most NEAR_BITS apart, and most of their words shared.
The heading keeps apart the pages a template makes: CMake's CheckCSourceRuns and
CheckCXXSourceRuns differ in a few words, but they answer different questions and their
titles say so. The signatures spare the word comparison for all but likely pairs.

A hit lists the copies among the candidates the search read (twice k, at least ten), not every
copy the brain holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nexusbrain.records import Chunk, DocumentHead
from nexusbrain.retrieval.fusion import Fused
from nexusbrain.storage.signature import distance, signature

Found = Mapping[int, tuple[Chunk, DocumentHead]]
# One word changed in a chunk of fifty moves its signature by about 8 bits; unrelated texts
# lie 17 or more apart (docs/tuning.md, "Copies").
NEAR_BITS = 12
MIN_SHARED = 0.85  # of the two texts' distinct words, the share both hold


@dataclass(slots=True)
class Distinct:
    """The first chunk of each text among the candidates, in rank order, and the copies each
    one stands for (their chunk ids, in rank order)."""

    kept: list[Fused] = field(default_factory=list)
    copies: dict[int, list[int]] = field(default_factory=dict)
    copy_of: dict[int, int] = field(default_factory=dict)  # a copy's chunk id -> the kept one


def distinct(candidates: Sequence[Fused], found: Found, k: int) -> Distinct:
    """Walk the candidates in order, keeping the first `k` distinct texts; the candidates
    after those that the store returned are only matched to them as copies. A candidate the
    store did not return (not read, or retired meanwhile) is passed over."""
    out = Distinct()
    marks: list[tuple[int, Chunk]] = []  # each kept chunk's signature and chunk
    for candidate in candidates:
        entry = found.get(candidate.chunk_id)
        if entry is None:
            continue
        chunk = entry[0]
        mark = _signature(chunk)
        original = next((c for m, c in marks if _copies(m, c, mark, chunk)), None)
        if original is None:
            if len(out.kept) >= k:
                continue
            out.kept.append(candidate)
            out.copies[chunk.id] = []
            marks.append((mark, chunk))
        else:
            out.copies[original.id].append(chunk.id)
            out.copy_of[chunk.id] = original.id
    return out


def _copies(first_mark: int, first: Chunk, mark: int, chunk: Chunk) -> bool:
    if _normal(first.context) != _normal(chunk.context):
        return False
    apart = distance(first_mark, mark)
    if apart == 0 and _normal(first.text) == _normal(chunk.text):
        return True
    if apart > NEAR_BITS or first.heading_path != chunk.heading_path:
        return False
    a, b = set(_normal(first.text).split()), set(_normal(chunk.text).split())
    return len(a & b) >= MIN_SHARED * len(a | b)


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


def _signature(chunk: Chunk) -> int:
    return chunk.signature if chunk.signature is not None else signature(chunk.text)
