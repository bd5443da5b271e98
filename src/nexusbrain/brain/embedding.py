"""A brain's chunk vectors: made inside a write for a fast model, by a background thread for
a slow one (retrieval/background.py), and made for whatever lacks them after a model change
or an import."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from nexusbrain.embeddings import Embedder
from nexusbrain.records import Progress, VectorBatch
from nexusbrain.retrieval.background import BackgroundEmbedder
from nexusbrain.retrieval.vectors import VectorWriter
from nexusbrain.storage.base import DocumentItems, DocumentStore

if TYPE_CHECKING:
    from nexusbrain.ingest.documents import Prepared


class Embedding:
    """Which chunks get vectors, and when. Without an embedder (the `none` profile) every
    method is a no-op and writes carry no vectors."""

    def __init__(
        self, store: DocumentStore, embedder: Embedder | None, *, background: bool
    ) -> None:
        self.vectors = VectorWriter(store, embedder) if embedder else None
        self.background = (
            BackgroundEmbedder(self.vectors) if self.vectors is not None and background else None
        )
        if self.background is not None:
            self.background.start()

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
        """Embed every chunk without a vector for the current model; how many were embedded.
        With `wait=False` a background embedder is left to do it, and 0 comes back at once."""
        if self.background is not None:
            return self.background.drain(progress) if wait else 0
        return self.vectors.backfill(progress) if self.vectors else 0

    def missing(self) -> int:
        """Chunks without a vector for the current model (0 without a model)."""
        return self.vectors.missing() if self.vectors else 0

    def close(self) -> None:
        if self.background is not None:
            self.background.close()
