"""How likely a result set is to hold a good match (pure).

From the query words its best hit holds (in its text, heading path or context). Each query
token weighs its idf times 1 + ln(times said), as BM25 weighs it. A rare word of the query
that the best hit lacks costs the most, and a word no chunk holds has the largest idf there
is, so a nonsense query's best hit holds nothing of its weight. Two quantities:

    coverage = Σ weight of the tokens the best hit holds / Σ weight of the query's tokens
    matched  = Σ weight of the tokens the best hit holds / idf of a word no chunk holds
    value    = 1 / (1 + exp(−(a + b · coverage + c · ln(1 + matched))))

`matched` counts rare words' worth: measured against the largest idf, it means the same in a
brain of twenty notes as in one of a million chunks, and it tells a short query on a rare
word (an id: coverage 1, one rare word's worth) from one on a word every chunk holds.
`value` estimates the chance that one of the first five hits is relevant: a, b and c were
fitted by logistic regression on the five dev sets' questions and on questions that cannot
be answered there (other sets' questions, made-up words), `scripts/fit_confidence.py`;
docs/tuning.md has the fit, each held-out set's calibration, and why the dense list's scores
are not in it (its margin does not tell nonsense from a question, its cosines mean
something different for each model).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping

from nexusbrain.records import Confidence
from nexusbrain.retrieval.modes import ConfidenceModel

STRONG_ABOVE = 0.7  # said to be a good match from here (below: a possible one)


def confidence(
    weights: Mapping[str, float], rarest: float, held: Collection[str], model: ConfidenceModel
) -> Confidence:
    """The confidence of a result set whose best hit holds the tokens `held`, for a query
    whose tokens weigh `weights`, where a token no chunk holds weighs `rarest`. A query
    without tokens (only punctuation) has coverage 0."""
    total = sum(weights.values())
    held_weight = sum(w for token, w in weights.items() if token in held)
    coverage = held_weight / total if total > 0 else 0.0
    matched = held_weight / rarest if rarest > 0 else 0.0
    logit = model.intercept + model.coverage * coverage + model.matched * math.log1p(matched)
    value = 1.0 / (1.0 + math.exp(-logit))
    return Confidence(value, coverage, matched, value < model.weak_below)


def describe(value: Confidence | None, *, hits: int) -> str:
    """The confidence in words, the same in every interface."""
    if hits == 0:
        return "No good match: nothing in the brain matches the query well enough to return."
    if value is None:
        return ""
    held = f"the best hit holds {value.coverage:.0%} of the query's rare-word weight"
    if value.weak:
        return (
            f"No good match (confidence {value.value:.2f}): {held}, "
            "so these hits probably do not answer the query."
        )
    if value.value < STRONG_ABOVE:
        return f"Possible match (confidence {value.value:.2f}): {held}; check the hits."
    return f"Good match (confidence {value.value:.2f}): {held}."
