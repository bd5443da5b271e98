"""The SQLite backend's lexical index: FTS5 holds the postings of the analyzer's tokens
(migration 8: a contentless table over `nb_tokens(text)`, kept in step by triggers), and
BM25 is scored from them in numpy (storage/bm25.py).

A token's postings are read from an fts5vocab 'instance' table, joined into one string inside
SQLite (a fraction of what FTS5's own ranking costs a row); row lengths from `%_docsize`; the
row and token counts from FTS5's averages record. A search reads them inside one read
transaction, so they describe one snapshot.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from nexusbrain.config import LexicalConfig
from nexusbrain.errors import StorageError
from nexusbrain.records import SearchFilters
from nexusbrain.storage.analyzer import analyzed
from nexusbrain.storage.bm25 import Ids, PostingScorer, batches
from nexusbrain.storage.sql.documents import changes_since
from nexusbrain.storage.sql.filters import chunk_ids
from nexusbrain.storage.sqlite import vectors as vector_sql
from nexusbrain.storage.sqlite.dialect import SQLITE

TABLE = "chunks_fts"
COLUMNS = ("text", "heading", "context")
# The SQL function that gives FTS5 a column's tokens. A contentless table is told a deleted
# row's tokens again, so they must be what they were when it was inserted: a change to the
# analyzer needs a new function name and a migration that rebuilds the table with it.
TOKENS_FUNCTION = "nb_tokens_v1"
MIGRATION = f"""
DROP TRIGGER chunks_fts_insert;
DROP TRIGGER chunks_fts_delete;
DROP TABLE chunks_fts;
CREATE VIRTUAL TABLE chunks_fts USING fts5 (
    text, heading, context, content = '', tokenize = 'ascii'
);
CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts (rowid, text, heading, context) VALUES (new.id,
        {TOKENS_FUNCTION}(new.text), {TOKENS_FUNCTION}(new.heading),
        {TOKENS_FUNCTION}(new.context));
END;
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, text, heading, context) VALUES ('delete', old.id,
        {TOKENS_FUNCTION}(old.text), {TOKENS_FUNCTION}(old.heading),
        {TOKENS_FUNCTION}(old.context));
END;
INSERT INTO chunks_fts (rowid, text, heading, context)
    SELECT id, {TOKENS_FUNCTION}(text), {TOKENS_FUNCTION}(heading), {TOKENS_FUNCTION}(context)
    FROM chunks;
"""


def register(conn: sqlite3.Connection) -> None:
    """Give a connection the tokens function its triggers call (every writing connection
    needs it)."""
    conn.create_function(TOKENS_FUNCTION, 1, _tokens_of, deterministic=True)


def _tokens_of(text: str | None) -> str:
    return analyzed(text) if text else ""


_COLUMN_BITS = 2  # a posting is encoded as row * 4 + column index inside SQLite
_POSTINGS = (
    f"SELECT group_concat((doc << {_COLUMN_BITS}) + CASE col"
    + "".join(f" WHEN '{c}' THEN {i}" for i, c in enumerate(COLUMNS))
    + " END) FROM temp.nb_postings WHERE term = ?"
)
_VOCAB = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.nb_postings USING fts5vocab(main, {TABLE}, instance)"
)
_ROWS = f"SELECT s.id, s.sz, c.document_id FROM {TABLE}_docsize s JOIN chunks c ON c.id = s.id"
_EVERY_ROW = (
    "SELECT group_concat(s.id), group_concat(c.document_id), group_concat(length(s.sz)),"
    f" group_concat(hex(s.sz), '') FROM {TABLE}_docsize s JOIN chunks c ON c.id = s.id"
)


class SQLiteLexicalIndex(PostingScorer):
    """A `LexicalIndex` over the chunks' FTS5 table. Thread-safe: each call uses the calling
    thread's connection."""

    def __init__(self, connection: Callable[[], sqlite3.Connection], config: LexicalConfig):
        super().__init__(config)
        self._connection = connection
        self._local = threading.local()

    @contextmanager
    def _failing(self, terms: Sequence[str], what: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as exc:
            raise StorageError(f"lexical {what} failed for {list(terms)!r}: {exc}") from exc

    @contextmanager
    def read(self) -> Iterator[_Read]:
        """A read of the index: its own read transaction, unless the connection is already
        inside a write (whose uncommitted rows it then sees, and nothing of which is kept)."""
        conn = self._connection()
        self._prepare(conn)
        if conn.in_transaction:
            yield _Read(conn, vector_sql.latest_change(conn), cacheable=False)
            return
        conn.execute("BEGIN")
        try:
            yield _Read(conn, vector_sql.latest_change(conn), cacheable=True)
        finally:
            conn.execute("COMMIT")

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """This connection's fts5vocab table. Made inside a write, it goes if the write rolls
        back, so it is made again each time there; made outside, once."""
        if getattr(self._local, "conn", None) is conn:
            return
        conn.execute(_VOCAB)
        if not conn.in_transaction:
            self._local.conn = conn


class _Read:
    """A `PostingsRead` over one connection."""

    def __init__(self, conn: sqlite3.Connection, seq: int, *, cacheable: bool) -> None:
        self.conn = conn
        self.seq = seq
        self.cacheable = cacheable

    def totals(self) -> tuple[int, int]:
        """FTS5's row count and its token count over every column (its averages record)."""
        found = self.conn.execute(f"SELECT block FROM {TABLE}_data WHERE id = 1").fetchone()
        counts = varints(found[0]) if found is not None else []
        return (counts[0], sum(counts[1:])) if counts else (0, 0)

    def rows(self, chunk_ids: Sequence[int] | None) -> tuple[Ids, Ids, Ids]:
        if chunk_ids is None:
            return self._every_row()
        found: list[tuple[int, bytes, int]] = []
        for part in batches(chunk_ids):
            marks = ",".join("?" * len(part))
            found += self.conn.execute(f"{_ROWS} WHERE s.id IN ({marks})", part).fetchall()
        ids = np.fromiter((r[0] for r in found), np.int64, len(found))
        documents = np.fromiter((r[2] for r in found), np.int64, len(found))
        blobs = [r[1] for r in found]
        lengths = np.fromiter(map(len, blobs), np.int64, len(blobs))
        return ids, record_sums(b"".join(blobs), lengths), documents

    def _every_row(self) -> tuple[Ids, Ids, Ids]:
        """Every row, each column joined into one string inside SQLite: a Python row per
        chunk was most of the first search's time in a fresh process (the same rows either
        way; each aggregate sees the rows in the same order)."""
        joined = self.conn.execute(_EVERY_ROW).fetchone()
        if joined[0] is None:
            empty = np.zeros(0, np.int64)
            return empty, empty, empty
        ids, documents, lengths = (np.fromstring(j, dtype=np.int64, sep=",") for j in joined[:3])
        return ids, record_sums(bytes.fromhex(joined[3]), lengths), documents

    def added_since(self, seq: int) -> list[int]:
        return changes_since(self.conn, SQLITE, seq)[1]

    def postings(self, token: str) -> tuple[Ids, np.ndarray]:
        joined = self.conn.execute(_POSTINGS, (token,)).fetchone()[0]
        if not joined:
            return np.zeros(0, np.int64), np.zeros((0, len(COLUMNS)))
        coded = np.fromstring(joined, dtype=np.int64, sep=",")
        rows = coded >> _COLUMN_BITS
        held, inverse = np.unique(rows, return_inverse=True)
        tf = np.zeros((len(held), len(COLUMNS)))
        np.add.at(tf, (inverse, coded & ((1 << _COLUMN_BITS) - 1)), 1.0)
        return held, tf

    def matching(self, filters: SearchFilters) -> Ids:
        found = chunk_ids(self.conn, filters, SQLITE)
        return np.fromiter(found, np.int64, len(found))


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


def record_sums(records: bytes, lengths: Ids) -> Ids:
    """The sum of each record's varints (a %_docsize record: the row's size in tokens), for
    many records at once: `records` holds them one after another, `lengths` their sizes."""
    if not len(lengths):
        return np.zeros(0, np.int64)
    raw = np.frombuffer(records, np.uint8).astype(np.int64)
    ends = np.flatnonzero(raw < 0x80)  # the last byte of each varint
    starts = np.concatenate(([0], ends[:-1] + 1))
    values = np.zeros(len(ends), np.int64)
    for offset in range(int((ends - starts).max()) + 1):
        at = starts + offset
        live = at <= ends
        values[live] = (values[live] << 7) | (raw[at[live]] & 0x7F)
    owner = np.searchsorted(np.cumsum(lengths) - 1, ends)  # the record each varint ends in
    sums = np.zeros(len(lengths), np.int64)
    np.add.at(sums, owner, values)
    return sums
