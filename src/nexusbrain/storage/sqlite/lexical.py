"""The SQLite backend's lexical index: BM25 over FTS5, scored from FTS5's postings in numpy where
it can be (fts_postings.py), else by FTS5's own bm25(); the same rows and scores either way."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from nexusbrain.config import LexicalConfig
from nexusbrain.errors import StorageError
from nexusbrain.records import Scored, SearchFilters
from nexusbrain.storage.base import LexicalHits
from nexusbrain.storage.sqlite.filters import filter_sql
from nexusbrain.storage.sqlite.fts import bm25_call, match_expressions
from nexusbrain.storage.sqlite.postings import PostingScorer

TABLE = "chunks_fts"


class SQLiteLexicalIndex:
    """A `LexicalIndex` over the chunks' FTS5 table. Thread-safe: each call uses the calling
    thread's connection."""

    def __init__(self, connection: Callable[[], sqlite3.Connection], config: LexicalConfig):
        self._connection = connection
        self.config = config
        self._postings = PostingScorer(TABLE, config.postings_cache_mb << 20)

    def search(
        self,
        terms: Sequence[str],
        k: int,
        filters: SearchFilters,
        *,
        best_per_document: bool = False,
    ) -> LexicalHits:
        config = self.config
        common = self.common_terms(terms, config.common_share, config.common_min_rows)
        found = self.rank(terms, k, filters, best_per_document=best_per_document, common=common)
        return LexicalHits(found, tuple(common))

    def common_terms(self, terms: Sequence[str], share: float, min_rows: int) -> list[str]:
        """The terms found in at least `share` of the chunks and in at least `min_rows`
        chunks (none when `share` is 0)."""
        try:
            return self._postings.common_terms(self._connection(), terms, share, min_rows)
        except sqlite3.OperationalError as exc:
            raise StorageError(f"lexical search failed for {list(terms)!r}: {exc}") from exc

    def rank(
        self,
        terms: Sequence[str],
        k: int,
        filters: SearchFilters,
        *,
        best_per_document: bool = False,
        common: Sequence[str] = (),
        from_postings: bool | None = None,
    ) -> list[Scored]:
        """BM25's top k with these common terms; `from_postings` overrides the config's
        choice between the numpy scorer and FTS5's bm25() (the same answers)."""
        postings = self.config.from_postings if from_postings is None else from_postings
        conn = self._connection()
        try:
            return self._rank(conn, terms, k, filters, best_per_document, common, postings)
        except sqlite3.OperationalError as exc:
            raise StorageError(f"lexical search failed for {list(terms)!r}: {exc}") from exc

    def _rank(
        self,
        conn: sqlite3.Connection,
        terms: Sequence[str],
        k: int,
        filters: SearchFilters,
        best_per_document: bool,
        common: Sequence[str],
        from_postings: bool,
    ) -> list[Scored]:
        matches = match_expressions(terms, common)
        if not matches or k <= 0:
            return []
        where, params = filter_sql(filters)
        weights = self.config.weights
        if from_postings and not where:
            found = self._postings.search(
                conn, terms, k, weights=weights, common=common, best_per_document=best_per_document
            )
            if found is not None:
                return found
        # bm25() in the select list is cheaper than FTS5's `rank MATCH` path (same scores).
        rank_fn = bm25_call(TABLE, weights)
        if not where and not best_per_document:
            sql = (
                f"SELECT rowid, {rank_fn} AS score FROM {TABLE} WHERE {TABLE} MATCH ?"
                " ORDER BY score, rowid LIMIT ?"
            )
        else:
            sql = _filtered_search_sql(where, best_per_document, rank_fn)
        rows: list[Any] = []
        for match in matches:
            rows += conn.execute(sql, (match, *params, k)).fetchall()
        if len(matches) > 1:  # the two disjoint halves of the split query, merged
            rows = _best_rows(rows, best_per_document)[:k]
        if best_per_document:
            return [Scored(int(r[0]), -float(r[1]), int(r[2])) for r in rows]
        return [Scored(int(row[0]), -float(row[1])) for row in rows]


def _best_rows(rows: list[Any], best_per_document: bool) -> list[Any]:
    """Rows of both halves in score order (lower bm25 is better, then the lower id); for
    documents, each document's best row only."""
    ordered = sorted(rows, key=lambda r: (float(r[1]), int(r[0])))
    if not best_per_document:
        return ordered
    seen: set[int] = set()
    best = []
    for row in ordered:
        if int(row[2]) not in seen:
            seen.add(int(row[2]))
            best.append(row)
    return best


def _filtered_search_sql(where: str, best_per_document: bool, rank_fn: str) -> str:
    extra = f" AND {where}" if where else ""
    inner = (
        f"SELECT f.rowid AS id, {rank_fn} AS score, c.document_id AS doc"
        f" FROM {TABLE} f JOIN chunks c ON c.id = f.rowid"
        " JOIN documents d ON d.id = c.document_id"
        f" WHERE {TABLE} MATCH ?{extra}"
    )
    if not best_per_document:
        return f"{inner} ORDER BY score, id LIMIT ?"
    return (
        "SELECT id, score, doc FROM (SELECT id, score, doc, row_number() OVER"
        f" (PARTITION BY doc ORDER BY score, id) AS n FROM ({inner})) WHERE n = 1"
        " ORDER BY score, id LIMIT ?"
    )
