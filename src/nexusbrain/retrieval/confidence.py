"""How likely a result set is to hold a good match (pure).

`value` estimates the chance that one of the first five hits is relevant: a logistic model
σ(intercept + Σ weight × feature) over the evidence the search already holds once its lists
are fused (`records.Evidence`), fitted per embedding profile on the dev sets' questions and
on questions that cannot be answered there (scripts/fit_confidence.py; docs/tuning.md has
the fit and each held-out set's calibration). The features:

- `coverage`: the share of the query's idf weight that the best hit holds (each query token
  weighs its idf times 1 + ln(times said), as BM25 weighs it, in the best hit's text,
  heading path or context). A word no chunk holds has the largest idf there is, so a
  nonsense query's best hit holds nothing of its weight.
- `matched`: ln(1 + that weight in rare words' worth), the weight over the idf of a word no
  chunk holds. It means the same in a brain of twenty notes as in one of a million chunks,
  and tells a short query on a rare word (an id) from one on a word every chunk holds.
- `cosine`: the best hit's similarity to the query in the dense list's terms (for the edge
  model, around the corpus mean: embeddings/profiles.py `centred`). It sees a match of
  meaning that shares no word; since each model's cosines sit elsewhere, each profile has
  its own model. A similarity at or below zero counts 0: no evidence either way, as the
  dense index itself drops such scores (a model that does not know the query's script,
  as the edge model does not know Chinese, can put its best hit far below zero).
- `fused_margin`, `lexical_margin`, `dense_margin`: how far the first hit leads the second
  (fused score; BM25's, relative to its first; the dense cosine).
- `lexical_rank`, `dense_rank`: 1 / the best hit's rank in each list (0: not ranked), and
  `overlap`: the share of BM25's first five that the dense list's first five hold. Lists
  that agree on the top are surer than a winner only one of them found.
- `rerank`: the reranker's score of the best hit, read only by a profile's `reranked` model.

Which model: the `none` profile's when no dense list ran, else the profile's `reranked` one
when a reranker scored the hits and one was fitted, else the profile's `plain` one. A
feature the evidence lacks counts 0 (the chosen model never weighs one).

The words say what the value means, the same for every model (each is fitted to be a
calibrated chance): under `WEAK_BELOW` it is "no good match" (and `conservative` withholds
the result set), from `GOOD_FROM` a "good match", between them a possible one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import StrEnum

from nexusbrain.config import Profile
from nexusbrain.records import Confidence, Evidence
from nexusbrain.retrieval.modes import CONFIDENCE, ConfidenceModel, ProfileConfidence

WEAK_BELOW = 0.3  # "no good match" under this chance: unlikely to hold an answer
GOOD_FROM = 0.85  # "good match" from this chance (docs/tuning.md: held-out precision)
OVERLAP_DEPTH = 5  # the first hits of each list compared by `overlap`


class Feature(StrEnum):
    COVERAGE = "coverage"
    MATCHED = "matched"
    COSINE = "cosine"
    FUSED_MARGIN = "fused_margin"
    LEXICAL_MARGIN = "lexical_margin"
    DENSE_MARGIN = "dense_margin"
    LEXICAL_RANK = "lexical_rank"
    DENSE_RANK = "dense_rank"
    OVERLAP = "overlap"
    RERANK = "rerank"


class Band(StrEnum):
    """The confidence in a word, as `describe` says it."""

    GOOD = "good match"
    POSSIBLE = "possible match"
    NONE = "no good match"


def features(evidence: Evidence) -> dict[Feature, float]:
    """The model's inputs from the evidence; what the evidence lacks counts 0."""
    overlap = evidence.overlap
    return {
        Feature.COVERAGE: evidence.coverage,
        Feature.MATCHED: math.log1p(evidence.matched),
        Feature.COSINE: max(evidence.cosine or 0.0, 0.0),
        Feature.FUSED_MARGIN: evidence.fused_margin,
        Feature.LEXICAL_MARGIN: evidence.lexical_margin,
        Feature.DENSE_MARGIN: evidence.dense_margin or 0.0,
        Feature.LEXICAL_RANK: _reciprocal(evidence.lexical_rank),
        Feature.DENSE_RANK: _reciprocal(evidence.dense_rank),
        Feature.OVERLAP: overlap / OVERLAP_DEPTH if overlap is not None else 0.0,
        Feature.RERANK: evidence.rerank or 0.0,
    }


def _reciprocal(rank: int | None) -> float:
    return 1.0 / rank if rank else 0.0


def chosen_model(
    profile: Profile,
    evidence: Evidence,
    table: Mapping[Profile, ProfileConfidence] = CONFIDENCE,
) -> ConfidenceModel:
    """The model of `table` (the fitted ones by default) that reads this evidence (see the
    module's docstring)."""
    if evidence.cosine is None:
        return table[Profile.NONE].plain
    models = table[profile]
    if evidence.rerank is not None and models.reranked is not None:
        return models.reranked
    return models.plain


def chance(model: ConfidenceModel, evidence: Evidence) -> float:
    """σ(intercept + Σ weight × feature)."""
    found = features(evidence)
    logit = model.intercept + sum(w * found[Feature(name)] for name, w in model.weights.items())
    return _sigmoid(logit)


def _sigmoid(logit: float) -> float:
    if logit >= 0:
        return 1.0 / (1.0 + math.exp(-logit))
    tail = math.exp(logit)  # no overflow for a very negative logit
    return tail / (1.0 + tail)


def confidence(evidence: Evidence, profile: Profile) -> Confidence:
    """The confidence of a result set, by the profile's model for this evidence."""
    value = chance(chosen_model(profile, evidence), evidence)
    return Confidence(value, value < WEAK_BELOW, evidence)


def held_weight(weights: Mapping[str, float], rarest: float, held: set[str]) -> tuple[float, float]:
    """(coverage, matched) of a best hit holding the tokens `held`, for a query whose tokens
    weigh `weights`, where a token no chunk holds weighs `rarest`. A query without tokens
    (only punctuation) has coverage 0."""
    total = sum(weights.values())
    weight = sum(w for token, w in weights.items() if token in held)
    return (weight / total if total > 0 else 0.0), (weight / rarest if rarest > 0 else 0.0)


def band(value: Confidence) -> Band:
    return band_of(value.value, weak=value.weak)


def band_of(value: float, *, weak: bool) -> Band:
    """The band of a confidence value (and whether it was called weak, as a server says)."""
    if weak:
        return Band.NONE
    return Band.GOOD if value >= GOOD_FROM else Band.POSSIBLE


def describe(value: Confidence | None, *, hits: int) -> str:
    """The confidence in words, the same in every interface."""
    if hits == 0:
        return "No good match: nothing in the brain matches the query well enough to return."
    if value is None:
        return ""
    found = band(value)
    if found is Band.NONE:
        # the meaning side is not named: "the closest in meaning" of a poor list vouches for
        # nothing, and read beside "no good match" it sounds as if it did
        return (
            f"No good match (confidence {value.value:.2f}): {_held(value)}, "
            "so these hits probably do not answer the query."
        )
    said = _evidence_in_words(value)
    if found is Band.POSSIBLE:
        return f"Possible match (confidence {value.value:.2f}): {said}; check the hits."
    return f"Good match (confidence {value.value:.2f}): {said}."


def _held(value: Confidence) -> str:
    return f"the best hit holds {value.coverage:.0%} of the query's rare-word weight"


def _evidence_in_words(value: Confidence) -> str:
    held = _held(value)
    rank = value.evidence.dense_rank
    if value.cosine is None:
        return held
    if rank == 1:
        return f"{held} and is the closest in meaning"
    if rank is not None and rank <= OVERLAP_DEPTH:
        return f"{held} and is among the {OVERLAP_DEPTH} closest in meaning"
    return f"{held}; other chunks are closer in meaning"
