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

    def prepare(self, chunks: Sequence[ChunkDraft]) -> tuple[list[ChunkDraft], VectorBatch]:
        texts = [embed_text(c.text, c.heading_path) for c in chunks]
        hashes = [text_hash(t) for t in texts]
        hashed = [replace(c, text_hash=h) for c, h in zip(chunks, hashes, strict=True)]
        known = self.store.known_vector_hashes(self.embedder.model_id, list(set(hashes)))
        todo = {h: t for h, t in zip(hashes, texts, strict=True) if h not in known}
        return hashed, self._encode(todo)

    def _encode(self, todo: dict[str, str]) -> VectorBatch:
        blobs: dict[str, bytes] = {}
        if todo:
            matrix = self.embedder.encode(list(todo.values()))
            blobs = {h: to_blob(row) for h, row in zip(todo, matrix, strict=True)}
        return VectorBatch(self.embedder.model_id, self.embedder.dim, blobs)

    def backfill(self, progress: Progress | None = None) -> int:
        """Embed every live chunk that lacks a vector for the current model (after a model
        change, or an import). Returns how many chunks were embedded."""
        total = self.store.count_missing_vectors(self.embedder.model_id)
        if total:
            log.info(
                "embedding %d chunk(s) that have no vector for %s", total, self.embedder.model_id
            )
        done = 0
        while rows := self.store.chunks_missing_vectors(self.embedder.model_id, REEMBED_BATCH):
            texts = [embed_text(text, heading) for _, text, heading, _ in rows]
            hashes = {row[0]: text_hash(t) for row, t in zip(rows, texts, strict=True)}
            batch = self._encode(dict(zip(hashes.values(), texts, strict=True)))
            self.store.store_vectors(batch, hashes)
            done += len(rows)
            if progress:
                progress("embedding", min(done, total), total)
        return done
