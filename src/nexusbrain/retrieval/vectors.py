"""Chunk vectors, computed once per distinct text.

Vectors are keyed by (model id, sha256 of the embedded text), so unchanged content is never
re-embedded, even when its document is re-chunked. The backend's dense index (storage/) reads
them; this module only decides what to embed and embeds it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from nexusbrain.embeddings import Embedder
from nexusbrain.records import ChunkDraft, Progress, VectorBatch
from nexusbrain.storage.base import DocumentStore

log = logging.getLogger(__name__)

REEMBED_BATCH = 2048
MissingRow = tuple[int, str, Sequence[str], str]  # chunk id, text, heading path, context


def embed_text(text: str, heading_path: Sequence[str]) -> str:
    """What is embedded for a chunk: its text, led by its heading path when the text does not
    already start with that heading (later chunks of a long section keep their context).
    A chunk's `context` is not embedded: it made dense recall worse (docs/tuning.md)."""
    if not heading_path or text.lstrip("# ").startswith(heading_path[-1]):
        return text
    return " > ".join(heading_path) + "\n\n" + text


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def to_blob(vector: NDArray[np.float32]) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


class VectorWriter:
    """Attaches text hashes to chunk drafts and encodes only texts the store lacks."""

    def __init__(self, store: DocumentStore, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder

    def prepare(
        self, chunks: Sequence[ChunkDraft], *, encode: bool = True
    ) -> tuple[list[ChunkDraft], VectorBatch]:
        """The chunks with their text hashes, and the vectors the store lacks. Without
        `encode` nothing is embedded: a chunk whose text has no vector yet gets no hash, so
        the store lists it as missing one (`embed_batch` adds both later)."""
        texts = [embed_text(c.text, c.heading_path) for c in chunks]
        hashes = [text_hash(t) for t in texts]
        known = self.store.known_vector_hashes(self.embedder.model_id, list(set(hashes)))
        if not encode:
            kept = [h if h in known else None for h in hashes]
            drafts = [replace(c, text_hash=h) for c, h in zip(chunks, kept, strict=True)]
            return drafts, self._encode({})
        hashed = [replace(c, text_hash=h) for c, h in zip(chunks, hashes, strict=True)]
        todo = {h: t for h, t in zip(hashes, texts, strict=True) if h not in known}
        return hashed, self._encode(todo)

    def _encode(self, todo: dict[str, str]) -> VectorBatch:
        blobs: dict[str, bytes] = {}
        if todo:
            matrix = self.embedder.encode(list(todo.values()))
            blobs = {h: to_blob(row) for h, row in zip(todo, matrix, strict=True)}
        return VectorBatch(self.embedder.model_id, self.embedder.dim, blobs)

    def missing(self) -> int:
        """How many live chunks lack a vector for the current model."""
        return self.store.count_missing_vectors(self.embedder.model_id)

    def missing_rows(self, limit: int) -> tuple[int, list[MissingRow]]:
        """Up to `limit` live chunks that lack a vector, with the change seq read just before
        them (for `embed_rows`)."""
        as_of = self.store.latest_chunk_change()
        return as_of, self.store.chunks_missing_vectors(self.embedder.model_id, limit)

    def embed_rows(self, rows: Sequence[MissingRow], as_of: int) -> int:
        """Embed these chunks (from `missing_rows`) and store their vectors in one transaction;
        returns how many were looked at. Texts that have a vector already are not encoded
        again. A chunk removed or replaced since `as_of` is left alone (the store's change log
        says so), to be looked at again later."""
        model = self.embedder.model_id
        texts = [embed_text(text, heading) for _, text, heading, _ in rows]
        hashes = {row[0]: text_hash(t) for row, t in zip(rows, texts, strict=True)}
        known = self.store.known_vector_hashes(model, list(set(hashes.values())))
        todo = {h: t for h, t in zip(hashes.values(), texts, strict=True) if h not in known}
        self.store.store_vectors(self._encode(todo), hashes, as_of=as_of)
        return len(rows)

    def embed_batch(self, limit: int) -> int:
        """Embed up to `limit` chunks that lack a vector, in one transaction; returns how many
        were looked at (0: none is missing)."""
        as_of, rows = self.missing_rows(limit)
        return self.embed_rows(rows, as_of) if rows else 0

    def backfill(self, progress: Progress | None = None) -> int:
        """Embed every live chunk that lacks a vector for the current model (after a model
        change, or an import). Returns how many chunks were embedded."""
        total = self.missing()
        if total:
            log.info(
                "embedding %d chunk(s) that have no vector for %s", total, self.embedder.model_id
            )
        done = 0
        while embedded := self.embed_batch(REEMBED_BATCH):
            done += embedded
            if progress:
                progress("embedding", min(done, total), total)
        return done
