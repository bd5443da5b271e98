"""Query terms for the lexical retriever: words out of natural-language text (pure)."""

from __future__ import annotations

import re

# Lucene's classic English stop set (the one Anserini's BM25 baselines use).
STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    }
)
_WORD = re.compile(r"\w+", re.UNICODE)


def query_terms(text: str, *, drop_stopwords: bool = True) -> list[str]:
    """Lower-cased distinct words of `text`, in first-seen order.

    Stopwords are dropped unless that would leave nothing (a query of only stopwords
    still searches for them)."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))
    if not drop_stopwords:
        return words
    kept = [w for w in words if w not in STOPWORDS]
    return kept or words
