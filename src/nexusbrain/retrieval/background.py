"""Embedding in the background, for a profile too slow to embed inside a write.

With such a profile a write stores its chunks without vectors (those whose text has none yet)
and wakes a `BackgroundEmbedder`: one thread that embeds whatever
`DocumentStore.chunks_missing_vectors` lists, a window of chunks at a time, shortest first, in
small groups each stored in its own transaction. The queue is the store itself, so nothing
lives only in memory: a killed process leaves chunks without vectors, and the next process to
open the brain embeds them. The thread also polls, so chunks another process wrote are found
too.

Until a chunk has its vector, searches rank it by BM25 alone; `annotate` says so in the hits'
traces. The dense index follows the chunk change log, and storing a vector logs a change, so
the next search sees it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from nexusbrain.errors import ModelUnavailable
from nexusbrain.records import DenseCoverage, Hit, Progress
from nexusbrain.retrieval.vectors import VectorWriter
from nexusbrain.storage.base import DenseIndex, DocumentStore

log = logging.getLogger(__name__)

# Chunks read from the store at a time, then embedded shortest first: a transformer pads each
# run to its longest text, so a run of texts of like length (by characters, close enough to
# tokens) wastes little on padding; a wide window finds such runs (docs/design/embedding.md
# has the padding it leaves).
WINDOW = 512
# Chunks embedded per transaction: about a second of the quality model's work on long chunks,
# so that `close` (which lets the group in hand finish and be stored) returns soon.
GROUP = 32
IDLE_SECONDS = 2.0  # how often an idle thread looks for chunks that other processes wrote
RECOUNT_SECONDS = 5.0  # how often the count of chunks without a vector is taken afresh


class BackgroundEmbedder:
    """Embeds the store's chunks that lack a vector, on its own thread, until closed."""

    def __init__(
        self,
        vectors: VectorWriter,
        *,
        window: int = WINDOW,
        group: int = GROUP,
        idle_seconds: float = IDLE_SECONDS,
        on_done: Callable[[], None] | None = None,
    ) -> None:
        """`on_done` is called (on the thread) each time it finds no chunk without a vector:
        a model switch waits for that (brain/models.py)."""
        self._vectors = vectors
        self.on_done = on_done
        self._window = window
        self._group = group
        self._idle = idle_seconds
        self._lock = threading.Lock()  # one window at a time: the thread's, or drain()'s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._missing = 0
        self._counted_at = float("-inf")

    def start(self) -> None:
        """Start the thread (once). It counts what is missing and begins at once."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="nexusbrain-embedder", daemon=True
            )
            self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def missing(self) -> int:
        """Chunks without a vector, as last counted (exact within RECOUNT_SECONDS, and after
        every write this process makes)."""
        return self._missing

    @property
    def pending(self) -> bool:
        """Whether chunks may lack a vector: some did at the last count, or a write came since."""
        return self._missing > 0 or self._counted_at == float("-inf")

    def wake(self) -> None:
        """Tell the thread that chunks without vectors were just committed."""
        self._counted_at = float("-inf")
        self._wake.set()

    def drain(self, progress: Progress | None = None) -> int:
        """Embed every chunk still without a vector now, in the caller's thread (the worker
        waits meanwhile). Returns how many were embedded."""
        with self._lock:
            total, done = self._count(), 0
            while embedded := self._embed_window(progress, done, total):
                done += embedded
            self._count()
        return done

    def close(self, timeout: float | None = None) -> None:
        """Stop the thread: the batch in hand is finished and stored, the rest stays queued in
        the store for the next process. From the thread itself (its `on_done`), it stops
        after the call returns."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("the background embedder did not stop within %ss", timeout)

    def _run(self) -> None:
        self._count()
        while not self._stop.is_set():
            self._wake.clear()  # before looking, so that a wake during the batch is kept
            try:
                embedded = self._step()
            except ModelUnavailable as exc:  # a model server down: said once a try, retried
                log.warning("background embedding waits: %s", exc.message)
                self._stop.wait(self._idle)
                continue
            except Exception:  # a failed batch is retried later; the thread must not end
                log.exception("background embedding failed; retrying in %.0fs", self._idle)
                self._stop.wait(self._idle)
                continue
            if not embedded:
                if self._missing == 0 and self.on_done is not None:
                    self._done()
                self._wake.wait(self._idle)

    def _done(self) -> None:
        try:
            assert self.on_done is not None
            self.on_done()
        except Exception:  # the thread must not end; the next idle turn calls it again
            log.exception("the background embedder's completion step failed")

    def _step(self) -> int:
        with self._lock:
            embedded = 0 if self._stop.is_set() else self._embed_window()
        if not embedded or time.monotonic() - self._counted_at > RECOUNT_SECONDS:
            self._count()
        return embedded

    def _embed_window(self, progress: Progress | None = None, done: int = 0, total: int = 0) -> int:
        """Embed a window of chunks that lack a vector, by similar length, a group per
        transaction, until the window is done or the embedder is closed. Returns how many
        were embedded (0: none is missing)."""
        as_of, rows = self._vectors.missing_rows(self._window)
        rows.sort(key=lambda row: len(row[1]))  # shortest first: runs of similar length
        embedded = 0
        for start in range(0, len(rows), self._group):
            if self._stop.is_set():
                break
            count = self._vectors.embed_rows(rows[start : start + self._group], as_of)
            embedded += count
            self._missing = max(0, self._missing - count)
            if progress:
                progress("embedding", min(done + embedded, total), max(total, done + embedded))
        return embedded

    def _count(self) -> int:
        self._counted_at = time.monotonic()
        self._missing = self._vectors.missing()
        return self._missing


def annotate(
    hits: Sequence[Hit], index: DenseIndex, store: DocumentStore, pending: bool
) -> list[Hit]:
    """While chunks still lack vectors (`pending`, or a hit's chunk has none): each hit's trace
    says how many of the store's chunks the dense list covered (the index as this search saw
    it) and whether the hit's own chunk was one of them (if not, BM25 alone ranked it)."""
    found = index.vectors_of([h.chunk_id for h in hits])
    if not pending and all(h.chunk_id in found for h in hits):
        return list(hits)
    embedded = len(index)
    chunks = max(store.stats().chunks, embedded)
    if embedded == chunks and all(h.chunk_id in found for h in hits):
        return list(hits)  # every chunk has its vector after all: nothing to say
    return [
        replace(
            h,
            trace=replace(
                h.trace,
                dense_coverage=DenseCoverage(embedded, chunks, h.chunk_id in found),
            ),
        )
        for h in hits
    ]
