"""The rerank stage: a reranker re-orders the fused top candidates, within a time budget.

The fused top `depth` (a mode's setting, modes.RerankConfig) are scored by the reranker; each
candidate's new score is (1 − weight) × its fused score's z plus weight × the reranker's
score's z, both standardised over those candidates, so that the reranker's scale (a cosine,
a logit) does not matter and `weight` 1 is the reranker's order alone. Ties keep the fused
order. The weight (0.3) comes from a sweep on the dev sets (docs/tuning.md, "Rerankers and
your own models"): the fused score still counts. What ranked below the top stays below it, in
its fused order.

A reranker that fails, or does not answer within the budget, leaves the fused order, and the
search says so in its trace's notes; a search never fails for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as Late
from dataclasses import dataclass

import numpy as np

from nexusbrain.errors import BrainError
from nexusbrain.records import RerankChange
from nexusbrain.rerankers import Reranker
from nexusbrain.retrieval.fusion import Fused, standardised
from nexusbrain.retrieval.modes import RerankConfig


@dataclass(frozen=True, slots=True)
class Reranked:
    """The candidates in their new order, each one's rank change and score (by chunk id), the
    reranker's score of the new first, or the note that says why the fused order stands."""

    order: list[Fused]
    changes: Mapping[int, RerankChange]
    best: float | None = None
    note: str | None = None


def calibrated(reranker: Reranker) -> bool:
    """Whether the confidence models' `rerank` feature reads this reranker's scores: they were
    fitted on cosines (the `quality` reranker's); a server's or cross-encoder's scores are on
    scales of their own, and the plain model serves."""
    return reranker.model_id.startswith("cosine:")


def combine(fused: Sequence[float], scores: Sequence[float], weight: float) -> list[int]:
    """The candidates' new order (indices), by (1 − weight) × z(fused) + weight × z(scores),
    ties in the fused order (pure)."""
    if not fused:
        return []
    combined = (1.0 - weight) * _z(fused) + weight * _z(scores)
    return sorted(range(len(fused)), key=lambda i: (-combined[i], i))


def _z(values: Sequence[float]) -> np.ndarray:
    mean, spread = standardised(values)
    array = np.asarray(values, dtype=np.float64)
    return (array - mean) / spread if spread > 0 else np.zeros(len(array))


def rerank(
    reranker: Reranker,
    query: str,
    candidates: list[Fused],
    texts: Mapping[int, str],
    config: RerankConfig,
    pool: ThreadPoolExecutor,
) -> Reranked:
    """The candidates re-ordered by the reranker's scores of their texts (by chunk id; one
    without a text keeps its fused place below the others), within the budget."""
    scored = [f for f in candidates if f.chunk_id in texts]
    if not scored:
        return Reranked(candidates, {})
    asked = pool.submit(reranker.score, query, [texts[f.chunk_id] for f in scored])
    try:
        scores = asked.result(timeout=config.budget)
    except Late:
        note = f"the reranker {reranker.model_id} took longer than {config.budget:g} s"
        return Reranked(candidates, {}, note=f"{note}: the fused order stands")
    except BrainError as exc:
        return Reranked(candidates, {}, note=f"{exc.message}: the fused order stands")
    order = combine([f.score for f in scored], scores, config.weight)
    before = {f.chunk_id: i for i, f in enumerate(candidates, 1)}
    ranked = [scored[i] for i in order] + [f for f in candidates if f.chunk_id not in texts]
    changes = {
        f.chunk_id: RerankChange(reranker.model_id, before[f.chunk_id], after, scores[i])
        for after, (i, f) in enumerate(((i, scored[i]) for i in order), 1)
    }
    return Reranked(ranked, changes, best=scores[order[0]])
