"""BM25 from FTS5's postings, scored in numpy: the same rows and scores as FTS5's bm25()."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from nexusbrain import storage
from nexusbrain.bench.corpus import Corpus
from nexusbrain.config import LexicalConfig, Settings
from nexusbrain.errors import ConfigError
from nexusbrain.records import ChunkDraft, DocumentDraft, DocumentKind, Scored, SearchFilters
from nexusbrain.retrieval.terms import query_terms
from nexusbrain.storage.sqlite import postings as fts_postings
from nexusbrain.storage.sqlite.lexical import SQLiteLexicalIndex
from nexusbrain.storage.sqlite.postings import PostingScorer, phrase_order, record_sums, varints
from nexusbrain.storage.sqlite.store import SQLiteStore

NOW = datetime(2026, 1, 1, tzinfo=UTC)
WEIGHTS = (1.0, 0.5, 0.3)


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
    assert record_sums(records).tolist() == [sum(values[i : i + 3]) for i in range(0, 9, 3)]
    assert record_sums([]).tolist() == []


def test_the_phrase_order_is_the_split_query_s() -> None:
    assert phrase_order(["a", "b", "c"], ["b"]) == (["a", "c", "b"], 2)
    assert phrase_order(["a", "b"], []) == (["a", "b"], 0)
    assert phrase_order(["b"], ["b"]) == (["b"], 0)  # all common: the plain query


_INDEXES: dict[int, SQLiteLexicalIndex] = {}


def lexical(store: SQLiteStore) -> SQLiteLexicalIndex:
    """The store's lexical index, one per store (its scorer keeps its caches)."""
    if id(store) not in _INDEXES:
        _INDEXES[id(store)] = SQLiteLexicalIndex(store.connection, LexicalConfig())
    return _INDEXES[id(store)]


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


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    store = SQLiteStore(tmp_path / "b.db")
    for index in range(120):
        _write(store, index)
    return store


def _queries() -> list[list[str]]:
    made = [query_terms(q) for q in Corpus().queries(40, 120)]
    words = Corpus().words
    return [
        *made,
        [words[3], words[3]],  # a repeated word is two phrases, scored twice
        [words[10], words[10].upper(), "nothing" + "x" * 9],  # case folds; an absent word
        ["running", "runs", words[40]],  # one stem, two phrases
        [words[200], "café", words[5]],
    ]


def _assert_same(slow: list[Scored], fast: list[Scored]) -> None:
    assert [(s.chunk_id, s.document_id) for s in fast] == [
        (s.chunk_id, s.document_id) for s in slow
    ]
    assert [s.score for s in fast] == pytest.approx([s.score for s in slow], rel=1e-12)


def _compare(store: SQLiteStore, queries: list[list[str]]) -> int:
    compared = 0
    for terms in queries:
        for common in ([], lexical(store).common_terms(terms, 0.05, 1)):
            for best in (False, True):
                for k in (1, 10, 1_000):
                    args = (terms, k, SearchFilters())
                    kwargs = {"common": common, "best_per_document": best}
                    slow = lexical(store).rank(*args, **kwargs, from_postings=False)
                    _assert_same(slow, lexical(store).rank(*args, **kwargs))
                    compared += bool(slow)
    return compared


@pytest.mark.parametrize(
    ("fetch_above", "cache_bytes"), [(0.0, 1 << 20), (0.125, 1 << 20), (2.0, 0)]
)
def test_postings_give_fts5_s_rows_and_scores(
    store: SQLiteStore, fetch_above: float, cache_bytes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a common term's share always from its postings, by the default rule, or never (with
    # nothing cached, FTS5 scores the rows that hold one)
    monkeypatch.setattr(fts_postings, "FETCH_COMMON_ABOVE", fetch_above)
    monkeypatch.setattr(lexical(store), "_postings", PostingScorer(cache_bytes=cache_bytes))
    queries = _queries()
    assert _compare(store, queries) > 400
    # the split on common terms was exercised, and the scorer answered (not FTS5)
    assert sum(bool(lexical(store).common_terms(t, 0.05, 1)) for t in queries) >= 10
    scorer = PostingScorer()
    conn = store.connection()
    for terms in queries:
        found = scorer.search(conn, terms, 10, weights=WEIGHTS)
        assert found is not None
        _assert_same(lexical(store).rank(terms, 10, SearchFilters()), found)


def test_a_word_of_several_tokens_is_left_to_fts5(store: SQLiteStore) -> None:
    word = Corpus().words[7]
    conn = store.connection()
    assert PostingScorer().search(conn, [f"{word}_{word}"], 10, weights=WEIGHTS) is None
    assert PostingScorer().search(conn, [word], 10, weights=WEIGHTS)
    # the store then asks FTS5, which reads it as a phrase
    terms = [f"{word}_{word}", "x"]
    _assert_same(
        lexical(store).rank(terms, 10, SearchFilters(), from_postings=False),
        lexical(store).rank(terms, 10, SearchFilters()),
    )


def test_writes_are_seen_including_a_re_used_chunk_id(store: SQLiteStore) -> None:
    queries = _queries()
    _compare(store, queries[:10])  # fills the size array and the cache
    conn = store.connection()
    last = conn.execute("SELECT max(id) FROM chunks").fetchone()[0]
    # a new revision of the last document: its chunks are deleted, then new ones are
    # written, the first of them under the id the deleted last chunk had
    _write(store, 119, revision="r2-" + "edit")
    conn.execute("DELETE FROM chunks WHERE id = (SELECT max(id) FROM chunks)")
    doc = Corpus().document(5)
    longer = ChunkDraft(0, 0, 1, 1, 1, (), doc.content * 3, context="")
    draft = DocumentDraft("new.md", "New", "notes", DocumentKind.MARKDOWN, "r1", "x", {})
    store.write_documents([(draft, [longer])], NOW)
    reused = conn.execute("SELECT max(id) FROM chunks").fetchone()[0]
    assert reused <= last + 2  # a low id again, not a fresh range
    for index in range(120, 140):
        _write(store, index)
    store.retire_documents([1, 2, 3], NOW)
    assert _compare(store, queries) > 400
    own = {r[0] for r in conn.execute("SELECT id FROM chunks WHERE document_id = 1")}
    assert not own & {
        s.chunk_id for t in queries for s in lexical(store).rank(t, 1_000, SearchFilters())
    }


class Undo(Exception):
    pass


def test_inside_a_write_transaction_fts5_answers(store: SQLiteStore) -> None:
    word = Corpus().words[12]
    before = lexical(store).rank([word], 1_000, SearchFilters())
    other = SQLiteStore(store.path)  # a connection that has not searched yet
    with pytest.raises(Undo), other.transaction() as conn:
        conn.execute("DELETE FROM chunks WHERE id IN (SELECT id FROM chunks LIMIT 50)")
        assert lexical(other).common_terms([word], 0.01, 1) == [word]
        inside = lexical(other).rank([word], 1_000, SearchFilters())
        _assert_same(
            lexical(other).rank([word], 1_000, SearchFilters(), from_postings=False), inside
        )
        assert len(inside) < len(before)
        raise Undo
    # the rolled-back change seqs are used again by the next write; nothing of them was kept
    _write(other, 500)
    assert lexical(other).rank([word], 10, SearchFilters())
    assert _compare(other, [[word], *_queries()[:5]]) > 30


def test_a_tiny_cache_gives_the_same_answers(store: SQLiteStore) -> None:
    scorer = PostingScorer(cache_bytes=4_096)
    conn = store.connection()
    for terms in _queries():
        found = scorer.search(conn, terms, 50, weights=WEIGHTS)
        assert found is not None
        _assert_same(lexical(store).rank(terms, 50, SearchFilters()), found)
    assert 0 < scorer._cache_used <= 4_096


def test_an_empty_store_finds_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    assert lexical(store).rank(["alpha"], 10, SearchFilters()) == []
    assert PostingScorer().search(store.connection(), ["alpha"], 10, weights=WEIGHTS) == []


def test_record_sums_match_the_size_table(store: SQLiteStore) -> None:
    rows = store.connection().execute("SELECT id, sz FROM chunks_fts_docsize").fetchall()
    sums = record_sums([r[1] for r in rows])
    assert sums.tolist() == [sum(varints(r[1])) for r in rows]
    assert int(np.max(sums)) >= 128  # two-byte varints were read


def test_the_cache_size_comes_from_the_environment(tmp_path: Path) -> None:
    settings = Settings.from_env(tmp_path / "b.db", {"BRAIN_POSTINGS_CACHE_MB": "64"})
    assert settings.lexical.postings_cache_mb == 64
    backend = storage.open(settings.db, settings.lexical)
    try:
        assert isinstance(backend.lexical, SQLiteLexicalIndex)
        assert backend.lexical._postings._cache_budget == 64 << 20
    finally:
        backend.close()
    with pytest.raises(ConfigError, match="BRAIN_POSTINGS_CACHE_MB='big'"):
        Settings.from_env(tmp_path / "b.db", {"BRAIN_POSTINGS_CACHE_MB": "big"})


def test_searches_on_several_threads_while_writes_land(store: SQLiteStore) -> None:
    queries = _queries()[:12]
    errors: list[BaseException] = []
    done = threading.Event()

    def search() -> None:
        try:
            while not done.is_set():
                for terms in queries:
                    assert lexical(store).rank(terms, 20, SearchFilters())
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=search) for _ in range(3)]
    for thread in threads:
        thread.start()
    for index in range(200, 230):
        _write(store, index)
    done.set()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    assert _compare(store, queries) > 100  # and the shared state is right afterwards
