"""Search modes: named presets of one frozen search config. The constants are committed here and
their tuning (on dev data only) is written down in docs/tuning.md."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal

from nexusbrain.records import SearchMode


@dataclass(frozen=True, slots=True)
class PRFConfig:
    feedback_docs: int = 3  # BM25's top chunks, used as feedback with equal weights
    expansion_terms: int = 0  # RM3 terms added to the lexical query (0: no bm25_prf list)
    rocchio_alpha: float = 1.0
    rocchio_beta: float = 1.0


@dataclass(frozen=True, slots=True)
class ConfidenceModel:
    """The logistic curve of a result set's confidence (retrieval/confidence.py), fitted by
    scripts/fit_confidence.py on the dev sets (docs/tuning.md)."""

    intercept: float = -5.041
    coverage: float = 6.170  # per unit of the best hit's share of the query's idf weight
    matched: float = 2.582  # per unit of ln(1 + its rare words' worth)
    # Under this, "no good match": few answerable questions fall under it, most that no
    # chunk answers do (docs/tuning.md, "The confidence of a result set", has the shares).
    weak_below: float = 0.3


@dataclass(frozen=True, slots=True)
class SearchConfig:
    k: int = 10  # hits returned when the caller does not say
    depth: int = 100  # candidates each retriever contributes to fusion
    dense: bool = True
    fusion: Literal["rrf", "zscore"] = "zscore"
    prf: bool = False
    # RRF's k is small: the edge model's dense list is much weaker than BM25, and the usual
    # k = 60 let it reorder BM25's confident top ranks (docs/tuning.md).
    rrf_k: int = 2
    weights: MappingProxyType[str, float] = field(
        default_factory=lambda: MappingProxyType(
            {"bm25": 1.0, "dense": 0.3, "bm25_prf": 0.2, "dense_prf": 0.2}
        )
    )
    prf_config: PRFConfig = field(default_factory=PRFConfig)
    # Z-score fusion: the lowest z a list can give. The edge model's cosine for a chunk it
    # did not rank is weak evidence against it, so a dense list lifts candidates but sinks
    # one at most to about its own 100th hit (whose z is near -1 for every query).
    min_z: MappingProxyType[str, float] = field(
        default_factory=lambda: MappingProxyType({"dense": -1.0, "dense_prf": -1.0})
    )
    min_relative_score: float = 0.0  # drop hits whose fused score < this × the best one
    confidence: ConfidenceModel = field(default_factory=ConfidenceModel)
    withhold_weak: bool = False  # return nothing when the result set is no good match
    neighbours: int = 0  # recall: add this many chunks before/after each hit, as context
    graph: bool = False  # recall: add graph context for entities in the top hits
    budget_tokens: int = 2000  # recall: default token budget


PRESETS: MappingProxyType[SearchMode, SearchConfig] = MappingProxyType(
    {
        SearchMode.CONSERVATIVE: SearchConfig(
            k=5, min_relative_score=0.5, withhold_weak=True, budget_tokens=1000
        ),
        SearchMode.BALANCED: SearchConfig(),
        SearchMode.TOKENMAX: SearchConfig(
            k=20, prf=True, neighbours=1, graph=True, budget_tokens=6000
        ),
    }
)


def preset(mode: SearchMode, **overrides: object) -> SearchConfig:
    return replace(PRESETS[mode], **overrides)  # type: ignore[arg-type]
