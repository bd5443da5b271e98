"""The SQLite backend's lexical index: FTS5 holds exactly the analyzer's tokens, and the
postings scorer answers as a from-scratch BM25 over the chunks, through writes, re-used ids,
open transactions, a tiny cache and threads."""

from __future__ import annotations

import math
import sqlite3
import threading
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nexusbrain import storage
from nexusbrain.bench.corpus import Corpus
from nexusbrain.config import LexicalConfig, Settings
from nexusbrain.errors import ConfigError
from nexusbrain.records import ChunkDraft, DocumentDraft, DocumentKind, Scored, SearchFilters
from nexusbrain.retrieval.terms import query_terms
from nexusbrain.storage.analyzer import analyzed, tokens
from nexusbrain.storage.bm25 import _DENSE_FROM, Shares, _summed, distinct
from nexusbrain.storage.sqlite.lexical import SQLiteLexicalIndex, record_sums, varints
from nexusbrain.storage.sqlite.migrations import MIGRATIONS
from nexusbrain.storage.sqlite.store import SQLiteStore

NOW = datetime(2026, 1, 1, tzinfo=UTC)
CONFIG = LexicalConfig()


def sqlite_varint(value: int) -> bytes:
    groups = [value & 0x7F]
    value >>= 7
    while value:
        groups.append(0x80 | (value & 0x7F))
        value >>= 7
    return bytes(reversed(groups))


def test_varints_are_read_most_significant_group_first() -> None:
    values = [0, 1, 127, 128, 300, 16_383, 16_384, 2_000_000, 0]
    blob = b"".join(map(sqlite_varint, values))
    assert varints(blob) == values
    records = [b"".join(map(sqlite_varint, values[i : i + 3])) for i in range(0, 9, 3)]
    lengths = np.array([len(r) for r in records])
    sums = record_sums(b"".join(records), lengths)
    assert sums.tolist() == [sum(values[i : i + 3]) for i in range(0, 9, 3)]
    assert record_sums(b"", np.zeros(0, np.int64)).tolist() == []


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_fts5_holds_exactly_the_analyzer_s_tokens(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5 (x, content = '', tokenize = 'ascii')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    conn.execute("INSERT INTO t (rowid, x) VALUES (1, ?)", (analyzed(text),))
    held = [row[0] for row in conn.execute("SELECT term FROM v ORDER BY offset")]
    assert held == tokens(text)
    assert all(token and " " not in token for token in held)


def _write(store: SQLiteStore, index: int, revision: str = "r1") -> None:
    doc = Corpus().document(index)
    paragraphs = [p for p in doc.content.split("\n\n") if p.strip()]
    chunks = [
        ChunkDraft(i, 0, len(p), 1, 1, (doc.title, f"part {i}"), p, context=doc.title)
        for i, p in enumerate(paragraphs)
    ]
    draft = DocumentDraft(
        doc.name, doc.title, "notes", DocumentKind.MARKDOWN, revision, doc.content, {}
    )
    store.write_documents([(draft, chunks)], NOW)


def reference(store: SQLiteStore, terms: list[str], k: int) -> list[Scored]:
    """BM25 from scratch over the chunks as they are now (storage/bm25.py's formula)."""
    rows = store.db.connection().execute("SELECT id, text, heading, context FROM chunks").fetchall()
    columns = {r[0]: (tokens(r[1]), tokens(r[2]), tokens(r[3])) for r in rows}
    if not columns:
        return []
    sizes = {i: sum(len(c) for c in cols) for i, cols in columns.items()}
    average = sum(sizes.values()) / len(sizes)
    scores: dict[int, float] = {}
    for term, times in Counter(t for w in terms for t in tokens(w)).items():
        holding = [i for i, cols in columns.items() if any(term in c for c in cols)]
        idf = math.log(1 + (len(columns) - len(holding) + 0.5) / (len(holding) + 0.5))
        for i in holding:
            f = sum(w * c.count(term) for w, c in zip(CONFIG.weights, columns[i], strict=True))
            norm = f + CONFIG.k1 * (1 - CONFIG.b + CONFIG.b * sizes[i] / average)
            gain = (1 + math.log(times)) * idf * f * (CONFIG.k1 + 1) / norm
            scores[i] = scores.get(i, 0.0) + gain
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
    return [Scored(i, s) for i, s in ranked]


def same(got: list[Scored], expected: list[Scored]) -> None:
    assert [s.chunk_id for s in got] == [s.chunk_id for s in expected]
    assert [s.score for s in got] == pytest.approx([s.score for s in expected], rel=1e-9)


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    store = SQLiteStore(tmp_path / "b.db")
    for index in range(60):
        _write(store, index)
    return store


def _queries() -> list[list[str]]:
    made = [query_terms(q) for q in Corpus().queries(30, 60)]
    words = Corpus().words
    return [
        *made,
        [words[3], words[3]],  # a repeated word
        [words[10], words[10].upper(), "nothing" + "x" * 9],  # case folds; an absent word
        ["running", "runs", words[40]],  # one stem, said twice
        [words[200], "café", words[5]],
    ]


def test_scores_are_bm25_over_the_chunks(store: SQLiteStore) -> None:
    index = SQLiteLexicalIndex(store.db.connection, CONFIG)
    compared = 0
    for terms in _queries():
        for k in (1, 10, 1_000):
            expected = reference(store, terms, k)
            same(index.search(terms, k, SearchFilters()).scored, expected)
            compared += bool(expected)
    assert compared > 60


def test_every_row_at_once_is_each_row_by_its_id(store: SQLiteStore) -> None:
    """The first search reads every row's length and document in one statement; a later one
    reads the rows changed since by id. Both give each chunk's tokens over its columns."""
    index = SQLiteLexicalIndex(store.db.connection, CONFIG)
    rows = store.db.connection().execute(
        "SELECT id, document_id, text, heading, context FROM chunks"
    )
    expected = {r[0]: (sum(len(tokens(c)) for c in r[2:]), r[1]) for r in rows}
    with index.read() as read:
        every = read.rows(None)
        by_id = read.rows(sorted(expected))
    for ids, sizes, documents in (every, by_id):
        pairs = zip(sizes.tolist(), documents.tolist(), strict=True)
        found = dict(zip(ids.tolist(), pairs, strict=True))
        assert found == expected


def test_writes_are_seen_including_a_re_used_chunk_id(store: SQLiteStore) -> None:
    index = SQLiteLexicalIndex(store.db.connection, CONFIG)
    queries = _queries()
    for terms in queries[:10]:  # fills the size array and the cache
        index.search(terms, 10, SearchFilters())
    conn = store.db.connection()
    last = conn.execute("SELECT max(id) FROM chunks").fetchone()[0]
    _write(store, 59, revision="r2-edit")  # the last document again: its chunk ids come back
    reused = conn.execute("SELECT max(id) FROM chunks").fetchone()[0]
    assert reused <= last + 2
    for index_ in range(60, 70):
        _write(store, index_)
    store.retire_documents([1, 2, 3], NOW)
    for terms in queries:
        same(index.search(terms, 50, SearchFilters()).scored, reference(store, terms, 50))


class Undo(Exception):
    pass


def test_inside_a_write_transaction_the_uncommitted_rows_count_and_nothing_is_kept(
    store: SQLiteStore,
) -> None:
    index = SQLiteLexicalIndex(store.db.connection, CONFIG)
    word = Corpus().words[12]
    before = index.search([word], 1_000, SearchFilters()).scored
    with pytest.raises(Undo), store.db.write() as conn:
        conn.execute("DELETE FROM chunks WHERE id IN (SELECT id FROM chunks LIMIT 20)")
        inside = index.search([word], 1_000, SearchFilters()).scored
        same(inside, reference(store, [word], 1_000))
        assert len(inside) < len(before)
        raise Undo
    # the rolled-back change seqs are used again by the next write; nothing of them was kept
    _write(store, 500)
    same(index.search([word], 1_000, SearchFilters()).scored, reference(store, [word], 1_000))


def test_a_tiny_cache_gives_the_same_answers(store: SQLiteStore) -> None:
    tiny = SQLiteLexicalIndex(store.db.connection, LexicalConfig(postings_cache_mb=0))
    roomy = SQLiteLexicalIndex(store.db.connection, CONFIG)
    for terms in _queries():
        for best in (False, True):
            same(
                tiny.search(terms, 50, SearchFilters(), best_per_document=best).scored,
                roomy.search(terms, 50, SearchFilters(), best_per_document=best).scored,
            )


def test_an_empty_store_finds_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    assert (
        SQLiteLexicalIndex(store.db.connection, CONFIG)
        .search(["alpha"], 10, SearchFilters())
        .scored
        == []
    )


def test_a_version_7_database_is_migrated_to_analyzer_tokens(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT)")
    for version, sql in MIGRATIONS[:7]:
        conn.executescript(f"{sql}\nINSERT INTO schema_migrations VALUES ({version}, 'then');")
    conn.execute(
        "INSERT INTO documents (uri, title, domain, kind, revision, content, created_at,"
        " updated_at) VALUES ('a.md', 'A', 'd', 'markdown', 'r', 'x', 't', 't')"
    )
    conn.execute(
        "INSERT INTO chunks (document_id, ordinal, char_start, char_end, line_start, line_end,"
        " heading, text) VALUES (1, 0, 0, 1, 1, 1, 'Tokyo', '東京都の人口 running')"
    )
    conn.close()
    store = SQLiteStore(path)
    index = SQLiteLexicalIndex(store.db.connection, CONFIG)
    assert [s.chunk_id for s in index.search(["東京"], 5, SearchFilters()).scored] == [1]
    assert [s.chunk_id for s in index.search(["runs"], 5, SearchFilters()).scored] == [1]
    store.db.connection().execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')")


def test_the_cache_size_comes_from_the_environment(tmp_path: Path) -> None:
    settings = Settings.from_env(tmp_path / "b.db", {"BRAIN_POSTINGS_CACHE_MB": "64"})
    assert settings.lexical.postings_cache_mb == 64
    backend = storage.open(settings.db, settings.lexical)
    try:
        assert isinstance(backend.lexical, SQLiteLexicalIndex)
        assert backend.lexical.config.postings_cache_mb == 64
    finally:
        backend.close()
    with pytest.raises(ConfigError, match="BRAIN_POSTINGS_CACHE_MB='big'"):
        Settings.from_env(tmp_path / "b.db", {"BRAIN_POSTINGS_CACHE_MB": "big"})


def test_searches_on_several_threads_while_writes_land(store: SQLiteStore) -> None:
    index = SQLiteLexicalIndex(store.db.connection, CONFIG)
    queries = _queries()[:12]
    errors: list[BaseException] = []
    done = threading.Event()

    def search() -> None:
        try:
            while not done.is_set():
                for terms in queries:
                    assert isinstance(index.search(terms, 20, SearchFilters()).scored, list)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=search) for _ in range(3)]
    for thread in threads:
        thread.start()
    for index_ in range(200, 230):
        _write(store, index_)
    done.set()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    for terms in queries:  # and the shared state is right afterwards
        same(index.search(terms, 20, SearchFilters()).scored, reference(store, terms, 20))
    assert np.all(
        np.isfinite([s.score for t in queries for s in index.search(t, 5, SearchFilters()).scored])
    )


@given(st.lists(st.integers(min_value=-(2**62), max_value=2**62), max_size=60))
def test_distinct_is_numpy_s_unique(values: list[int]) -> None:
    array = np.array(values, dtype=np.int64)
    got = distinct(array)
    assert got.dtype == np.int64 and got.tolist() == np.unique(array).tolist()


@given(
    st.lists(
        st.dictionaries(
            st.integers(min_value=0, max_value=300),
            st.floats(min_value=0.0, max_value=50.0, allow_nan=False),
            max_size=40,
        ),
        min_size=1,
        max_size=5,
    ),
)
def test_summed_adds_each_row_s_shares_in_query_order_either_way(
    tokens: list[dict[int, float]],
) -> None:
    """A query's postings summed over an array of every row (many postings) or by sorting
    them (few): each row's shares added from 0.0 in query order, the same bits both ways."""
    lists: list[Shares] = [
        (np.array(sorted(t), np.int32), np.array([t[r] for r in sorted(t)], np.float64))
        for t in tokens
    ]
    expected: dict[int, float] = {}
    for token in tokens:
        for row, share in token.items():
            expected[row] = expected.get(row, 0.0) + share
    total = sum(len(t) for t in tokens)
    # both past every row: the array when the postings are a 32nd of it, then sorted always
    for size in (301, total * _DENSE_FROM + 301):
        rows, scores = _summed(lists, size)
        assert rows.dtype == np.int64 and scores.dtype == np.float64
        assert rows.tolist() == sorted(expected)
        assert scores.tolist() == [expected[r] for r in sorted(expected)]
