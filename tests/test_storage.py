"""The SQLite store itself: migrations, its FTS5 index and how much work its queries do. What every
backend must do is in tests/backend (the conformance suite)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from nexusbrain import storage
from nexusbrain.cli.main import cli
from nexusbrain.config import LexicalConfig, StorageConfig
from nexusbrain.errors import ConfigError, InvalidInput, NotFound
from nexusbrain.records import (
    ChunkDraft,
    DocumentDraft,
    DocumentKind,
    VectorBatch,
    WriteResult,
)
from nexusbrain.storage.base import IN_PROCESS, Backend, DenseIndexAdmin
from nexusbrain.storage.sqlite import vectors as vector_sql
from nexusbrain.storage.sqlite.migrations import LATEST, MIGRATIONS
from nexusbrain.storage.sqlite.store import SQLiteStore

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def write(
    store: SQLiteStore,
    document: DocumentDraft,
    chunks: Sequence[ChunkDraft],
    vectors: VectorBatch | None = None,
) -> WriteResult:
    return store.write_documents([(document, chunks)], NOW, vectors)[0]


def draft(uri: str = "a.md", revision: str = "r1", text: str = "alpha beta") -> DocumentDraft:
    return DocumentDraft(uri, "Title", "notes", DocumentKind.MARKDOWN, revision, text, {"x": 1})


def chunk(text: str = "alpha beta", ordinal: int = 0) -> ChunkDraft:
    return ChunkDraft(ordinal, 0, len(text), 1, 1, ("H",), text)


def test_opening_applies_every_migration_in_wal_mode(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    assert store.db.schema_version() == LATEST
    conn = sqlite3.connect(tmp_path / "b.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()
    again = SQLiteStore(tmp_path / "b.db")
    assert again.db.schema_version() == LATEST
    again.close()


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
    assert store.db.schema_version() == LATEST
    conn = store.db.connection()
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
    a = write(
        store, draft(), [hashed(t, i) for i, t in enumerate(texts)], vector_batch("m", embedded)
    )
    b = write(store, draft("b.md"), [hashed("one")], vector_batch("n", ["two"]))
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

    store.db.connection().set_progress_handler(tick, per)
    try:
        call()
    finally:
        store.db.connection().set_progress_handler(None, 0)
    return steps[0]


def test_the_missing_vector_check_looks_only_at_chunks_changed_since_it_was_complete(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    for i in range(300):
        texts = [f"note {i} part {j}" for j in range(5)]
        chunks = [hashed(t, j) for j, t in enumerate(texts)]
        write(store, draft(f"{i}.md"), chunks, vector_batch("m", texts))
    full = sqlite_steps(store, lambda: store.count_missing_vectors("m"))
    assert store.count_missing_vectors("m") == 0
    write(store, draft("new.md"), [hashed("fresh")])  # no vector
    assert store.count_missing_vectors("m") == 1
    assert [row[1] for row in store.chunks_missing_vectors("m", 10)] == ["fresh"]
    after_change = sqlite_steps(store, lambda: store.count_missing_vectors("m"))
    assert after_change * 20 < full
    store.store_vectors(vector_batch("m", ["fresh"]), {})
    assert store.count_missing_vectors("m") == 0
    assert store.chunks_missing_vectors("m", 10) == []
    assert store.count_missing_vectors("another model") == 1501  # never checked: every chunk


def test_many_chunks_in_one_write_are_all_indexed(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    texts = [f"word{i} common" for i in range(1_234)]  # several INSERT statements
    doc = write(store, draft(), [chunk(t, i) for i, t in enumerate(texts)])
    assert [c.text for c in store.chunks_of(doc.document_id)] == texts
    store.db.connection().execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')")


def test_loading_some_vectors_reads_only_their_rows(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "b.db")
    for i in range(300):
        texts = [f"note {i} part {j}" for j in range(5)]
        chunks = [hashed(t, j) for j, t in enumerate(texts)]
        write(store, draft(f"{i}.md"), chunks, vector_batch("m", texts))
    every = sqlite_steps(store, lambda: store.load_vectors("m", 4), per=100)
    wanted = list(range(1, 1501, 15))  # 100 of the 1,500 chunks
    some = sqlite_steps(store, lambda: store.load_vectors("m", 4, wanted), per=100)
    assert store.load_vectors("m", 4, wanted)[0].tolist() == wanted
    assert some * 5 < every  # walking every vector of the model instead took 30x `every`


def test_import_writes_many_chunks_and_names_the_bad_record(tmp_path: Path) -> None:
    source = SQLiteStore(tmp_path / "a.db")
    texts = [f"word{i} common" for i in range(1_234)]  # several INSERT statements
    write(source, draft(), [chunk(t, i) for i, t in enumerate(texts)])
    records = list(source.export_records())
    target = SQLiteStore(tmp_path / "b.db")
    result = target.import_records(records)
    assert result.chunks == 1_234
    assert list(target.export_records()) == records
    target.db.connection().execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')")
    # a chunk record that repeats an id: the error names its line, and nothing is written
    lines = [i for i, r in enumerate(records, start=1) if r["type"] == "chunk"]
    bad = [dict(r) for r in records]
    bad[lines[700] - 1]["id"] = bad[lines[3] - 1]["id"]
    fresh = SQLiteStore(tmp_path / "c.db")
    with pytest.raises(InvalidInput, match=f"import record {lines[700]} is invalid"):
        fresh.import_records(bad)
    assert fresh.stats().documents == 0 and fresh.stats().chunks == 0


@pytest.mark.parametrize(("setting", "pragma"), [("full", 2), ("normal", 1)])
def test_durability_sets_every_connection(tmp_path: Path, setting: str, pragma: int) -> None:
    """An acknowledged write is on disk by default (synchronous=FULL): BRAIN_DURABILITY=normal
    trades that for speed, on the writer's connection and every reader's alike."""
    from nexusbrain.config import Settings
    from nexusbrain.storage.sqlite.store import SQLiteStore

    settings = Settings.from_env(tmp_path / "d.db", {"BRAIN_DURABILITY": setting})
    store = SQLiteStore(tmp_path / "d.db", settings.storage)
    try:
        store.stats()
        list(store.export_records())
        with store.db._connections_lock:
            connections = list(store.db._connections)
        assert connections
        for conn in connections:
            assert conn.execute("PRAGMA synchronous").fetchone()[0] == pragma
    finally:
        store.close()


def test_a_sqlite_brain_keeps_its_dense_index_in_process_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Building or dropping a database-side dense index is a capability SQLite lacks: the
    command says so in one line and exits 1; its status names the in-process index."""
    backend = storage.open(tmp_path / "b.db")
    assert not isinstance(backend, DenseIndexAdmin)
    backend.close()
    monkeypatch.setenv("BRAIN_EMBEDDER", "hashing")
    db = ["--db", str(tmp_path / "b.db"), "dense-index"]
    for command in ("build", "drop"):
        result = CliRunner().invoke(cli, [*db, command])
        assert result.exit_code == 1, result.output
        assert result.output.splitlines() == [f"error: {IN_PROCESS}"]
    status = CliRunner().invoke(cli, [*db, "status", "--json"])
    assert status.exit_code == 0
    assert json.loads(status.output) == {
        "model": "hashing-256",
        "kind": "in-process",
        "built": False,
        "searching": "in-process",
    }


def open_url(url: str, lexical: LexicalConfig, config: StorageConfig, *, create: bool) -> Backend:
    """A backend registered by this test module: `nbtest://PATH` is the SQLite file PATH."""
    from nexusbrain.storage import sqlite as sqlite_backend

    return sqlite_backend.open_url(url.removeprefix("nbtest://"), lexical, config, create=create)


def test_a_backend_registers_its_scheme_and_unknown_schemes_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage, "_BACKENDS", dict(storage._BACKENDS))
    storage.register("NBTest", __name__)
    backend = storage.open(f"nbtest://{tmp_path / 'b.db'}")
    try:
        assert backend.describe() == str(tmp_path / "b.db")
    finally:
        backend.close()
    for url, scheme in [("mysql://h/d", "mysql"), ("sqlite://b.db", "sqlite")]:
        with pytest.raises(ConfigError, match=f"unknown database URL scheme '{scheme}'"):
            storage.open(url)
    with pytest.raises(NotFound, match="the file does not exist"):
        storage.open(f"sqlite:///{tmp_path / 'none.db'}", create=False)
