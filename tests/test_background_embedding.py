"""Embedding in the background (retrieval/background.py), on a real brain: writes return before
their vectors exist, search ranks those chunks by BM25 and says so, the vectors then arrive and
the dense list covers them; close() stops the thread, and chunks a killed process left without
vectors are embedded by the next one. The slow model is a fake: the hashing embedder behind a
gate that the test opens."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from nexusbrain import storage, views
from nexusbrain.brain import Brain
from nexusbrain.cli import render
from nexusbrain.cli.eval_targets import BrainTarget
from nexusbrain.config import Profile, ServerSettings, Settings
from nexusbrain.embeddings.base import Vectors
from nexusbrain.embeddings.hashing import HashingEmbedder
from nexusbrain.records import Hit, MarkdownNote
from nexusbrain.retrieval.background import BackgroundEmbedder
from nexusbrain.retrieval.vectors import VectorWriter

from .conftest import LiveServer, free_port, start_server
from .test_openapi import check

THREAD = "nexusbrain-embedder"


class GatedEmbedder(HashingEmbedder):
    """The hashing embedder, except that the background embedder's thread waits until the gate
    opens: a model as slow as the test wants. Queries, encoded on the searching thread, are
    answered at once."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.entered = threading.Event()  # a batch reached the gate
        self.encoded = 0  # texts the background thread encoded

    def encode(self, texts: Sequence[str]) -> Vectors:
        if threading.current_thread().name == THREAD:
            self.entered.set()
            self.gate.wait()
            self.encoded += len(texts)
        return super().encode(texts)


def background_brain(db: Path, embedder: HashingEmbedder) -> Brain:
    settings = Settings(db=db, embedder=Profile.HASHING)
    return Brain(storage.open(settings.db, settings.lexical), embedder, settings, background=True)


@pytest.fixture
def gated() -> GatedEmbedder:
    return GatedEmbedder()


@pytest.fixture
def slow_brain(tmp_path: Path, gated: GatedEmbedder) -> Iterator[Brain]:
    brain = background_brain(tmp_path / "brain.db", gated)
    yield brain
    gated.gate.set()  # let a batch in hand finish, so that close() can stop the thread
    brain.close()


@pytest.fixture
def slow_server(slow_brain: Brain) -> Iterator[LiveServer]:
    settings = ServerSettings(port=free_port())
    server, thread = start_server(slow_brain, settings)
    yield LiveServer(f"http://127.0.0.1:{settings.port}", slow_brain)
    server.should_exit = True
    thread.join(timeout=10)


NOTES = [
    MarkdownNote(f"# Note {i}\n\nThe {word} report for week {i} is ready.", uri=f"note-{i}")
    for i, word in enumerate(["budget", "hiring", "travel", "security", "roadmap"])
]


def eventually(check: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def retrievers(hit: Hit) -> set[str]:
    return {r.retriever for r in hit.trace.retrievers}


def embedder_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD]


def test_writes_do_not_wait_and_search_says_bm25_until_the_vectors_arrive(
    slow_brain: Brain, gated: GatedEmbedder
) -> None:
    slow_brain.ingest_markdown_batch(NOTES)  # returns although no vector can be made yet
    stats = slow_brain.stats()
    assert stats.store.chunks == 5
    assert stats.embedder.background and stats.embedder.embedded_chunks == 0
    assert views.stats(stats)["embedding"] == "background"

    hits = slow_brain.search("security report", k=3)
    assert hits[0].uri == "note-3"
    assert retrievers(hits[0]) == {"bm25"}  # the dense list had nothing to rank
    coverage = hits[0].trace.dense_coverage
    assert coverage is not None and not coverage.has_vector
    assert (coverage.embedded, coverage.chunks) == (0, 5)
    trace = views.hit(hits[0])["trace"]
    assert trace["dense_coverage"] == {"embedded": 0, "chunks": 5, "has_vector": False}
    assert "BM25 alone" in trace["note"] and "0 of 5 chunks" in trace["note"]

    gated.gate.set()
    eventually(lambda: slow_brain.stats().embedder.embedded_chunks == 5)
    hits = slow_brain.search("security report", k=3)
    assert hits[0].uri == "note-3"
    assert retrievers(hits[0]) == {"bm25", "dense"}  # the next search sees the vectors
    assert all(h.trace.dense_coverage is None for h in hits)
    assert gated.encoded == 5


def test_a_chunk_written_later_is_embedded_too_and_known_text_is_not_embedded_again(
    slow_brain: Brain, gated: GatedEmbedder
) -> None:
    gated.gate.set()
    slow_brain.ingest_markdown_batch(NOTES[:2])
    eventually(lambda: slow_brain.stats().embedder.embedded_chunks == 2)
    slow_brain.add_memory("The travel report for week 2 is ready.")  # new text
    slow_brain.ingest_markdown(NOTES[0].content, uri="copy-of-note-0")  # known text
    eventually(lambda: slow_brain.stats().embedder.embedded_chunks == 4)
    assert gated.encoded == 3


def test_embed_missing_waits_for_every_vector(slow_brain: Brain, gated: GatedEmbedder) -> None:
    slow_brain.ingest_markdown_batch(NOTES)
    assert slow_brain.admin.embed_missing(wait=False) == 0  # left to the thread
    gated.gate.set()
    slow_brain.admin.embed_missing()
    assert slow_brain.stats().embedder.embedded_chunks == 5


def test_close_stops_the_thread_after_storing_the_batch_in_hand(
    tmp_path: Path, gated: GatedEmbedder
) -> None:
    db = tmp_path / "brain.db"
    brain = background_brain(db, gated)
    assert len(embedder_threads()) == 1
    brain.ingest_markdown_batch(NOTES)
    assert gated.entered.wait(10)
    closing = threading.Thread(target=brain.close)
    closing.start()
    closing.join(0.3)
    assert closing.is_alive()  # close() waits for the batch the thread holds...
    gated.gate.set()
    closing.join(10)
    assert not closing.is_alive() and embedder_threads() == []
    with Brain.open(settings=Settings(db=db, embedder=Profile.HASHING)) as again:
        assert again.stats().embedder.embedded_chunks == 5  # ...and stores it


CHILD = """
import sys, threading
from nexusbrain import storage
from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings
from nexusbrain.embeddings.hashing import HashingEmbedder

class Stuck(HashingEmbedder):
    def encode(self, texts):
        if threading.current_thread() is not threading.main_thread():
            threading.Event().wait()  # the model never finishes a batch
        return super().encode(texts)

settings = Settings(db=sys.argv[1], embedder=Profile.HASHING)
brain = Brain(storage.open(settings.db, settings.lexical), Stuck(), settings, background=True)
for i in range(20):
    brain.ingest_markdown(f"# Note {i}\\n\\nNote number {i} of the crash test.", uri=f"n-{i}")
print("written", flush=True)
threading.Event().wait()
"""


def test_a_restart_embeds_what_a_killed_process_left(tmp_path: Path) -> None:
    db = tmp_path / "brain.db"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "written"
    child.send_signal(signal.SIGKILL)
    assert child.wait(30) == -signal.SIGKILL
    embedder = HashingEmbedder()
    with background_brain(db, embedder) as brain:
        eventually(lambda: brain.stats().embedder.embedded_chunks == 20)
        hits = brain.search("note number 7", k=1)
        assert hits[0].uri == "n-7" and "dense" in retrievers(hits[0])
        assert hits[0].trace.dense_coverage is None


def test_a_failing_batch_is_retried_and_the_thread_goes_on(tmp_path: Path) -> None:
    class Flaky(HashingEmbedder):
        """Fails its first batch, as a model out of memory would."""

        failures = 1

        def encode(self, texts: Sequence[str]) -> Vectors:
            if self.failures:
                self.failures -= 1
                raise RuntimeError("out of memory")
            return super().encode(texts)

    settings = Settings(db=tmp_path / "brain.db", embedder=Profile.NONE)
    with Brain.open(settings=settings) as lexical_only:  # chunks without any vector
        lexical_only.ingest_markdown_batch(NOTES)
    backend = storage.open(settings.db, settings.lexical)
    vectors = VectorWriter(backend.documents, Flaky())
    worker = BackgroundEmbedder(vectors, window=4, group=2, idle_seconds=0.05)
    worker.start()
    eventually(lambda: vectors.missing() == 0)
    assert worker.running and worker.missing == 0
    worker.close()
    assert not worker.running
    backend.close()


def test_a_window_is_embedded_shortest_first_a_group_per_call(tmp_path: Path) -> None:
    class Recording(HashingEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[list[int]] = []  # the word count of each text, call by call

        def encode(self, texts: Sequence[str]) -> Vectors:
            self.calls.append([len(t.split()) for t in texts])
            return super().encode(texts)

    words = [9, 2, 7, 4, 1, 8, 3, 6, 5, 10]  # notes of mixed length, in store order
    notes = [MarkdownNote(" ".join(f"w{n}x{j}" for j in range(n)), uri=f"n{n}") for n in words]
    settings = Settings(db=tmp_path / "brain.db", embedder=Profile.NONE)
    with Brain.open(settings=settings) as lexical_only:
        lexical_only.ingest_markdown_batch(notes)
    backend = storage.open(settings.db, settings.lexical)
    recording = Recording()
    worker = BackgroundEmbedder(VectorWriter(backend.documents, recording), window=6, group=2)
    seen: list[tuple[int, int]] = []
    assert worker.drain(lambda _, done, total: seen.append((done, total))) == 10
    # two windows (the first six notes, then four), each sorted, cut into calls of two
    assert recording.calls == [[1, 2], [4, 7], [8, 9], [3, 5], [6, 10]]
    assert seen == [(2, 10), (4, 10), (6, 10), (8, 10), (10, 10)]
    assert worker.missing == 0
    backend.close()


def test_the_edge_and_hashing_profiles_embed_inside_the_write(brain: Brain) -> None:
    brain.ingest_markdown_batch(NOTES)
    stats = brain.stats()
    assert not stats.embedder.background
    assert stats.embedder.embedded_chunks == stats.store.chunks == 5
    assert views.stats(stats)["embedding"] == "inline"
    assert embedder_threads() == []


def test_the_cli_says_which_hits_bm25_alone_ranked(
    slow_brain: Brain, capsys: pytest.CaptureFixture[str]
) -> None:
    slow_brain.ingest_markdown_batch(NOTES)
    render.hits([views.hit(h) for h in slow_brain.search("security report", k=2)], explain=True)
    out = capsys.readouterr().out
    assert out.startswith("note: 0 of 5 chunks have their vectors so far;")
    assert "dense: no vector yet, ranked by BM25 alone" in out
    render.stats(views.stats(slow_brain.stats()))
    out = capsys.readouterr().out
    assert "embedded_chunks: 0" in out and "embedding: background" in out


def test_http_stats_and_search_show_the_progress(
    slow_server: LiveServer, gated: GatedEmbedder
) -> None:
    with slow_server.client() as client:
        batch = [{"title": f"Note {i}", "content": n.content} for i, n in enumerate(NOTES)]
        assert client.post("/ingest/markdown/batch", json={"documents": batch}).status_code == 200
        spec = client.get("/openapi.json").json()
        answer = client.get("/stats")
        check(spec, "/stats", "GET", answer)  # the progress fields are declared
        stats = answer.json()
        assert (stats["chunks"], stats["embedded_chunks"]) == (5, 0)
        assert stats["embedding"] == "background"
        answer = client.get("/search", params={"q": "security report", "k": 2})
        check(spec, "/search", "GET", answer)  # and the trace's coverage and note
        hit = answer.json()["hits"][0]
        assert hit["title"] == "Note 3"
        assert hit["trace"]["dense_coverage"] == {"embedded": 0, "chunks": 5, "has_vector": False}
        assert hit["trace"]["note"].startswith("this chunk has no vector yet, so BM25 alone")
        gated.gate.set()
        eventually(lambda: client.get("/stats").json()["embedded_chunks"] == 5)
        hit = client.get("/search", params={"q": "security report", "k": 2}).json()["hits"][0]
        assert "dense_coverage" not in hit["trace"] and "note" not in hit["trace"]
        assert {r["retriever"] for r in hit["trace"]["retrievers"]} == {"bm25", "dense"}


def test_an_evaluation_scores_the_brain_with_every_vector(
    slow_brain: Brain, gated: GatedEmbedder
) -> None:
    """The in-process eval target waits for the vectors after adding its corpus, so a slow
    profile is scored on its dense list, not on whatever part of it was ready (here the
    thread's first batch is held at the gate for a while)."""
    threading.Timer(0.3, gated.gate.set).start()
    BrainTarget(slow_brain).add_markdown([(n.uri or "", "", n.content) for n in NOTES])
    assert slow_brain.stats().embedder.embedded_chunks == 5
