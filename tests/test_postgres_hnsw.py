"""pgvector HNSW as a PostgreSQL brain's dense index (storage/postgres/hnsw.py): built on
request around a frozen centre, searched with rescoring and iterative scans, kept current by
every writer, built again around a new centre, dropped; and the same through Brain and CLI."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from click.testing import CliRunner

from nexusbrain.brain import Brain
from nexusbrain.cli.main import cli
from nexusbrain.config import Profile, Settings
from nexusbrain.errors import Busy, InvalidInput, NotFound
from nexusbrain.records import SearchFilters, VectorBatch
from nexusbrain.retrieval.vectors import to_blob
from nexusbrain.storage.base import Backend, dense_admin
from nexusbrain.storage.postgres import hnsw
from nexusbrain.storage.vector_index import IndexConfig, VectorIndex

from .backend.conftest import NOW, chunk, draft, write
from .pgserver import Server, open_url

psycopg = pytest.importorskip("psycopg")

MODEL, DIM = "test-model", 16


@pytest.fixture
def url(postgres: Server) -> str:
    return postgres.url()


def _unit(rng: np.random.Generator, n: int, shift: float = 0.8) -> np.ndarray:
    """Unit rows sharing one strong direction (as the edge model's do), so centring matters."""
    rows = rng.normal(size=(n, DIM)).astype(np.float32) * 0.3
    rows[:, 0] += shift
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _fill(backend: Backend, rows: np.ndarray, start: int = 0, domain: str = "notes") -> list[int]:
    """One document per row, its one chunk's vector that row; returns the chunk ids."""
    ids = []
    for n, row in enumerate(rows, start):
        result = write(
            backend,
            draft(f"d{n}.md", text=f"doc {n}", domain=domain),
            [chunk(f"doc {n}", text_hash=f"h{n}")],
            VectorBatch(MODEL, DIM, {f"h{n}": to_blob(row)}),
        )
        ids.append(backend.documents.chunks_of(result.document_id)[0].id)
    return ids


def _build(backend: Backend, **options: Any) -> dict[str, object]:
    return dense_admin(backend).build_dense(
        MODEL,
        DIM,
        centre=True,
        m=options.get("m", 16),
        ef_construction=options.get("ef_construction", 64),
        memory=str(options.get("memory", "64MB")),
        progress=options.get("progress"),  # type: ignore[arg-type]
    )


def _exact(backend: Backend) -> VectorIndex:
    index = VectorIndex(backend.documents, MODEL, DIM, config=IndexConfig(exact_max=10**9))
    index.sync()
    return index


def _centred_nulls(backend: Backend) -> int:
    """Stored vectors of the model without their centred form (the index lacks them)."""
    with backend.db.read() as conn:  # type: ignore[attr-defined]
        row = conn.execute(
            "SELECT count(*) FROM vectors WHERE model = %s AND centred IS NULL", (MODEL,)
        ).fetchone()
    return int(row[0])


def test_once_built_a_replica_searches_the_hnsw_index_and_finds_what_exact_search_finds(
    url: str, opened: list[Backend]
) -> None:
    rng = np.random.default_rng(7)
    writer = open_url(opened, url)
    _fill(writer, _unit(rng, 300))
    assert type(writer.dense_index(MODEL, DIM, centre=True)).__name__ == "VectorIndex"
    built = _build(writer)
    assert built["built"] is True and built["rows_at_build"] == 300
    replica = open_url(opened, url)
    index = replica.dense_index(MODEL, DIM, centre=True)
    assert type(index).__name__ == "PgvectorIndex"
    exact = _exact(writer)
    for raw in _unit(rng, 20):
        want = exact.search(exact.centre(raw), 10)
        got = index.search(index.centre(raw), 10)
        assert [s.chunk_id for s in got[:5]] == [s.chunk_id for s in want[:5]]
        assert np.allclose([s.score for s in got], [s.score for s in want], atol=5e-3)
        scores = index.scores(index.centre(raw), [s.chunk_id for s in want])
        assert np.allclose([scores[s.chunk_id] for s in want], [s.score for s in want], atol=5e-3)
    assert len(index) == 300


def test_writes_after_the_build_are_centred_and_searched_and_retired_ones_are_not(
    url: str, opened: list[Backend]
) -> None:
    rng = np.random.default_rng(8)
    writer = open_url(opened, url)
    _fill(writer, _unit(rng, 100))
    _build(writer)
    index = open_url(opened, url).dense_index(MODEL, DIM, centre=True)
    new = _unit(rng, 1)[0]
    result = write(
        writer,
        draft("new.md", text="new"),
        [chunk("new", text_hash="new")],
        VectorBatch(MODEL, DIM, {"new": to_blob(new)}),
    )
    (chunk_id,) = [c.id for c in writer.documents.chunks_of(result.document_id)]
    assert _centred_nulls(writer) == 0
    hits = index.search(index.centre(new), 3)
    assert hits[0].chunk_id == chunk_id and hits[0].score > 0.99
    assert set(index.vectors_of([chunk_id])) == {chunk_id}
    writer.documents.retire_documents([result.document_id], NOW)
    assert chunk_id not in [s.chunk_id for s in index.search(index.centre(new), 10)]


def _planned_on_the_index(monkeypatch: pytest.MonkeyPatch, *, iterative: bool = True) -> None:
    """Make PostgreSQL use the HNSW index, as it does on a large table (on a few hundred rows
    it scans the table and sorts, which is exact); `iterative=False` takes away the
    iterative scans that search asks for, to show what they do."""
    from nexusbrain.storage.postgres.hnsw import PgvectorIndex

    original = PgvectorIndex._rows

    def planned(self: Any, query: str, params: Any, settings: Any = None) -> Any:
        if settings is not None:
            settings = {**settings, "enable_seqscan": "off", "enable_sort": "off"}
            if not iterative:
                del settings["hnsw.iterative_scan"]
        return original(self, query, params, settings)

    monkeypatch.setattr(PgvectorIndex, "_rows", planned)


def test_a_filter_that_keeps_few_rows_still_gets_k_hits_through_iterative_scans(
    url: str, opened: list[Backend], monkeypatch: pytest.MonkeyPatch
) -> None:
    from nexusbrain.storage.postgres.hnsw import PgvectorIndex

    rng = np.random.default_rng(9)
    rows, raw = _unit(rng, 400), _unit(rng, 1)[0]
    centre = rows.sum(axis=0) / (len(rows) + IndexConfig().centre_prior)
    centred = (rows - centre) / np.linalg.norm(rows - centre, axis=1, keepdims=True)
    query = (raw - centre) / np.linalg.norm(raw - centre)
    rank = np.argsort(-(centred @ query))
    far = set(rank[60:80].tolist())  # well behind the nearest 10, and still similar
    backend = open_url(opened, url)
    ids = [
        _fill(backend, rows[n : n + 1], start=n, domain="rare" if n in far else "notes")[0]
        for n in range(len(rows))
    ]
    _build(backend)
    # 10 candidates alone hold none of the "rare" rows: the scan must go on past them
    index = PgvectorIndex(backend.db, MODEL, DIM, ef_search=10)  # type: ignore[attr-defined]
    rare = SearchFilters(domain="rare")
    _planned_on_the_index(monkeypatch, iterative=False)
    assert len(index.search(index.centre(raw), 10, rare)) < 10
    monkeypatch.undo()
    _planned_on_the_index(monkeypatch)
    hits = index.search(index.centre(raw), 10, rare)
    assert {h.chunk_id for h in hits} <= {ids[n] for n in far}
    exact = _exact(backend)
    assert [h.chunk_id for h in hits] == [
        s.chunk_id for s in exact.search(exact.centre(raw), 10, rare)
    ]
    assert len(hits) == 10


def test_vectors_written_while_the_index_is_built_all_get_their_centred_form(
    url: str, opened: list[Backend]
) -> None:
    rng = np.random.default_rng(10)
    writer = open_url(opened, url)
    _fill(writer, _unit(rng, 200))
    other = open_url(opened, url)
    stop, written = threading.Event(), []

    def stream() -> None:
        n = 1000
        while not stop.is_set() and n < 1400:
            written.extend(_fill(other, _unit(rng, 1), start=n))
            n += 1

    thread = threading.Thread(target=stream)
    thread.start()
    try:
        _build(writer)
    finally:
        stop.set()
        thread.join(timeout=60)
    assert written  # some writes overlapped the build
    assert _centred_nulls(writer) == 0


def test_a_second_build_centres_around_the_rows_of_then_and_drop_takes_it_away(
    url: str, opened: list[Backend]
) -> None:
    rng = np.random.default_rng(11)
    backend = open_url(opened, url)
    _fill(backend, _unit(rng, 100))
    first = _build(backend)
    _fill(backend, -_unit(rng, 100, shift=2.0), start=100)  # the centre moves a long way
    second = _build(backend, m=8, ef_construction=32)
    assert second["rows_at_build"] == 200 and second["m"] == 8
    assert second["built_at"] != first["built_at"]
    index = open_url(opened, url).dense_index(MODEL, DIM, centre=True)
    exact = _exact(backend)
    raw = _unit(rng, 1)[0]
    want = exact.search(exact.centre(raw), 5)
    assert [s.chunk_id for s in index.search(index.centre(raw), 5)] == [s.chunk_id for s in want]
    dropped = dense_admin(backend).drop_dense(MODEL)
    assert dropped["built"] is False and dropped["kind"] == "in-process"
    assert (
        type(open_url(opened, url).dense_index(MODEL, DIM, centre=True)).__name__ == "VectorIndex"
    )
    assert _centred_nulls(backend) == 200
    with pytest.raises(NotFound):
        dense_admin(backend).drop_dense(MODEL)


def test_a_build_with_nothing_to_index_or_bad_parameters_says_so(
    url: str, opened: list[Backend], tmp_path: Path
) -> None:
    backend = open_url(opened, url)
    with pytest.raises(InvalidInput, match="no vectors"):
        _build(backend)
    with pytest.raises(InvalidInput, match="ef_construction"):
        _build(backend, m=16, ef_construction=8)
    with pytest.raises(InvalidInput, match="such as 512MB"):
        _build(backend, memory="512MB; DROP TABLE vectors")
    sqlite = open_url(opened, str(tmp_path / "brain.db"))
    with pytest.raises(InvalidInput, match="PostgreSQL brains"):
        _build(sqlite)
    _fill(backend, _unit(np.random.default_rng(12), 3))
    with backend.db.connection() as other:  # type: ignore[attr-defined]
        key = f"nexusbrain:dense:{MODEL}:build"
        other.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))
        try:
            with pytest.raises(Busy, match="another dense-index build"):
                _build(backend)
        finally:
            other.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))
    backend.db.vector_version = (0, 7, 4)  # type: ignore[attr-defined]
    with pytest.raises(InvalidInput, match=r"pgvector 0\.7\.4 has no iterative index scans"):
        _build(backend)


def test_a_build_whose_graph_outgrows_its_memory_says_so_and_still_builds(
    url: str, opened: list[Backend]
) -> None:
    backend = open_url(opened, url)
    _fill(backend, _unit(np.random.default_rng(13), 2000))
    said: list[str] = []
    built = _build(backend, memory="1MB", progress=said.append)
    assert built["built"] is True
    assert any("PostgreSQL: hnsw graph no longer fits into maintenance_work_mem" in m for m in said)


def test_a_failed_build_gives_its_connection_back_as_it_found_it(
    url: str, opened: list[Backend], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build sets maintenance_work_mem and hears notices on a pooled connection: a
    build that fails midway must not leave either behind for the next user."""
    backend = open_url(opened, url)
    _fill(backend, _unit(np.random.default_rng(14), 50))
    db = backend.db  # type: ignore[attr-defined]
    with db.connection() as conn:
        default = conn.execute("SHOW maintenance_work_mem").fetchone()[0]

    def broken(self: object) -> None:
        raise RuntimeError("the build broke")

    monkeypatch.setattr(hnsw._Watch, "__enter__", broken)
    said: list[str] = []
    with pytest.raises(RuntimeError, match="the build broke"):
        _build(backend, memory="3MB", progress=said.append)
    heard = len(said)
    with contextlib.ExitStack() as every:  # each of the pool's connections, the build's among them
        pooled = [
            every.enter_context(db.connection()) for _ in range(db.pool.get_stats()["pool_size"])
        ]
        for conn in pooled:
            assert conn.execute("SHOW maintenance_work_mem").fetchone()[0] == default != "3MB"
            conn.execute("DO $$ BEGIN RAISE NOTICE 'after the build'; END $$")
    assert len(said) == heard  # the build no longer hears its connection's notices


TOPICS = ["api keys", "database backups", "oncall rota", "release trains", "incident reviews"]
WHEN = ["monthly", "nightly", "on mondays", "every second thursday", "within a week"]
WHO = ["the platform team", "the data team", "whoever is on call", "release managers", "sre"]


NOTES = {
    f"n{i}.md": f"# {TOPICS[i % 5]} {i}\n\n{TOPICS[i % 5]} are handled {WHEN[(i // 5) % 5]}"
    f" by {WHO[(i * 3) % 5]}; see page {i}.\n"
    for i in range(40)
}


def test_brain_and_cli_search_alike_before_and_after_the_build(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text)
    settings = Settings(db=url, embedder=Profile.HASHING)
    queries = ["how often are api keys rotated", "when do releases happen", "backups"]
    with Brain.open(settings=settings) as brain:
        brain.ingest_dir(folder)
        assert brain.admin.dense_index_status()["searching"] == "in-process"
        before = [[h.chunk_id for h in brain.search(q, k=5)] for q in queries]
    monkeypatch.setenv("BRAIN_EMBEDDER", "hashing")
    runner = CliRunner()
    built = runner.invoke(cli, ["--db", url, "--local", "dense-index", "build", "--json"])
    assert built.exit_code == 0, built.output
    assert orjson.loads(built.stdout)["rows_at_build"] == len(NOTES)
    assert "40 vectors centred" in built.stderr  # progress goes to stderr, JSON to stdout
    status = runner.invoke(cli, ["--db", url, "--local", "dense-index", "status", "--json"])
    value = orjson.loads(status.stdout)
    assert value["kind"] == "pgvector-hnsw" and value["searching"] == "pgvector-hnsw"
    with Brain.open(settings=settings) as brain:
        after = [[h.chunk_id for h in brain.search(q, k=5)] for q in queries]
    # the same hits; the order of near-ties may differ (the index keeps float16 rows)
    assert [a[:2] for a in after] == [b[:2] for b in before]
    assert [set(a) for a in after] == [set(b) for b in before]
    text = runner.invoke(cli, ["--db", url, "--local", "dense-index", "status"])
    assert "pgvector HNSW over 40 rows" in text.output
    assert runner.invoke(cli, ["--db", str(tmp_path / "b.db"), "add", "a memo"]).exit_code == 0
    sqlite = runner.invoke(cli, ["--db", str(tmp_path / "b.db"), "dense-index", "build"])
    assert sqlite.exit_code == 1 and "PostgreSQL brains" in sqlite.output
