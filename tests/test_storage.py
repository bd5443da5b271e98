"""The SQLite store: migrations, atomic writes, duplicates, retirement, history."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from nexusbrain.errors import InvalidInput, NotFound, StorageError
from nexusbrain.records import (
    Chunk,
    ChunkDraft,
    DocumentDraft,
    DocumentKind,
    SearchFilters,
    VectorBatch,
    WriteStatus,
)
from nexusbrain.storage import SQLiteStore
from nexusbrain.storage import vectors_sqlite as vector_sql
from nexusbrain.storage.migrations import LATEST, MIGRATIONS

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def draft(uri: str = "a.md", revision: str = "r1", text: str = "alpha beta") -> DocumentDraft:
    return DocumentDraft(uri, "Title", "notes", DocumentKind.MARKDOWN, revision, text, {"x": 1})


def chunk(text: str = "alpha beta", ordinal: int = 0) -> ChunkDraft:
    return ChunkDraft(ordinal, 0, len(text), 1, 1, ("H",), text)


def test_opening_applies_every_migration_in_wal_mode(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    assert store.schema_version() == LATEST
    conn = sqlite3.connect(tmp_path / "b.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()
    again = SQLiteStore(tmp_path / "b.db")
    assert again.schema_version() == LATEST
    again.close()


def test_write_then_duplicate_then_update(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    first = store.write_document(draft(), [chunk()], NOW)
    assert first.status is WriteStatus.CREATED
    dup = store.write_document(draft(), [chunk()], NOW)
    assert (dup.status, dup.document_id, dup.chunks) == (
        WriteStatus.DUPLICATE,
        first.document_id,
        1,
    )
    new = store.write_document(draft(revision="r2", text="gamma"), [chunk("gamma")], NOW)
    assert (new.status, new.document_id) == (WriteStatus.UPDATED, first.document_id)
    assert [c.text for c in store.chunks_of(first.document_id)] == ["gamma"]
    assert store.lexical_search(["alpha"], 5, SearchFilters()) == []
    assert len(store.lexical_search(["gamma"], 5, SearchFilters())) == 1
    events = [h["event"] for h in store.document_history(first.document_id)]
    assert events == ["created", "updated"]


def test_a_failed_write_leaves_nothing_behind(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    store.write_document(draft(), [chunk()], NOW)
    clashing = [chunk("one", 0), chunk("two", 0)]  # same ordinal twice violates UNIQUE
    with pytest.raises(StorageError, match="nothing was changed"):
        store.write_document(draft(revision="r2", text="one two"), clashing, NOW)
    doc = store.find_document("a.md")
    assert doc is not None and doc.revision == "r1"
    assert [c.text for c in store.chunks_of(doc.id)] == ["alpha beta"]


def test_retire_keeps_the_row_and_hides_it_from_search(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    doc_id = store.write_document(draft(), [chunk()], NOW).document_id
    assert store.retire_documents([doc_id], NOW) == 1
    assert store.retire_documents([doc_id], NOW) == 0
    assert store.get_document(doc_id).deleted_at == NOW
    assert store.lexical_search(["alpha"], 5, SearchFilters()) == []
    assert store.revisions_under("") == {}
    revived = store.write_document(draft(), [chunk()], NOW)
    assert (revived.status, revived.document_id) == (WriteStatus.UPDATED, doc_id)


def test_unknown_document_is_not_found(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    with pytest.raises(NotFound, match="42"):
        store.get_document(42)


def test_filters_and_best_per_document(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    one = store.write_document(
        draft("notes/one.md"), [chunk("apple pie", 0), chunk("apple tart apple", 1)], NOW
    )
    other = DocumentDraft("work/two.md", "T", "work", DocumentKind.MARKDOWN, "r", "apple", {})
    two = store.write_document(other, [chunk("apple")], NOW)
    everything = store.lexical_search(["apple"], 10, SearchFilters())
    assert len(everything) == 3
    best = store.lexical_search(["apple"], 10, SearchFilters(), best_per_document=True)
    assert len(best) == 2
    work = store.lexical_search(["apple"], 10, SearchFilters(domain="work"))
    assert [store.fetch_chunks([r.chunk_id])[r.chunk_id][1].id for r in work] == [two.document_id]
    prefix = store.lexical_search(["apple"], 10, SearchFilters(path_prefix="notes/"))
    assert {r.chunk_id for r in prefix} <= {c.id for c in store.chunks_of(one.document_id)}
    assert len(prefix) == 2


def hashed(text: str, ordinal: int = 0) -> ChunkDraft:
    return replace(chunk(text, ordinal), text_hash=f"h-{text}")


def vector_batch(model: str, texts: Sequence[str], dim: int = 4) -> VectorBatch:
    """A vector per text whose every component is the text's length."""
    rows = {f"h-{t}": np.full(dim, len(t), dtype=np.float32).tobytes() for t in texts}
    return VectorBatch(model, dim, rows)


def test_migration_4_moves_vectors_into_a_rowid_table(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT)")
    for version, sql in MIGRATIONS[:3]:
        conn.executescript(f"{sql}\nINSERT INTO schema_migrations VALUES ({version}, 'then');")
    conn.execute("INSERT INTO vectors VALUES ('m', 'h1', 2, ?), ('n', 'h1', 2, ?)", (b"a", b"b"))
    conn.close()
    store = SQLiteStore(path)
    assert store.schema_version() == LATEST
    conn = store.connection()
    rows = conn.execute("SELECT rowid, model, text_hash, dim, vector FROM vectors ORDER BY model")
    assert [tuple(r)[1:] for r in rows] == [("m", "h1", 2, b"a"), ("n", "h1", 2, b"b")]
    assert store.known_vector_hashes("m", ["h1", "h2"]) == {"h1"}
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        conn.execute("INSERT INTO vectors VALUES ('m', 'h1', 2, x'00')")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "vectors" in tables and "vectors_rowid" not in tables


def test_load_vectors_joins_chunks_with_their_model_s_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_sql, "FETCH", 2)  # several batches per query
    store = SQLiteStore(tmp_path / "b.db")
    texts = ["one", "three", "fifteen", "no vector", "seventeen"]
    embedded = [t for t in texts if t != "no vector"]
    a = store.write_document(
        draft(), [hashed(t, i) for i, t in enumerate(texts)], NOW, vector_batch("m", embedded)
    )
    b = store.write_document(draft("b.md"), [hashed("one")], NOW, vector_batch("n", ["two"]))
    ids_of = {c.text: c.id for c in store.chunks_of(a.document_id)}
    b_one = store.chunks_of(b.document_id)[0].id  # same text as a's "one": shares its vector
    ids, docs, matrix = store.load_vectors("m", 4)
    assert ids.tolist() == [ids_of[t] for t in embedded] + [b_one]
    assert docs.tolist() == [a.document_id] * 4 + [b.document_id]
    assert matrix.dtype == np.float32 and matrix[:, 0].tolist() == [3, 5, 7, 9, 3]
    wanted = [b_one, ids_of["no vector"], ids_of["three"], 999]
    ids, docs, matrix = store.load_vectors("m", 4, wanted)
    found = sorted(zip(ids.tolist(), docs.tolist(), matrix[:, 1].tolist(), strict=True))
    assert found == [(ids_of["three"], a.document_id, 5), (b_one, b.document_id, 3)]
    assert [len(x) for x in store.load_vectors("nobody", 4)] == [0, 0, 0]


def sqlite_steps(store: SQLiteStore, call: Callable[[], object], per: int = 1000) -> int:
    """SQLite virtual machine steps (in units of `per`) that `call` runs on this thread's
    connection: a measure of work that does not depend on the machine's speed."""
    steps = [0]

    def tick() -> int:
        steps[0] += 1
        return 0

    store.connection().set_progress_handler(tick, per)
    try:
        call()
    finally:
        store.connection().set_progress_handler(None, 0)
    return steps[0]


def test_the_missing_vector_check_looks_only_at_chunks_changed_since_it_was_complete(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    for i in range(300):
        texts = [f"note {i} part {j}" for j in range(5)]
        chunks = [hashed(t, j) for j, t in enumerate(texts)]
        store.write_document(draft(f"{i}.md"), chunks, NOW, vector_batch("m", texts))
    full = sqlite_steps(store, lambda: store.count_missing_vectors("m"))
    assert store.count_missing_vectors("m") == 0
    store.write_document(draft("new.md"), [hashed("fresh")], NOW)  # no vector
    assert store.count_missing_vectors("m") == 1
    assert [row[1] for row in store.chunks_missing_vectors("m", 10)] == ["fresh"]
    after_change = sqlite_steps(store, lambda: store.count_missing_vectors("m"))
    assert after_change * 20 < full
    store.store_vectors(vector_batch("m", ["fresh"]), {})
    assert store.count_missing_vectors("m") == 0
    assert store.chunks_missing_vectors("m", 10) == []
    assert store.count_missing_vectors("another model") == 1501  # never checked: every chunk


def test_a_batch_writing_the_same_uri_twice_keeps_the_last_version(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    results = store.write_documents(
        [
            (draft("a.md", "r1", "one two"), [chunk("one", 0), chunk("two", 1)]),
            (draft("b.md"), [chunk("apple")]),
            (draft("a.md", "r1", "one two"), [chunk("one", 0), chunk("two", 1)]),
            (draft("a.md", "r2", "three"), [chunk("three")]),
        ],
        NOW,
    )
    statuses = [(r.status, r.chunks) for r in results]
    assert statuses == [
        (WriteStatus.CREATED, 2),
        (WriteStatus.CREATED, 1),
        (WriteStatus.DUPLICATE, 2),
        (WriteStatus.UPDATED, 1),
    ]
    assert [c.text for c in store.chunks_of(results[0].document_id)] == ["three"]
    assert store.lexical_search(["one"], 5, SearchFilters()) == []
    assert len(store.lexical_search(["three"], 5, SearchFilters())) == 1
    conn = store.connection()
    conn.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')")


def test_many_chunks_in_one_write_are_all_indexed(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    texts = [f"word{i} common" for i in range(1_234)]  # several INSERT statements
    doc = store.write_document(draft(), [chunk(t, i) for i, t in enumerate(texts)], NOW)
    assert [c.text for c in store.chunks_of(doc.document_id)] == texts
    assert len(store.lexical_search(["word1233"], 5, SearchFilters())) == 1
    assert len(store.lexical_search(["common"], 2_000, SearchFilters())) == 1_234
    store.connection().execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')")


def test_loading_some_vectors_reads_only_their_rows(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    for i in range(300):
        texts = [f"note {i} part {j}" for j in range(5)]
        chunks = [hashed(t, j) for j, t in enumerate(texts)]
        store.write_document(draft(f"{i}.md"), chunks, NOW, vector_batch("m", texts))
    every = sqlite_steps(store, lambda: store.load_vectors("m", 4), per=100)
    wanted = list(range(1, 1501, 15))  # 100 of the 1,500 chunks
    some = sqlite_steps(store, lambda: store.load_vectors("m", 4, wanted), per=100)
    assert store.load_vectors("m", 4, wanted)[0].tolist() == wanted
    assert some * 5 < every  # walking every vector of the model instead took 30x `every`


def _common_store(tmp_path: Path) -> SQLiteStore:
    """40 chunks over 4 documents: 'zebra' in all, 'lion' in 12, 'okapi' in one."""
    store = SQLiteStore(tmp_path / "b.db")
    for d in range(4):
        texts = [
            " ".join(["zebra"] * (1 + i % 3) + (["lion"] if i % 4 == 0 else []) + ["grass"] * i)
            + (" okapi" if (d, i) == (2, 5) else "")
            for i in range(10)
        ]
        store.write_document(draft(f"d{d}.md"), [chunk(t, i) for i, t in enumerate(texts)], NOW)
    return store


def test_common_terms_are_those_past_the_share_and_the_row_floor(tmp_path: Path) -> None:
    store = _common_store(tmp_path)
    terms = ["zebra", "lion", "okapi"]
    assert store.common_terms(terms, 0.5, 1) == ["zebra"]
    assert store.common_terms(terms, 0.2, 1) == ["zebra", "lion"]
    assert store.common_terms(terms, 0.2, 13) == ["zebra"]  # lion is in 12 chunks
    assert store.common_terms(terms, 0.2, 41) == []  # more rows than the store has
    assert store.common_terms(terms, 0.0, 1) == []


def test_common_terms_score_but_do_not_bring_chunks_in(tmp_path: Path) -> None:
    store = _common_store(tmp_path)
    terms = ["zebra", "lion", "okapi"]
    full = {s.chunk_id: s.score for s in store.lexical_search(terms, 100, SearchFilters())}
    assert len(full) == 40
    split = store.lexical_search(terms, 100, SearchFilters(), common=["zebra"])
    # the chunks with lion or okapi, each with its score over all three terms, in the order
    # of the full ranking
    rarer = {c.id for c in _chunks(store) if "lion" in c.text or "okapi" in c.text}
    assert len(rarer) == 13
    assert [s.chunk_id for s in split] == [c for c in full if c in rarer]
    assert all(s.score == pytest.approx(full[s.chunk_id], rel=1e-12) for s in split)
    top = store.lexical_search(terms, 3, SearchFilters(), common=["zebra"])
    assert top == split[:3]
    # all terms common: the plain OR query
    assert store.lexical_search(["zebra"], 100, SearchFilters(), common=["zebra"]) == (
        store.lexical_search(["zebra"], 100, SearchFilters())
    )
    best = store.lexical_search(
        terms, 100, SearchFilters(), common=["zebra"], best_per_document=True
    )
    assert len(best) == 4 and len({s.document_id for s in best}) == 4
    for scored in best:
        assert scored.document_id is not None
        own = {c.id for c in store.chunks_of(scored.document_id)}
        assert scored.chunk_id == next(s.chunk_id for s in split if s.chunk_id in own)


def _chunks(store: SQLiteStore) -> list[Chunk]:
    return [c for d in range(1, 5) for c in store.chunks_of(d)]


def test_import_writes_many_chunks_and_names_the_bad_record(tmp_path: Path) -> None:
    source = SQLiteStore(tmp_path / "a.db")
    texts = [f"word{i} common" for i in range(1_234)]  # several INSERT statements
    source.write_document(draft(), [chunk(t, i) for i, t in enumerate(texts)], NOW)
    records = list(source.export_records())
    target = SQLiteStore(tmp_path / "b.db")
    result = target.import_records(records)
    assert result.chunks == 1_234
    assert list(target.export_records()) == records
    assert len(target.lexical_search(["word777"], 5, SearchFilters())) == 1
    target.connection().execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')")
    # a chunk record that repeats an id: the error names its line, and nothing is written
    lines = [i for i, r in enumerate(records, start=1) if r["type"] == "chunk"]
    bad = [dict(r) for r in records]
    bad[lines[700] - 1]["id"] = bad[lines[3] - 1]["id"]
    fresh = SQLiteStore(tmp_path / "c.db")
    with pytest.raises(InvalidInput, match=f"import record {lines[700]} is invalid"):
        fresh.import_records(bad)
    assert fresh.stats().documents == 0 and fresh.stats().chunks == 0
