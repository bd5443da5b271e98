"""Fusion of ranked lists (pure).

- Reciprocal rank fusion: score = Σ_i w_i / (k + rank_i), ranks from 1.
- Z-score fusion: score = Σ_i w_i · (s_i − mean_i) / std_i, each list's scores standardised
  over that list's own results (a convex combination of normalised scores; unlike RRF it keeps
  how far apart the scores are, which on the dev sets helped a weak dense list add to BM25
  without reordering BM25's confident ranks, docs/tuning.md)."""

from __future__ import annotations

import math
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
    return _sorted(fused)


def zscore(
    lists: Mapping[str, Sequence[tuple[int, float]]],
    weights: Mapping[str, float] | None = None,
    extra: Mapping[str, Mapping[int, float]] | None = None,
    *,
    positions: int = 0,
    min_z: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Fuse lists of (id, score), higher scores better. A list's weight defaults to 1.

    The candidates are the ids found in any list. Each list's scores are standardised with
    the mean and standard deviation of its own scores, over `positions` places: a list
    shorter than that is taken as padded with zeros, since the retriever scored nothing else
    above zero (BM25 gives 0 to a chunk holding no query word; the dense index drops scores
    at or below 0). So a list holding one exact match gives it a high z instead of the 0 of
    a one-item list, and its lexical evidence counts. A list whose scores are all equal
    gives z = 0. A candidate missing from a list takes its score for that list from
    `extra[list][id]` when given (a retriever can score any chunk), else that list's lowest
    score. `min_z[list]` bounds that list's z from below: what a retriever did not rank can
    then sink a candidate only so far.

    The result does not depend on the order of the lists (contributions are summed in list
    name order), ties are broken by the best rank any list gave, then by the lower id, and
    an id in no list gets no score. Within one list only an id's first occurrence counts."""
    firsts: dict[str, dict[int, tuple[int, float]]] = {}
    for name in sorted(lists):
        found: dict[int, tuple[int, float]] = {}
        for position, (item, value) in enumerate(lists[name], start=1):
            found.setdefault(item, (position, float(value)))
        if found:
            firsts[name] = found
    candidates = sorted({item for found in firsts.values() for item in found})
    parts: dict[int, list[FusionContribution]] = {item: [] for item in candidates}
    for name, found in firsts.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        scores = [value for _, value in found.values()]
        mean, std = standardised(scores, positions)
        floor = min(scores)
        known = (extra or {}).get(name, {})
        lowest = (min_z or {}).get(name, -math.inf)
        for item in candidates:
            rank: int | None = None
            if item in found:
                rank, score = found[item]
            else:
                score = known.get(item, floor)
            z = max(lowest, (score - mean) / std) if std > 0 else 0.0
            parts[item].append(FusionContribution(name, weight, rank, weight * z, z))
    fused = [
        Fused(item, sum(c.contribution for c in contribs), tuple(contribs))
        for item, contribs in parts.items()
    ]
    return _sorted(fused)


def standardised(scores: Sequence[float], positions: int = 0) -> tuple[float, float]:
    """The mean and (population) standard deviation of the scores, padded with zeros to
    `positions` values when there are fewer."""
    n = max(len(scores), positions)
    mean = sum(scores) / n
    spread = sum((x - mean) ** 2 for x in scores) + (n - len(scores)) * mean**2
    return mean, (spread / n) ** 0.5


def _sorted(fused: list[Fused]) -> list[Fused]:
    def best_rank(f: Fused) -> int:
        return min((c.rank for c in f.contributions if c.rank is not None), default=0)

    fused.sort(key=lambda f: (-f.score, best_rank(f), f.chunk_id))
    return fused
