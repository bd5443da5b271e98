"""The functions that turn user words into FTS5 queries. Nothing else builds MATCH text."""

from __future__ import annotations

from collections.abc import Sequence


def fts_or_query(terms: Sequence[str]) -> str:
    """Quote every term as an FTS5 string and join them with OR.

    Inside an FTS5 string only the double quote is special, and it is escaped by doubling,
    so no character of a term can be read as query syntax. A NUL would end the string early
    (SQLite passes the query as a C string), so it is dropped. Empty terms are dropped.
    """
    cleaned = (term.replace("\x00", "") for term in terms)
    quoted = ['"' + term.replace('"', '""') + '"' for term in cleaned if term]
    return " OR ".join(quoted)


def split_terms(terms: Sequence[str], common: Sequence[str]) -> tuple[list[str], list[str]]:
    """The rarer terms and the common ones, each in query order; (every term, []) when the
    query is not split: no term is common, or every one is. Empty terms are dropped."""
    skip = set(common)
    rare = [t for t in terms if t and t not in skip]
    frequent = [t for t in terms if t and t in skip]
    if not rare or not frequent:
        return [t for t in terms if t], []
    return rare, frequent


def match_expressions(terms: Sequence[str], common: Sequence[str]) -> list[str]:
    """FTS5 queries whose union is "any of the rarer terms", each scoring every term once.

    Without common terms (or with only common ones) that is the plain OR query. Otherwise it
    is split in two disjoint halves: chunks with a rarer term and no common one, and chunks
    with both. Each phrase appears once in each, so bm25() is the chunk's full score over all
    the terms; chunks that hold only common terms are never scored, which is what makes a
    query with a word found in a third of the chunks cheap."""
    rare, frequent = split_terms(terms, common)
    if not frequent:
        return [m for m in (fts_or_query(rare),) if m]
    return [
        f"({fts_or_query(rare)}) NOT ({fts_or_query(frequent)})",
        f"({fts_or_query(rare)}) AND ({fts_or_query(frequent)})",
    ]


def bm25_call(table: str, weights: Sequence[float]) -> str:
    """FTS5's bm25() over `table`'s columns with these weights, as SQL."""
    return f"bm25({table}, " + ", ".join(repr(float(w)) for w in weights) + ")"
