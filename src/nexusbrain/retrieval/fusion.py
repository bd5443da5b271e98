"""Reciprocal rank fusion (pure): score = Σ_i w_i / (k + rank_i), ranks from 1."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nexusbrain.records import FusionContribution

DEFAULT_K = 60


@dataclass(frozen=True, slots=True)
class Fused:
    chunk_id: int
    score: float
    contributions: tuple[FusionContribution, ...]


def rrf(
    lists: Mapping[str, Sequence[int]],
    weights: Mapping[str, float] | None = None,
    k: int = DEFAULT_K,
) -> list[Fused]:
    """Fuse ranked lists of chunk ids. A list's weight defaults to 1.

    The result does not depend on the order of the lists: contributions are summed in list
    name order, and ties are broken by the best rank any list gave, then by the lower id.
    An id in no list gets no score. Within one list only an id's first occurrence counts."""
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    parts: dict[int, list[FusionContribution]] = {}
    for name in sorted(lists):
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        seen: set[int] = set()
        for rank, chunk_id in enumerate(lists[name], start=1):
            if chunk_id in seen:
                continue
            seen.add(chunk_id)
            parts.setdefault(chunk_id, []).append(
                FusionContribution(name, weight, rank, weight / (k + rank))
            )
    fused = [
        Fused(chunk_id, sum(c.contribution for c in contribs), tuple(contribs))
        for chunk_id, contribs in parts.items()
    ]
    fused.sort(key=lambda f: (-f.score, min(c.rank for c in f.contributions), f.chunk_id))
    return fused
