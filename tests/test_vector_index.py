"""The SQLite backend's dense index on a real brain: exact and quantized search, and its cache
file. A Brain writes; the index under test reads the same database through its own store."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings
from nexusbrain.embeddings import load_embedder
from nexusbrain.records import MarkdownNote, Scored
from nexusbrain.storage.sqlite import index_cache_path
from nexusbrain.storage.sqlite.store import SQLiteStore
from nexusbrain.storage.vector_index import IndexConfig, VectorIndex, _smallest
from nexusbrain.storage.vector_rows import Buffers, Rows, Space, single

EMBEDDER = load_embedder(Profile.HASHING)
assert EMBEDDER is not None
MODEL, DIM = EMBEDDER.model_id, EMBEDDER.dim

WORDS = (
    "tomato garden water summer deploy service vault key backup bucket river stone cloud"
    " engine piano violin orbit comet harbor ship bridge tunnel forest maple cedar lantern"
).split()


def fill(brain: Brain, count: int, start: int = 0) -> list[str]:
    rng = np.random.default_rng(7)
    texts = []
    for i in range(start, start + count):
        words = " ".join(rng.choice(WORDS, size=8))
        texts.append(f"# Note {i}\n\n{words} item{i}")
        brain.ingest_markdown(texts[-1], uri=f"n/{i}.md")
    return texts


def open_brain(path: Path) -> Brain:
    return Brain.open(settings=Settings(db=path, embedder=Profile.HASHING))


def index_on(
    path: Path, config: IndexConfig | None = None, cache: Path | None = None
) -> VectorIndex:
    return VectorIndex(SQLiteStore(path), MODEL, DIM, cache=cache, config=config)


def ranking(index: VectorIndex, query: np.ndarray, k: int = 10) -> list[int]:
    return [s.chunk_id for s in index.search(query, k)]


def test_quantized_search_finds_what_exact_search_finds(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    with open_brain(path) as brain:
        texts = fill(brain, 300)
        exact = index_on(path)
        wide = index_on(path, IndexConfig(exact_max=0))
        narrow = index_on(path, IndexConfig(exact_max=0, candidates=60))
        queries = [exact.centre(v) for v in EMBEDDER.encode(texts[::10])]
        wide.sync()
        narrow.sync()
        for i, query in zip(range(0, 300, 10), queries, strict=True):
            best = ranking(exact, query)
            assert exact.quantized is False
            # every row a candidate: the same ranking, from float16 rows
            assert ranking(wide, query) == best
            assert wide.quantized is True
            # 60 candidates of 300: the note whose own text is the query still comes first
            top = narrow.search(query, 1)[0]
            assert top.chunk_id == best[0]
            assert exact.store.fetch_chunks([top.chunk_id])[top.chunk_id][0].text == texts[i]
        # filters restrict the candidates too
        allowed = set(best[:3])
        assert {s.chunk_id for s in narrow.search(queries[-1], 10, allowed=allowed)} == allowed


def test_a_restart_reads_the_cache_file_and_applies_later_changes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "b.db"
    with open_brain(path) as brain:
        fill(brain, 50)
        brain.admin.refresh_index()
        cache = index_cache_path(path, MODEL)
        assert cache is not None and cache.exists()
        before = brain.search("item7 garden")[0]
    with open_brain(path) as writer:  # a writer that never searches: the cache goes stale
        fill(writer, 5, start=50)
        writer.delete_document(before.document_id)
    caplog.set_level(logging.INFO, logger="nexusbrain.storage.vector_index")
    restarted = index_on(path, cache=cache)
    restarted.sync()
    assert "read 50 vectors" in caplog.text and "from the store" not in caplog.text
    assert len(restarted) == 54
    with open_brain(path) as brain:
        hits = brain.search("item52 garden")
        assert hits[0].uri == "n/52.md"
        assert "dense" in {r.retriever for r in hits[0].trace.retrievers}
        assert all(h.uri != before.uri for h in brain.search("item7 garden", k=50))


def test_a_cache_from_another_database_at_the_same_path_is_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "b.db"
    with open_brain(path) as brain:
        fill(brain, 40)
        brain.admin.refresh_index()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    caplog.set_level(logging.INFO, logger="nexusbrain.storage.vector_index")
    with open_brain(path) as brain:  # a new database, the old cache file still beside it
        brain.ingest_markdown("# Bees\n\nThe beehive needs a new queen.", uri="bees.md")
        hits = brain.search("beehive queen")
        assert "ignoring the stale vector cache" in caplog.text
        assert [h.uri for h in hits] == ["bees.md"]


def test_an_unreadable_cache_file_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    with open_brain(path) as brain:
        fill(brain, 10)
        brain.search("garden")  # loads the index, which is written on close
        cache = index_cache_path(path, MODEL)
    assert cache is not None and cache.exists()
    cache.write_bytes(b"not a cache")
    with open_brain(path) as brain:
        assert brain.search("item3 garden")[0].uri == "n/3.md"
    with np.load(cache) as data:  # rewritten whole on close
        assert len(data["ids"]) == 10


@pytest.mark.parametrize(
    "change",
    [
        {"half": lambda a: a.astype(np.float32)},  # rows of another type
        {"docs": lambda a: a[:-1]},  # a row short
        {"codes": lambda a: a.astype(np.int64)},
        {"total": lambda a: a[:-1]},
    ],
    ids=["half float32", "docs short", "codes int64", "total short"],
)
def test_a_cache_file_with_rows_of_the_wrong_shape_or_type_is_ignored(
    tmp_path: Path, change: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """The cache's rows are used as the file holds them (mapped, not converted), so a file
    whose arrays do not say what the index keeps is read from the store instead."""
    path = tmp_path / "b.db"
    with open_brain(path) as brain:
        fill(brain, 12)
    cache = tmp_path / "vectors.npz"
    index_on(path, cache=cache).refresh()
    with np.load(cache) as data:
        kept = {name: data[name] for name in data.files}
    np.savez(cache, **(kept | {name: edit(kept[name]) for name, edit in change.items()}))
    fresh = index_on(path)
    started = index_on(path, cache=cache)
    with caplog.at_level(logging.WARNING):
        started.sync()
    assert "ignoring the unreadable vector cache" in caplog.text
    for vector in EMBEDDER.encode(["garden item3", "river stone"]):
        assert started.search(started.centre(vector), 5) == fresh.search(fresh.centre(vector), 5)


def test_every_finite_float16_value_is_converted_as_numpy_converts_it() -> None:
    every = np.arange(2**16, dtype=np.uint16).view(np.float16)
    finite = every[np.isfinite(every)]  # subnormals, both zeros and both signs among them
    assert len(finite) == 2**16 - 2 * 1024
    got, want = single(finite.reshape(-1, 8)), finite.astype(np.float32).reshape(-1, 8)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))  # -0.0 too


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 60), min_size=1, max_size=40),
    st.lists(st.integers(0, 39), max_size=10),
    st.lists(st.integers(0, 70), max_size=30),
)
def test_the_live_rows_of_chunk_ids_are_those_a_scan_finds(
    ids: list[int], dead: list[int], wanted: list[int]
) -> None:
    """Binary search where the ids ascend, a scan where they do not (an id used again after
    its row died): the same positions either way."""
    dim = 8
    space = Space(centring=True, prior=100, reference=np.zeros(dim, np.float32))
    half = np.random.default_rng(len(ids)).standard_normal((len(ids), dim)).astype(np.float16)
    rows = Rows.build(np.array(ids, np.int64), np.zeros(len(ids), np.int64), half, space, 0)
    rows = rows.without(np.array([ids[d] for d in dead if d < len(ids)], np.int64))
    asked = np.array(wanted, np.int64)
    scan = np.flatnonzero(np.isin(rows.ids, asked) & rows.alive)
    assert rows.ascending == bool(np.all(np.diff(ids) > 0))
    assert np.array_equal(rows.live_positions(asked), scan)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 257), min_size=1, max_size=300), st.data())
def test_the_nearest_codes_are_the_k_smallest_distances_ties_by_lower_id(
    distances: list[int], data: st.DataObject
) -> None:
    k = data.draw(st.integers(1, len(distances)))
    distance = np.array(distances, np.int16)
    ids = np.array(data.draw(st.permutations(range(len(distances)))), np.int64)
    chosen = _smallest(distance, ids, k)
    expected = sorted(range(len(distances)), key=lambda i: (distances[i], ids[i]))[:k]
    assert sorted(chosen.tolist()) == sorted(expected)


def test_an_index_started_from_its_cache_file_takes_chunks_without_vectors(
    tmp_path: Path,
) -> None:
    """Its rows are views of the file, mapped read-only: a chunk written without a vector for
    the model (a lexical-only writer here; a model server that is down in a brain) adds no row
    and writes nothing into them, and the rows that come later are copied, never written into
    the file."""
    path, cache = tmp_path / "b.db", tmp_path / "vectors.npz"
    with open_brain(path) as brain:
        fill(brain, 20)
    index_on(path, cache=cache).refresh()
    saved = cache.read_bytes()
    started = index_on(path, cache=cache)
    started.sync()
    assert not started._rows.half.flags.writeable  # mapped from the file
    with Brain.open(settings=Settings(db=path, embedder=Profile.NONE)) as lexical:
        lexical.ingest_markdown("# Bare\n\nwritten without a vector", uri="n/bare.md")
    started.sync()
    assert len(started) == 20
    with open_brain(path) as brain:
        fill(brain, 1, start=20)
        brain.admin.embed_missing()  # the bare chunk gets its vector too
    started.sync()
    assert len(started) == 22
    assert cache.read_bytes() == saved
    fresh = index_on(path)
    query = EMBEDDER.encode(["written without a vector"])[0]
    assert ranking(started, started.centre(query)) == ranking(fresh, fresh.centre(query))


def test_buffers_that_cannot_be_written_have_no_room() -> None:
    space = Space(centring=False, prior=0, reference=np.zeros(4, np.float32))
    rows = Rows.build(np.arange(3), np.zeros(3, np.int64), np.eye(3, 4, dtype=np.float16), space, 0)
    roomy = Buffers.grown(rows, 10)
    assert roomy.has_room(3, 7) and not roomy.has_room(3, 8) and not roomy.has_room(2, 1)
    roomy.half.flags.writeable = False
    assert not roomy.has_room(3, 1)


def cached_rows(cache: Path) -> int:
    with np.load(cache) as data:
        return len(data["ids"])


def test_the_cache_is_rewritten_after_a_tenth_of_a_large_index_changes(tmp_path: Path) -> None:
    with open_brain(tmp_path / "b.db") as brain:
        fill(brain, 100)
        cache = tmp_path / "index.npz"
        index = index_on(tmp_path / "b.db", IndexConfig(save_every=5), cache)
        index.sync()  # a first load from the store is written at once
        assert cached_rows(cache) == 100
        fill(brain, 9, start=100)
        index.sync()  # 9 changes: more than save_every, less than a tenth of the rows
        assert cached_rows(cache) == 100
        fill(brain, 2, start=109)
        index.sync()
        assert cached_rows(cache) == 111


def same(got: list[Scored], expected: list[Scored]) -> None:
    assert [(s.chunk_id, s.document_id) for s in got] == [
        (s.chunk_id, s.document_id) for s in expected
    ]
    assert [s.score for s in got] == pytest.approx([s.score for s in expected], rel=1e-5)


@pytest.mark.parametrize(("exact_max", "candidates"), [(20_000, 50), (0, 10_000), (0, 50)])
def test_an_index_kept_up_to_date_finds_what_a_fresh_one_finds(
    tmp_path: Path, exact_max: int, candidates: int
) -> None:
    """Writes, updates and deletions applied to a live index (dead rows, appends into spare
    room, compaction) leave it answering exactly as an index built afresh from the store:
    the centre is a function of the live vectors alone, and candidates tie by chunk id."""
    config = IndexConfig(exact_max=exact_max, candidates=candidates)
    path = tmp_path / "b.db"
    with open_brain(path) as brain:
        texts = fill(brain, 120)
        live = index_on(path, config)
        live.sync()
        fill(brain, 5, start=150)
        live.sync()  # an append: later ones go into the room it left
        snapshot = live._rows
        before = [snapshot.ids.copy(), snapshot.half.copy(), snapshot.alive.copy()]
        for round_ in range(4):
            fill(brain, 30, start=200 + 30 * round_)  # appends
            for i in range(round_ * 25, round_ * 25 + 25):  # deletions
                brain.delete_document(brain.find_document(f"n/{i}.md").id)
            brain.ingest_markdown("# Note 110\n\nrewritten river", uri="n/110.md")  # an update
            live.sync()
            fresh = index_on(path, config)
            fresh.sync()
            assert np.array_equal(live._rows.center, fresh._rows.center)
            assert len(live) == len(fresh)
            queries = [live.centre(v) for v in EMBEDDER.encode([*texts[::7], "river"])]
            for query in queries:
                same(live.search(query, 10), fresh.search(query, 10))
                got = live.search(query, 5, best_per_document=True)
                same(got, fresh.search(query, 5, best_per_document=True))
                some = {s.chunk_id for s in fresh.search(query, 40)[::3]}
                same(live.search(query, 5, allowed=some), fresh.search(query, 5, allowed=some))
                chunks = [s.chunk_id for s in fresh.search(query, 20)]
                assert live.scores(query, chunks) == pytest.approx(fresh.scores(query, chunks))
        assert live._rows.dead * 5 <= len(live._rows.ids)
        # the first snapshot never changed under a search that might still hold it
        after = [snapshot.ids, snapshot.half, snapshot.alive]
        assert all(np.array_equal(a, b) for a, b in zip(after, before, strict=True))
        assert snapshot.dead == 0


def test_a_chunk_id_removed_and_used_again_between_two_syncs(tmp_path: Path) -> None:
    """SQLite gives a new row the id after the largest one, so deleting the newest document
    and writing another re-uses its chunk id: one sync sees the id go and come back, and must
    hold the new vector, not the old one."""
    path = tmp_path / "b.db"
    with open_brain(path) as brain:
        fill(brain, 40)
        live = index_on(path, IndexConfig(exact_max=20_000))
        live.sync()
        last = brain.find_document("n/39.md")
        old_ids = [c.id for c in brain.document_chunks(last.id)]
        brain.delete_document(last.id)
        new = brain.ingest_markdown("# Fresh\n\norbit comet harbor lantern", uri="fresh.md")
        new_ids = [c.id for c in brain.document_chunks(new.document_id)]
        assert set(new_ids) & set(old_ids)  # the id came back
        live.sync()
        fresh = index_on(path, IndexConfig(exact_max=20_000))
        fresh.sync()
        assert len(live) == len(fresh) == 40
        query = live.centre(EMBEDDER.encode(["orbit comet harbor lantern"])[0])
        same(live.search(query, 10), fresh.search(query, 10))
        assert live.search(query, 1)[0].chunk_id in new_ids


def test_a_start_from_the_cache_takes_the_rows_derived_parts_from_it(tmp_path: Path) -> None:
    """The cache keeps each row's |v|², sign code and the exact sum, so a start does not
    recompute them; what it answers is what an index built from the store answers, and a cache
    written without them (or around another reference point) is still read."""
    path = tmp_path / "b.db"
    with open_brain(path) as brain:
        texts = fill(brain, 120)
    built = index_on(path, IndexConfig(exact_max=0, candidates=40))
    built.sync()
    cache = tmp_path / "vectors.npz"
    config = IndexConfig(exact_max=0, candidates=40)
    writer = index_on(path, config, cache)
    writer.refresh()
    with np.load(cache) as data:
        assert {"sq", "codes", "total", "reference"} <= set(data.files)
        kept = {name: data[name] for name in data.files}
    queries = [built.centre(v) for v in EMBEDDER.encode(texts[::7])]
    older = tmp_path / "older.npz"
    np.savez(older, **{k: v for k, v in kept.items() if k not in ("sq", "codes", "total")})
    moved = tmp_path / "moved.npz"
    np.savez(moved, **(kept | {"reference": kept["reference"] + 1}))
    assert kept["codes"].flags.f_contiguous and kept["codes"].shape[1] > 1
    row_major = tmp_path / "row_major.npz"  # codes as caches kept them before
    np.savez(row_major, **(kept | {"codes": np.ascontiguousarray(kept["codes"])}))
    for file in (cache, older, moved, row_major):
        started = index_on(path, config, file)
        started.sync()
        assert np.array_equal(started._rows.total, built._rows.total)
        assert np.array_equal(started._rows.codes, built._rows.codes)
        assert started._rows.codes.flags.f_contiguous
        for query in queries:
            assert started.search(query, 10) == built.search(query, 10)
        started.close()  # a cache without the derived parts, or row-major, is rewritten
        with np.load(file) as data:
            assert np.array_equal(data["codes"], kept["codes"])
            assert data["codes"].flags.f_contiguous


def mapped_kib(path: Path) -> int:
    """The resident KiB of this process's maps of `path` (/proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5:  # a mapping's first line
            inside = line.endswith(str(path))
        elif inside and head[0] == "Rss:":
            total += int(head[1])
    return total


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads Linux's /proc")
def test_warming_reads_every_page_of_the_mapped_vectors(tmp_path: Path) -> None:
    """A server warms its index before it answers, so that its first searches do not each
    wait on page faults for the candidates' rows of the mapped cache file."""
    path = tmp_path / "b.db"
    with open_brain(path) as brain:
        for n in range(0, 2000, 250):
            texts = [f"# Note {i}\n\nitem{i} {WORDS[i % len(WORDS)]}" for i in range(n, n + 250)]
            brain.ingest_markdown_batch(
                [MarkdownNote(t, uri=f"n/{n + i}.md") for i, t in enumerate(texts)]
            )
    cache = tmp_path / "vectors.npz"
    config = IndexConfig(exact_max=0, candidates=40)
    index_on(path, config, cache).refresh()
    started = index_on(path, config, cache)
    started.sync()  # opened from the cache file: the rows' vectors not read yet
    vectors_kib = started._rows.half.nbytes // 1024
    assert vectors_kib >= 900
    assert mapped_kib(cache) < vectors_kib / 2
    started.warm()
    assert mapped_kib(cache) >= vectors_kib
