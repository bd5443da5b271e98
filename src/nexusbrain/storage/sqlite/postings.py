"""BM25 scored in numpy from FTS5's own postings: FTS5's bm25() scores, exactly, at a
fraction of the cost when the query's words are in many chunks.

FTS5's bm25() costs about a microsecond for each row that matches: it decodes the row's
positions, looks up the row's size and feeds a sorter. Reading a word's postings out of an
fts5vocab 'instance' table, joined into one string inside SQLite, costs about a sixth of
that, and numpy then scores every row at once. The formula, the constants and the order of
every sum are FTS5's (fts5_aux.c), so the scores are the same doubles that bm25() returns.

Beyond the postings, it needs:
- each query word as FTS5 tokenizes it. A temporary FTS5 table with the same tokenizer, on
  each connection, gives a word's tokens. A word that is not exactly one token (`foo_bar`
  is a phrase of two) leaves the query to FTS5's own bm25();
- each row's size in tokens, from the %_docsize table. It is held in one array indexed by
  chunk id and kept up to date from the chunk change log;
- the row count and the token totals, from FTS5's averages record.

A search reads all three inside one read transaction, so they describe one snapshot. A
term's scored postings are cached by (change seq, token, weights) within a byte budget,
least recently used out first. Any write moves the seq on, so nothing stale is ever read.
While a write lands, a search that started on the older snapshot can read the size of a
chunk id re-used by that write; that row's score is then off until the next search.
"""

from __future__ import annotations

import math
import re
import sqlite3
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from nexusbrain.records import Scored
from nexusbrain.storage.sqlite import vectors as vector_sql
from nexusbrain.storage.sqlite.fts import bm25_call, fts_or_query, match_expressions, split_terms

Ids = NDArray[np.int64]
Floats = NDArray[np.float64]
ScoredRows = tuple[NDArray[np.int32], Floats]  # rows holding a token, and its share of each

# FTS5's bm25() constants (fts5_aux.c).
K1 = 1.2
B = 0.75
# When the rows holding a query's rarer terms pass this share of all rows, its common terms'
# postings are read rather than FTS5 scoring every such row that holds one: reading an
# instance costs about an eighth of scoring a row (measured: docs/design/retrieval.md).
FETCH_COMMON_ABOVE = 0.125
_SIZE_BATCH = 4_096  # %_docsize rows read per statement on the first load
_ID_BATCH = 900  # ids per `IN (...)` list
_TOKEN_CACHE = 50_000  # words whose tokens are remembered
_COLUMN_BITS = 3  # a posting is encoded as row * 8 + column index inside SQLite


@dataclass(frozen=True, slots=True)
class _Table:
    name: str
    tokenize: str
    columns: tuple[str, ...]
    # a token's instances as one string of `row << 3 | column index`, in FTS5's order
    postings_sql: str


def varints(blob: bytes) -> list[int]:
    """The SQLite varints of an FTS5 record: groups of 7 bits, most significant first.
    (The 9-byte form, for values past 2**56, never occurs in token counts.)"""
    out, value = [], 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            out.append(value)
            value = 0
    return out


def record_sums(blobs: Sequence[bytes]) -> NDArray[np.int64]:
    """The sum of each record's varints (a %_docsize record: the row's size in tokens), for
    many records at once."""
    if not blobs:
        return np.zeros(0, np.int64)
    lengths = np.fromiter(map(len, blobs), np.int64, len(blobs))
    raw = np.frombuffer(b"".join(blobs), np.uint8).astype(np.int64)
    ends = np.flatnonzero(raw < 0x80)  # the last byte of each varint
    starts = np.concatenate(([0], ends[:-1] + 1))
    values = np.zeros(len(ends), np.int64)
    for offset in range(int((ends - starts).max()) + 1):
        at = starts + offset
        live = at <= ends
        values[live] = (values[live] << 7) | (raw[at[live]] & 0x7F)
    owner = np.searchsorted(np.cumsum(lengths) - 1, ends)  # the record each varint ends in
    sums = np.zeros(len(blobs), np.int64)
    np.add.at(sums, owner, values)
    return sums


def phrase_order(terms: Sequence[str], common: Sequence[str]) -> tuple[list[str], int]:
    """The query's phrases in the order FTS5 sums them, and how many lead before the common
    ones: the rarer terms then the common ones when the query is split (see
    fts.match_expressions), else every term in order and 0 (no split)."""
    rare, frequent = split_terms(terms, common)
    return rare + frequent, len(rare) if frequent else 0


class PostingScorer:
    """BM25 for one FTS5 table, computed from its postings. Shared by every thread of a
    store; each thread passes its own connection."""

    def __init__(self, table: str = "chunks_fts", cache_bytes: int = 32 << 20) -> None:
        self._table_name = table
        self._table: _Table | None = None
        self._lock = threading.Lock()
        self._local = threading.local()
        self._sizes = np.zeros(0, np.int32)  # row size in tokens, by rowid
        self._seq = -1  # the chunk change the sizes are complete to
        self._tokens: dict[str, tuple[str, ...]] = {}
        self._cache: OrderedDict[tuple[object, ...], ScoredRows] = OrderedDict()
        self._cache_seq = -1
        self._cache_used = 0
        self._cache_budget = cache_bytes
        self._counts: dict[str, tuple[int, int]] = {}  # word: (count, the limit it stopped at)
        self._counts_seq = -1

    def search(
        self,
        conn: sqlite3.Connection,
        terms: Sequence[str],
        k: int,
        *,
        weights: Sequence[float],
        common: Sequence[str] = (),
        best_per_document: bool = False,
    ) -> list[Scored] | None:
        """The top `k` rows as FTS5's `ORDER BY bm25(...), rowid LIMIT k` would give them,
        with the same split on common terms. None when a term is not a single token or the
        connection is inside a transaction: the caller then asks FTS5."""
        if conn.in_transaction:
            # An open write may yet roll back, and its change seqs be used again for other
            # rows: nothing it shows may go into the shared sizes or cache.
            return None
        table = self._prepare(conn)
        phrases, lead = phrase_order(terms, common)
        tokens = self._tokenized(conn, phrases)
        if not phrases or any(len(t) != 1 for t in tokens):
            return None
        conn.execute("BEGIN")
        try:
            seq = vector_sql.latest_change(conn)
            sizes = self._synced_sizes(conn, table, seq)
            n_rows, n_tokens = _totals(conn, table)
            if n_rows == 0 or k <= 0:
                return []
            used = tuple(float(w) for w in weights[: len(table.columns)])

            def scored(token: str) -> ScoredRows:
                return self._scored(conn, table, seq, used, token, n_rows, n_tokens / n_rows, sizes)

            lists = [scored(t[0]) for t in tokens[: lead or len(tokens)]]
            rows = _holding(lists)
            frequent = [t[0] for t in tokens[lead:]] if lead else []
            # A common term's share of each row's score comes from its postings when they
            # are cached, or when the rarer terms hold so many rows that reading its
            # postings costs less than FTS5 scoring those rows (FETCH_COMMON_ABOVE).
            if frequent and (
                len(rows) > FETCH_COMMON_ABOVE * n_rows
                or all(self._cached((seq, t, used)) for t in frequent)
            ):
                lists += [scored(t) for t in frequent]
                frequent = []
            if not len(rows):
                return []
            score = _summed(lists)
            if frequent:
                # Rows that also hold a common term: FTS5 scores them over every phrase,
                # as the split query's AND half does.
                both = match_expressions(terms, common)[1]
                found = conn.execute(
                    f"SELECT rowid, {bm25_call(table.name, weights)} FROM {table.name}"
                    f" WHERE {table.name} MATCH ?",
                    (both,),
                ).fetchall()
                if found:
                    at = np.fromiter((r[0] for r in found), np.int64, len(found))
                    score[at] = -np.fromiter((r[1] for r in found), np.float64, len(found))
            if best_per_document:
                return _best_documents(conn, rows, score[rows], k)
            top = _top(rows, score[rows], k)
            return [Scored(int(r), float(score[r])) for r in top]
        finally:
            conn.execute("COMMIT")

    def common_terms(
        self, conn: sqlite3.Connection, words: Sequence[str], share: float, min_rows: int
    ) -> list[str]:
        """The words found in at least max(min_rows, share × rows) rows. Each word is probed
        with a count that stops at the cut-off (so it costs no more than the word's share of
        the ranking it spares), and outside a transaction the answer is kept until the next
        write."""
        table = self._described(conn)
        if share <= 0 or not words:
            return []
        owned = not conn.in_transaction  # else nothing is kept: see `search`
        if owned:
            conn.execute("BEGIN")
        try:
            n_rows, _ = _totals(conn, table)
            cutoff = max(min_rows, int(share * n_rows), 1)
            if n_rows < cutoff:
                return []
            seq = vector_sql.latest_change(conn) if owned else -1
            probe = (
                f"SELECT count(*) FROM (SELECT rowid FROM {table.name}"
                f" WHERE {table.name} MATCH ? LIMIT ?)"
            )
            found = []
            for word in filter(None, words):
                with self._lock:
                    if seq > self._counts_seq:
                        self._counts.clear()
                        self._counts_seq = seq
                    known = self._counts.get(word, (0, 0)) if seq == self._counts_seq else (0, 0)
                count, limit = known
                if count < cutoff and count == limit:  # never counted as far as the cut-off
                    count = conn.execute(probe, (fts_or_query([word]), cutoff)).fetchone()[0]
                    with self._lock:
                        if owned and seq == self._counts_seq:
                            self._counts[word] = (count, cutoff)
                if count >= cutoff:
                    found.append(word)
            return found
        finally:
            if owned:
                conn.execute("COMMIT")

    def _cached(self, key: tuple[object, ...]) -> bool:
        with self._lock:
            return key in self._cache

    # set-up

    def _described(self, conn: sqlite3.Connection) -> _Table:
        if self._table is None:
            self._table = _describe(conn, self._table_name)
        return self._table

    def _prepare(self, conn: sqlite3.Connection) -> _Table:
        """The table, and this connection's temporary tables (made outside any transaction,
        which could roll them back)."""
        table = self._described(conn)
        if getattr(self._local, "conn", None) is not conn:
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.nb_postings"
                f" USING fts5vocab(main, {table.name}, instance)"
            )
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.nb_words USING fts5"
                f" (word, tokenize = '{table.tokenize.replace(chr(39), chr(39) * 2)}')"
            )
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.nb_word_tokens"
                " USING fts5vocab(temp, nb_words, instance)"
            )
            self._local.conn = conn
        return table

    def _tokenized(self, conn: sqlite3.Connection, words: Sequence[str]) -> list[tuple[str, ...]]:
        """Each word's tokens, as the table's tokenizer makes them."""
        tokens = self._tokens  # a full cache is replaced, never emptied under another thread
        missing = [w for w in dict.fromkeys(words) if w not in tokens]
        if missing:
            conn.executemany(
                "INSERT INTO temp.nb_words (rowid, word) VALUES (?, ?)", enumerate(missing)
            )
            found: dict[int, list[str]] = defaultdict(list)
            try:
                for doc, term in conn.execute(
                    "SELECT doc, term FROM temp.nb_word_tokens ORDER BY doc, offset"
                ):
                    found[int(doc)].append(term)
            finally:
                conn.execute("DELETE FROM temp.nb_words")
            if len(tokens) > _TOKEN_CACHE:
                self._tokens = {}
            for i, word in enumerate(missing):
                tokens[word] = self._tokens[word] = tuple(found.get(i, ()))
        return [tokens[w] for w in words]

    # row sizes

    def _synced_sizes(self, conn: sqlite3.Connection, table: _Table, seq: int) -> NDArray[np.int32]:
        with self._lock:
            if seq > self._seq:
                if self._seq < 0:
                    self._sizes = _all_sizes(conn, table)
                else:
                    _, added, _ = vector_sql.changes_since(conn, self._seq)
                    self._sizes = _with_sizes(conn, table, self._sizes, added)
                self._seq = seq
            return self._sizes

    # postings

    def _scored(
        self,
        conn: sqlite3.Connection,
        table: _Table,
        seq: int,
        weights: tuple[float, ...],
        token: str,
        n_rows: int,
        avgdl: float,
        sizes: NDArray[np.int32],
    ) -> ScoredRows:
        """The rows holding `token` and its BM25 share of each row's score."""
        key = (seq, token, weights)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        rows, freq = _postings(conn, table, token, weights)
        n = len(rows)
        # fts5_aux.c, fts5Bm25Function: the same operations in the same order.
        idf = math.log((n_rows - n + 0.5) / (n + 0.5))
        if idf <= 0.0:
            idf = 1e-6
        size = sizes[rows].astype(np.float64)
        share = idf * ((freq * (K1 + 1.0)) / (freq + K1 * (1 - B + B * size / avgdl)))
        found = (rows.astype(np.int32), share)
        self._remember(key, seq, found)
        return found

    def _remember(self, key: tuple[object, ...], seq: int, value: ScoredRows) -> None:
        cost = value[0].nbytes + value[1].nbytes
        with self._lock:
            if seq < self._cache_seq or cost > self._cache_budget:
                return
            if seq > self._cache_seq:
                self._cache.clear()
                self._cache_used, self._cache_seq = 0, seq
            if key in self._cache:
                return
            self._cache[key] = value
            self._cache_used += cost
            while self._cache_used > self._cache_budget:
                _, (rows, share) = self._cache.popitem(last=False)
                self._cache_used -= rows.nbytes + share.nbytes


def _describe(conn: sqlite3.Connection, name: str) -> _Table:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise sqlite3.OperationalError(f"no FTS5 table named {name}")
    match = re.search(r"tokenize\s*=\s*'((?:[^']|'')*)'", row[0])
    tokenize = match.group(1).replace("''", "'") if match else "unicode61"
    columns = tuple(r[1] for r in conn.execute(f"PRAGMA table_info({name})"))
    if len(columns) >= 1 << _COLUMN_BITS:
        raise sqlite3.OperationalError(f"{name} has more columns than postings can encode")
    cases = " ".join(f"WHEN '{c}' THEN {i}" for i, c in enumerate(columns))
    postings = (
        f"SELECT group_concat((doc << {_COLUMN_BITS}) + CASE col {cases} END)"
        " FROM temp.nb_postings WHERE term = ?"
    )
    return _Table(name, tokenize, columns, postings)


def _postings(
    conn: sqlite3.Connection, table: _Table, token: str, weights: tuple[float, ...]
) -> tuple[Ids, Floats]:
    """The rows holding `token`, and its weighted frequency in each: the sum over its
    instances of their column's weight, in FTS5's order (column, then offset)."""
    joined = conn.execute(table.postings_sql, (token,)).fetchone()[0]
    if not joined:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    coded = np.fromstring(joined, dtype=np.int64, sep=",")
    rows = coded >> _COLUMN_BITS
    if len(rows) > 1 and bool(np.any(rows[1:] < rows[:-1])):
        order = np.argsort(coded, kind="stable")
        coded, rows = coded[order], rows[order]
    # FTS5 weighs a column it has no weight for at 1.0.
    column_weight = np.ones(1 << _COLUMN_BITS)
    column_weight[: len(weights)] = weights
    weight = column_weight[coded & ((1 << _COLUMN_BITS) - 1)]
    starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
    return rows[starts], np.add.reduceat(weight, starts)


def _totals(conn: sqlite3.Connection, table: _Table) -> tuple[int, int]:
    """FTS5's row count and its token count over every column (its averages record)."""
    found = conn.execute(f"SELECT block FROM {table.name}_data WHERE id = 1").fetchone()
    if found is None:
        return 0, 0
    counts = varints(found[0])
    return counts[0], sum(counts[1:])


def _holding(lists: list[ScoredRows]) -> Ids:
    """The rows holding any of these phrases, in id order."""
    if not lists or not sum(len(r) for r, _ in lists):
        return np.zeros(0, np.int64)
    rows = np.concatenate([r for r, _ in lists])
    present = np.zeros(int(rows.max()) + 1, bool)
    present[rows] = True
    return np.flatnonzero(present).astype(np.int64, copy=False)


def _summed(lists: list[ScoredRows]) -> Floats:
    """Every row's score, by row id: the phrase shares added in phrase order, as FTS5 does."""
    rows = np.concatenate([r for r, _ in lists])
    shares = np.concatenate([s for _, s in lists])
    size = int(rows.max()) + 1 if len(rows) else 0
    return np.bincount(rows, weights=shares, minlength=size).astype(np.float64, copy=False)


def _top(rows: Ids, scores: Floats, k: int) -> Ids:
    """The k best rows, higher score first and the lower row id among equals."""
    if len(rows) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= kth  # every row tied with the k-th, so that ids break the tie
        rows, scores = rows[keep], scores[keep]
    return rows[np.lexsort((rows, -scores))][:k]


def _best_documents(conn: sqlite3.Connection, rows: Ids, scores: Floats, k: int) -> list[Scored]:
    """Each document's best row, for the k best documents: rows are read in rank order until
    k documents have been seen."""
    out: list[Scored] = []
    seen: set[int] = set()
    order = np.lexsort((rows, -scores))
    ordered, ranked = rows[order], scores[order]
    for start in range(0, len(ordered), _ID_BATCH):
        batch = ordered[start : start + _ID_BATCH].tolist()
        marks = ",".join("?" * len(batch))
        owner = dict(
            conn.execute(f"SELECT id, document_id FROM chunks WHERE id IN ({marks})", batch)
        )
        for i, row in enumerate(batch):
            doc = int(owner[row])
            if doc not in seen:
                seen.add(doc)
                out.append(Scored(row, float(ranked[start + i]), doc))
                if len(out) == k:
                    return out
    return out


def _all_sizes(conn: sqlite3.Connection, table: _Table) -> NDArray[np.int32]:
    sizes = np.zeros(0, np.int32)
    last = -(1 << 62)
    while batch := conn.execute(
        f"SELECT id, sz FROM {table.name}_docsize WHERE id > ? ORDER BY id LIMIT ?",
        (last, _SIZE_BATCH),
    ).fetchall():
        ids = np.fromiter((r[0] for r in batch), np.int64, len(batch))
        sizes = _placed(sizes, ids, record_sums([r[1] for r in batch]))
        last = int(batch[-1][0])
    return sizes


def _with_sizes(
    conn: sqlite3.Connection, table: _Table, sizes: NDArray[np.int32], ids: Sequence[int]
) -> NDArray[np.int32]:
    for start in range(0, len(ids), _ID_BATCH):
        batch = list(ids[start : start + _ID_BATCH])
        marks = ",".join("?" * len(batch))
        found = conn.execute(
            f"SELECT id, sz FROM {table.name}_docsize WHERE id IN ({marks})", batch
        ).fetchall()
        if found:
            got = np.fromiter((r[0] for r in found), np.int64, len(found))
            sizes = _placed(sizes, got, record_sums([r[1] for r in found]))
    return sizes


def _placed(sizes: NDArray[np.int32], ids: Ids, values: Ids) -> NDArray[np.int32]:
    """`sizes` with sizes[ids] = values, grown (with room to spare) when an id is past its
    end. Only new or re-used ids change, so a search reading the array meanwhile is safe."""
    need = int(ids.max()) + 1
    if need > len(sizes):
        grown = np.zeros(max(need, len(sizes) + len(sizes) // 4), np.int32)
        grown[: len(sizes)] = sizes
        sizes = grown
    sizes[ids] = values
    return sizes
