"""Search modes: named presets of one frozen search config. The constants are committed here and
their tuning (on dev data only) is written down in docs/tuning.md."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal

from nexusbrain.config import Profile
from nexusbrain.records import SearchMode


@dataclass(frozen=True, slots=True)
class PRFConfig:
    feedback_docs: int = 3  # BM25's top chunks, used as feedback with equal weights
    expansion_terms: int = 0  # RM3 terms added to the lexical query (0: no bm25_prf list)
    rocchio_alpha: float = 1.0
    rocchio_beta: float = 1.0


@dataclass(frozen=True, slots=True)
class RerankConfig:
    """How a reranker, when the brain has one, re-orders the fused top (retrieval/rerank.py).
    Swept with the quality reranker on the dev sets (scripts/tune_rerank.py): the depth is the
    deepest whose re-scoring fit a search on a busy 2-core machine, the budget that time with
    margin (docs/tuning.md, "Rerankers and your own models")."""

    depth: int = 20  # the fused candidates the reranker re-orders (0: none)
    budget: float = 6.0  # seconds it may take; past them the fused order stands
    weight: float = 0.3  # the reranker's share of a candidate's new score


@dataclass(frozen=True, slots=True)
class ConfidenceModel:
    """A logistic model of a result set's confidence: σ(intercept + Σ weight × feature),
    the features named as in retrieval/confidence.py (`Feature`). Fitted by
    scripts/fit_confidence.py on the dev sets (docs/tuning.md)."""

    intercept: float
    weights: MappingProxyType[str, float]


def _model(intercept: float, **weights: float) -> ConfidenceModel:
    return ConfidenceModel(intercept, MappingProxyType(weights))


@dataclass(frozen=True, slots=True)
class ProfileConfidence:
    """The confidence models of one embedding profile: `plain` for a search whose dense
    list ran, `reranked` for one whose hits a reranker also scored (None until one is
    fitted: the plain model then serves). A search without a dense list (lexical only, or
    `dense=False`) takes the `none` profile's model whatever the profile."""

    plain: ConfidenceModel
    reranked: ConfidenceModel | None = None


# BEGIN fitted confidence (scripts/fit_confidence.py --write rewrites each model)
_LEXICAL = _model(-4.0321, coverage=4.2746, matched=2.6065)
_EDGE = _model(-4.2269, coverage=3.1418, matched=1.7325, cosine=3.1611, overlap=2.0686)
# quality: fitted on Cranfield, CISI, MED and LoCoMo dev only (docs/tuning.md)
_QUALITY = _model(-4.6673, coverage=2.4831, matched=1.4873, cosine=5.7506, overlap=0.9702)
# END fitted confidence
CONFIDENCE: MappingProxyType[Profile, ProfileConfidence] = MappingProxyType(
    {
        Profile.EDGE: ProfileConfidence(_EDGE),
        Profile.QUALITY: ProfileConfidence(_QUALITY),
        Profile.HASHING: ProfileConfidence(_LEXICAL),
        Profile.NONE: ProfileConfidence(_LEXICAL),
        # a user's own model: its cosines are a transformer's, as MiniLM's are, and no dev set
        # was scored with it (scripts/fit_confidence.py --profile fits one for it)
        Profile.OPENAI: ProfileConfidence(_QUALITY),
        Profile.ONNX: ProfileConfidence(_QUALITY),
    }
)


@dataclass(frozen=True, slots=True)
class Fusion:
    """The fusion constants of one embedding profile: each list's weight, and the lowest z a
    list can give (z-score fusion). A stronger dense list earns a larger weight, so they belong
    to the model that made the list (tuned per profile, docs/tuning.md)."""

    weights: MappingProxyType[str, float]
    min_z: MappingProxyType[str, float]


def _fusion(dense: float, floor: float | None) -> Fusion:
    bounds = {} if floor is None else {"dense": floor, "dense_prf": floor}
    weights = {"bm25": 1.0, "dense": dense, "bm25_prf": 0.2, "dense_prf": 0.2}
    return Fusion(MappingProxyType(weights), MappingProxyType(bounds))


FUSION: MappingProxyType[Profile, Fusion] = MappingProxyType(
    {
        # A floor of -1: the edge model's cosine for a chunk it did not rank is weak evidence
        # against it, so its list lifts candidates but sinks one at most to about its own
        # 100th hit (whose z is near -1 for every query). 0.4 keeps every dev set at or above
        # BM25 and an exact match on a rare id first in every mode; 0.5 lost one of 220 ids
        # to a look-alike in tokenmax (docs/tuning.md).
        Profile.EDGE: _fusion(0.4, -1.0),
        # MiniLM's list earns more weight on the long-query sets but loses LoCoMo's short
        # turns to BM25 at 0.4 already (docs/tuning.md).
        Profile.QUALITY: _fusion(0.3, -1.0),
        Profile.HASHING: _fusion(0.3, -1.0),
        Profile.NONE: _fusion(0.3, -1.0),
    }
)
# A profile without an entry (a user's own model) takes the quality profile's constants: its
# list comes from a transformer, as the quality model's does.
DEFAULT_FUSION = FUSION[Profile.QUALITY]


def fusion_of(profile: Profile) -> Fusion:
    return FUSION.get(profile, DEFAULT_FUSION)


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
    # Each list's weight, and below the lowest z a list can give; None: the embedding
    # profile's (FUSION), which is what a preset uses.
    weights: MappingProxyType[str, float] | None = None
    prf_config: PRFConfig = field(default_factory=PRFConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    min_z: MappingProxyType[str, float] | None = None
    min_relative_score: float = 0.0  # drop hits whose fused score < this × the best one
    distinct: bool = True  # one hit per repeated text, the others listed as its copies
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
