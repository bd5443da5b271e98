"""Pseudo-relevance feedback (pure): RM3-style expansion terms for the lexical side and a
Rocchio-style query vector for the dense side. Constants come from `PRFConfig`."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from nexusbrain.embeddings.base import normalise_rows
from nexusbrain.retrieval.terms import FEEDBACK_STOPWORDS

_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)


def rm3_terms(
    texts: Sequence[str],
    weights: Sequence[float],
    query_terms: Sequence[str],
    n_terms: int,
) -> list[tuple[str, float]]:
    """The `n_terms` words most likely under the relevance model of the feedback texts.

    P(w|R) ∝ Σ_d P(w|d)·P(d|q), with P(w|d) = tf(w,d)/|d| and P(d|q) the feedback weights
    normalised to sum to 1. Query words, stopwords, numbers and words under three letters are
    left out. Ties are broken alphabetically, so the result is deterministic."""
    total_weight = sum(weights)
    if not texts or total_weight <= 0 or n_terms <= 0:
        return []
    skip = set(query_terms) | FEEDBACK_STOPWORDS
    model: dict[str, float] = {}
    for text, weight in zip(texts, weights, strict=True):
        words = [w.lower() for w in _WORD.findall(text)]
        if not words:
            continue
        share = weight / total_weight / len(words)
        for word, tf in Counter(words).items():
            if word not in skip:
                model[word] = model.get(word, 0.0) + tf * share
    ranked = sorted(model.items(), key=lambda item: (-item[1], item[0]))
    return ranked[:n_terms]


def rocchio(
    query: NDArray[np.float32],
    feedback: NDArray[np.float32],
    weights: Sequence[float],
    alpha: float,
    beta: float,
) -> NDArray[np.float32]:
    """alpha·q + beta·(weighted mean of the feedback vectors), back to unit length."""
    if len(feedback) == 0 or sum(weights) <= 0:
        return query
    w = np.asarray(weights, dtype=np.float32)
    centroid = (feedback * w[:, None]).sum(axis=0) / w.sum()
    mixed = alpha * query + beta * centroid
    out: NDArray[np.float32] = normalise_rows(mixed[None, :].astype(np.float32))[0]
    return out
