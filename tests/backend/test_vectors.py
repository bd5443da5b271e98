"""Conformance: vector blobs by (model, text hash) and the dense index over them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from nexusbrain.records import SearchFilters, VectorBatch
from nexusbrain.storage.base import Backend

from .conftest import NOW, OpenBackend, chunk, draft, write

DIM = 4
MODEL = "test-model"


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


VECTORS = {
    "north": unit(1, 0, 0, 0),
    "north-east": unit(1, 1, 0, 0),
    "east": unit(0, 1, 0, 0),
    "up": unit(0, 0, 1, 0),
    "down": unit(0, 0, -1, 0.1),
}


def batch(texts: Sequence[str]) -> VectorBatch:
    return VectorBatch(MODEL, DIM, {f"h-{t}": VECTORS[t].tobytes() for t in texts})


def hashed(text: str, ordinal: int = 0) -> object:
    return chunk(text, ordinal, text_hash=f"h-{text}")


def _load(backend: Backend) -> dict[str, int]:
    """One document per direction (two in 'sky'); chunk id by text."""
    ids: dict[str, int] = {}
    for text in ("north", "north-east", "east"):
        result = write(backend, draft(f"{text}.md", domain="ground"), [hashed(text)], batch([text]))
        ids[text] = backend.documents.chunks_of(result.document_id)[0].id
    sky = write(
        backend,
        draft("sky.md", domain="sky"),
        [hashed("up"), hashed("down", 1)],
        batch(["up", "down"]),
    )
    for c in backend.documents.chunks_of(sky.document_id):
        ids[c.text] = c.id
    return ids


def test_vectors_are_kept_once_per_model_and_text(backend: Backend) -> None:
    store = backend.documents
    write(backend, draft(), [hashed("north"), hashed("east", 1)], batch(["north"]))
    assert store.known_vector_hashes(MODEL, ["h-north", "h-east"]) == {"h-north"}
    assert store.known_vector_hashes("other", ["h-north"]) == set()
    assert store.count_missing_vectors(MODEL) == 1
    missing = store.chunks_missing_vectors(MODEL, 10)
    assert [(row[1], list(row[2])) for row in missing] == [("east", ["H"])]
    store.store_vectors(batch(["east"]), {missing[0][0]: "h-east"})
    assert store.count_missing_vectors(MODEL) == 0
    assert store.chunks_missing_vectors(MODEL, 10) == []
    assert store.count_missing_vectors("another model") == 2


def test_a_chunk_replaced_while_its_vector_was_made_keeps_its_own_hash(backend: Backend) -> None:
    """A background embedder reads a chunk, embeds it, and stores the vector `as_of` the change
    seq it read first: a chunk changed since (here its document re-written, and the new chunk
    given the old one's id) is left without the hash, so it is still listed as missing."""
    store = backend.documents
    write(backend, draft(revision="r1"), [chunk("north")])
    as_of = store.latest_chunk_change()
    (old_id, text, _, _) = store.chunks_missing_vectors(MODEL, 10)[0]
    assert text == "north"
    write(backend, draft(revision="r2"), [chunk("east")])  # replaced meanwhile
    (new_id, text, _, _) = store.chunks_missing_vectors(MODEL, 10)[0]
    assert text == "east"
    store.store_vectors(batch(["north"]), {old_id: "h-north", new_id: "h-north"}, as_of=as_of)
    assert [row[1] for row in store.chunks_missing_vectors(MODEL, 10)] == ["east"]
    assert store.known_vector_hashes(MODEL, ["h-north"]) == {"h-north"}  # stored all the same
    as_of = store.latest_chunk_change()
    store.store_vectors(batch(["east"]), {new_id: "h-east"}, as_of=as_of)
    assert store.count_missing_vectors(MODEL) == 0


def test_the_dense_index_finds_the_nearest_chunks(backend: Backend) -> None:
    ids = _load(backend)
    index = backend.dense_index(MODEL, DIM, centre=False)
    query = index.centre(unit(1, 0.2, 0, 0))
    found = index.search(query, 3)
    assert [s.chunk_id for s in found] == [ids["north"], ids["north-east"], ids["east"]]
    assert found[0].score == pytest.approx(float(unit(1, 0.2, 0, 0) @ VECTORS["north"]), rel=1e-3)
    scores = index.scores(query, [ids["east"], ids["up"]])
    assert scores[ids["east"]] == pytest.approx(float(unit(1, 0.2, 0, 0) @ VECTORS["east"]), 1e-3)
    assert scores[ids["up"]] == pytest.approx(0.0, abs=1e-3)  # orthogonal
    rows = index.vectors_of([ids["north"], 10_000])
    assert list(rows) == [ids["north"]]
    assert rows[ids["north"]] == pytest.approx(VECTORS["north"], abs=1e-3)
    assert len(index) == 5


def test_filters_and_best_per_document(backend: Backend) -> None:
    ids = _load(backend)
    index = backend.dense_index(MODEL, DIM, centre=False)
    query = index.centre(unit(0.1, 0.1, 1, 0))
    sky = index.search(query, 5, SearchFilters(domain="sky"))
    assert [s.chunk_id for s in sky] == [ids["up"]]
    best = index.search(query, 5, best_per_document=True)
    assert len({s.document_id for s in best}) == len(best)
    assert best[0].chunk_id == ids["up"]
    by_document = index.scores(query, [ids["down"]], per_document=True)
    sky_document = next(s.document_id for s in best if s.chunk_id == ids["up"])
    assert by_document == {sky_document: pytest.approx(best[0].score, rel=1e-3)}


def test_writes_show_up_at_the_next_query(backend: Backend) -> None:
    ids = _load(backend)
    index = backend.dense_index(MODEL, DIM, centre=False)
    query = index.centre(VECTORS["east"])
    assert index.search(query, 1)[0].chunk_id == ids["east"]
    east = backend.documents.find_document("east.md")
    assert east is not None
    backend.documents.retire_documents([east.id], NOW)
    query = index.centre(VECTORS["east"])
    assert ids["east"] not in {s.chunk_id for s in index.search(query, 5)}
    index.refresh()
    assert len(index) == 4


def test_an_index_at_the_change_a_search_read_reads_the_log_no_more(
    open_backend: OpenBackend,
) -> None:
    """A search's BM25 read gives its change seq; the dense index, already at it, takes it as
    up to date (one read of the change log a search), and catches up with a later one."""
    backend, other = open_backend(), open_backend()
    ids = _load(backend)
    index = backend.dense_index(MODEL, DIM, centre=False)
    index.centre(VECTORS["east"])  # started, and up to date
    seen = backend.lexical.search(["east"], 5, SearchFilters()).seq
    assert seen is not None
    east = other.documents.find_document("east.md")
    assert east is not None
    other.documents.retire_documents([east.id], NOW)  # committed after that read
    query = index.centre(VECTORS["east"], seen)
    assert index.search(query, 1)[0].chunk_id == ids["east"]  # the read's view: no new read
    later = backend.lexical.search(["east"], 5, SearchFilters()).seq
    assert later is not None and later > seen
    query = index.centre(VECTORS["east"], later)
    assert ids["east"] not in {s.chunk_id for s in index.search(query, 5)}


def test_centring_takes_similarities_around_the_mean(backend: Backend) -> None:
    _load(backend)
    plain = backend.dense_index(MODEL, DIM, centre=False)
    centred = backend.dense_index(MODEL, DIM, centre=True)
    raw = unit(1, 1, 0.5, 0)
    a = plain.centre(raw)
    b = centred.centre(raw)
    assert np.linalg.norm(a) == pytest.approx(1.0, abs=1e-5)
    assert np.linalg.norm(b) == pytest.approx(1.0, abs=1e-5)
    assert not np.allclose(a, b)  # the mean moved the query
