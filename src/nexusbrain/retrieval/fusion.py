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

import numpy as np

from nexusbrain.records import FusionContribution

DEFAULT_K = 60


class Fused:
    """One candidate of a fused ranking: its id, fused score and each list's share of it.

    Z-score fusion scores every candidate in every list, but a search shows only its first
    few; so a z-score ranking keeps the shares in one table per search and builds a
    candidate's `contributions` when they are read."""

    __slots__ = ("_contributions", "_row", "_table", "chunk_id", "score")

    def __init__(
        self,
        chunk_id: int,
        score: float,
        contributions: tuple[FusionContribution, ...] | None = None,
        *,
        table: _Shares | None = None,
        row: int = 0,
    ) -> None:
        if contributions is None and table is None:
            raise ValueError("a Fused needs its contributions or a table of shares")
        self.chunk_id = chunk_id
        self.score = score
        self._contributions = contributions
        self._table = table
        self._row = row

    @property
    def contributions(self) -> tuple[FusionContribution, ...]:
        if self._contributions is None:
            assert self._table is not None
            self._contributions = self._table.row(self._row)
        return self._contributions

    def shown_as(self, chunk_id: int) -> Fused:
        """The same fused candidate, shown through another chunk (a document's best)."""
        return Fused(chunk_id, self.score, self._contributions, table=self._table, row=self._row)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fused):
            return NotImplemented
        return (self.chunk_id, self.score, self.contributions) == (
            other.chunk_id,
            other.score,
            other.contributions,
        )

    def __hash__(self) -> int:
        return hash((self.chunk_id, self.score))

    def __repr__(self) -> str:
        return f"Fused({self.chunk_id}, {self.score!r}, {self.contributions!r})"


@dataclass(frozen=True, slots=True)
class _Shares:
    """Each list's rank (0: not ranked), z and weighted z for every candidate of one z-score
    fusion, in list name order."""

    names: tuple[str, ...]
    weights: tuple[float, ...]
    ranks: tuple[list[int], ...]
    zs: tuple[list[float], ...]
    parts: tuple[list[float], ...]

    def row(self, i: int) -> tuple[FusionContribution, ...]:
        return tuple(
            FusionContribution(name, weight, ranks[i] or None, parts[i], zs[i])
            for name, weight, ranks, zs, parts in zip(
                self.names, self.weights, self.ranks, self.zs, self.parts, strict=True
            )
        )


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
    where = {item: i for i, item in enumerate(candidates)}
    total = np.zeros(len(candidates))
    best = np.full(len(candidates), np.iinfo(np.int64).max)
    used, ranks, zs, parts = [], [], [], []
    for name, found in firsts.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        used.append(weight)
        scores = [value for _, value in found.values()]
        mean, std = standardised(scores, positions)
        floor = min(scores)
        known = (extra or {}).get(name, {})
        values = np.array([known.get(item, floor) for item in candidates])
        rank = np.zeros(len(candidates), dtype=np.int64)
        at = np.fromiter((where[item] for item in found), np.int64, len(found))
        values[at] = scores
        rank[at] = [position for position, _ in found.values()]
        if std > 0:
            z = np.maximum((values - mean) / std, (min_z or {}).get(name, -math.inf))
        else:
            z = np.zeros(len(candidates))
        part = weight * z
        total += part
        np.minimum(best, np.where(rank > 0, rank, best), out=best)
        ranks.append(rank.tolist())
        zs.append(z.tolist())
        parts.append(part.tolist())
    table = _Shares(tuple(firsts), tuple(used), tuple(ranks), tuple(zs), tuple(parts))
    # highest score first; ties by the best rank any list gave, then by the lower id
    order = np.lexsort((np.array(candidates, dtype=np.int64), best, -total)).tolist()
    scores_of = total.tolist()
    return [Fused(candidates[i], scores_of[i], table=table, row=i) for i in order]


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
