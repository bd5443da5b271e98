"""The SQLite store: migrations, atomic writes, duplicates, retirement, history."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nexusbrain.errors import NotFound, StorageError
from nexusbrain.records import ChunkDraft, DocumentDraft, DocumentKind, SearchFilters, WriteStatus
from nexusbrain.storage import SQLiteStore
from nexusbrain.storage.migrations import LATEST

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
