"""The one function that turns user words into an FTS5 query. Nothing else builds MATCH text."""

from __future__ import annotations

from collections.abc import Sequence


def fts_or_query(terms: Sequence[str]) -> str:
    """Quote every term as an FTS5 string and join them with OR.

    Inside an FTS5 string only the double quote is special, and it is escaped by doubling,
    so no character of a term can be read as query syntax. Empty terms are dropped.
    """
    quoted = ['"' + term.replace('"', '""') + '"' for term in terms if term]
    return " OR ".join(quoted)
