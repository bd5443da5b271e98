"""Query terms for the lexical retriever: words out of natural-language text (pure)."""

from __future__ import annotations

import re

from nexusbrain.dates import named_tokens

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
# Function words that carry no topic: never worth adding to a query.
FEEDBACK_STOPWORDS = STOPWORDS | frozenset(
    (
        "about above after again against all also am any because been before being below"
        " between both can could did does doing down during each even ever every few from"
        " further had has have having her here hers herself him himself his how however i its"
        " itself just may me might more most much must my myself nor now off once only other"
        " ought our ours ourselves out over own same shall she should since so some still than"
        " those through thus too under until up upon very we were what when where whether"
        " which while who whom whose why within without would yet you your yours yourself"
        " yourselves one two three also use used using well like get got"
    ).split()
)
_WORD = re.compile(r"\w+", re.UNICODE)


def query_terms(
    text: str, *, drop_stopwords: bool = True, extended_stopwords: bool = False
) -> list[str]:
    """Lower-cased words of `text`, in order; a word said twice is there twice (BM25 weighs
    it for that: storage/bm25.py).

    Stopwords (Lucene's set, or with `extended_stopwords` also question and function words)
    are dropped unless that would leave nothing: a query of only stopwords still searches.
    A day or month that the text names ("on 9 November, 2022") adds its token, which the
    turns said then are indexed with (nexusbrain/dates.py)."""
    words = [w.lower() for w in _WORD.findall(text)]
    days = named_tokens(text)
    if not drop_stopwords:
        return words + days
    stop = FEEDBACK_STOPWORDS if extended_stopwords else STOPWORDS
    kept = [w for w in words if w not in stop]
    return (kept or words) + days
