"""A brain's chunk vectors: made inside a write for a fast model, by a background thread for
a slow one (retrieval/background.py), and made for whatever lacks them after a model change
or an import."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from nexusbrain.embeddings import Embedder
from nexusbrain.embeddings.remote import RemoteEmbedder
from nexusbrain.records import Progress, VectorBatch
from nexusbrain.retrieval.background import BackgroundEmbedder
from nexusbrain.retrieval.vectors import VectorWriter
from nexusbrain.storage.base import DocumentItems, DocumentStore

if TYPE_CHECKING:
    from nexusbrain.ingest.documents import Prepared

log = logging.getLogger(__name__)


class Embedding:
    """Which chunks get vectors, and when. Without an embedder (the `none` profile) every
    method is a no-op and writes carry no vectors.

    During a model switch (brain/models.py) writes still get the search model's vectors as
    before, and a second background thread makes the `next` model's for every chunk; it
    calls `on_covered` each time it finds none missing, and `promote` makes the next model
    the one writes embed with."""

    def __init__(
        self,
        store: DocumentStore,
        embedder: Embedder | None,
        *,
        background: bool,
        next: Embedder | None = None,
        on_covered: Callable[[], None] | None = None,
    ) -> None:
        self.vectors = VectorWriter(store, embedder) if embedder else None
        self.background = (
            BackgroundEmbedder(self.vectors) if self.vectors is not None and background else None
        )
        if self.background is not None:
            self.background.start()
        self.on_covered = on_covered
        self.next = VectorWriter(store, next) if next is not None else None
        self.backfill = (
            BackgroundEmbedder(self.next, on_done=on_covered) if self.next is not None else None
        )
        if self.backfill is not None:
            self.backfill.start()

    def promote(self, *, background: bool) -> None:
        """The next model is the one writes embed with from now on (inline, or with
        `background` in its thread, which goes on as the brain's background embedder)."""
        assert self.next is not None and self.backfill is not None
        old = self.background
        self.vectors, self.next = self.next, None
        backfill, self.backfill = self.backfill, None
        backfill.on_done = None
        if background:
            self.background = backfill
        else:
            self.background = None
            backfill.close()
        if old is not None:
            old.close()

    def prepared(self, batch: Sequence[Prepared]) -> tuple[DocumentItems, VectorBatch | None]:
        """The batch's chunks with their text hashes, and the vectors the store lacks: done
        before the write transaction, so that no writer holds the brain's write lock while it
        embeds (a vector a concurrent writer stores first is kept once). With a background
        embedder only known texts get their hash here; the rest wait for the thread."""
        items = [(p.draft, list(p.chunks)) for p in batch]
        if self.vectors is None:
            return items, None
        every = [c for _, chunks in items for c in chunks]
        hashed, vectors = self.vectors.prepare(every, encode=self.background is None)
        items, start = [], 0
        for p in batch:
            items.append((p.draft, hashed[start : start + len(p.chunks)]))
            start += len(p.chunks)
        return items, vectors

    def committed(self) -> None:
        """After a commit: the background embedder, if any, has chunks to embed."""
        if self.background is not None:
            self.background.wake()

    def embed_missing(self, progress: Progress | None = None, *, wait: bool = True) -> int:
        """Embed every chunk without a vector for the current model, and during a switch for
        the next one too (which then completes it); how many were embedded. With
        `wait=False` the background threads are left to do it, and 0 comes back at once."""
        done = 0
        if self.background is not None:
            done = self.background.drain(progress) if wait else 0
        elif self.vectors is not None:
            done = self.vectors.backfill(progress)
        backfill = self.backfill
        if backfill is not None and wait:
            done += backfill.drain(progress)
        if self.on_covered is not None and wait:  # completes the switch, or waits for the
            self.on_covered()  # background thread's (it may have begun it meanwhile)
        return done

    def missing(self) -> int:
        """Chunks without a vector for the current model (0 without a model)."""
        return self.vectors.missing() if self.vectors else 0

    def next_missing(self) -> int | None:
        """During a switch, chunks without a vector for the next model (None: no switch)."""
        return self.next.missing() if self.next is not None else None

    def close(self, timeout: float | None = None) -> None:
        """Stop the threads; each finishes and stores the batch in hand. A model server's
        batch gives up its retries (a command must not wait out a server that is down), and
        its thread is waited for `timeout` seconds at most (a request in flight to a slow
        server); what is left unembedded is said, for the next process to embed."""
        remote = [
            (thread, writer, writer.embedder)
            for thread, writer in ((self.backfill, self.next), (self.background, self.vectors))
            if thread is not None
            and writer is not None
            and isinstance(writer.embedder, RemoteEmbedder)
        ]
        for _, _, embedder in remote:
            embedder.interrupt()
        for thread in (self.backfill, self.background):
            if thread is not None:
                bounded = any(thread is t for t, _, _ in remote)
                thread.close(timeout if bounded else None)
        for _, writer, embedder in remote:
            if missing := writer.missing():
                log.warning(
                    "%d chunk(s) wait for their vector of %s, which the embedding server at "
                    "%s did not give before the brain closed: the next process to open the "
                    "brain while the server answers makes them",
                    missing,
                    embedder.model_id,
                    embedder.server.url,
                )
