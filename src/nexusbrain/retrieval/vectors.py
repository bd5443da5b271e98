"""Dense retrieval: chunk vectors computed once per distinct text, and an exact in-memory index.

Vectors are keyed by (model id, sha256 of the embedded text), so unchanged content is never
re-embedded, even when its document is re-chunked. The index holds one contiguous float32
matrix of unit rows; it follows the store through its chunk change log, so writes by this
process or any other show up on the next search without a full reload.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from nexusbrain.embeddings import Embedder
from nexusbrain.records import ChunkDraft, Scored, VectorBatch
from nexusbrain.storage import Store

log = logging.getLogger(__name__)

NAME = "dense"
REEMBED_BATCH = 2048


def embed_text(text: str, heading_path: Sequence[str]) -> str:
    """What is embedded for a chunk: its text, led by its heading path when the text does not
    already start with that heading (later chunks of a long section keep their context).
    A chunk's `context` is not embedded: on LoCoMo dev, embedding a turn with its neighbours
    lowered dense recall@5 from 0.44 to 0.31 (docs/tuning.md)."""
    if not heading_path or text.lstrip("# ").startswith(heading_path[-1]):
        return text
    return " > ".join(heading_path) + "\n\n" + text


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def to_blob(vector: NDArray[np.float32]) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


class VectorIndex:
    """Exact cosine search over every live chunk that has a vector for one model."""

    def __init__(self, store: Store, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder
        self._lock = threading.Lock()
        self._seq = -1
        self._ids: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._docs: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._matrix: NDArray[np.float32] = np.zeros((0, embedder.dim), dtype=np.float32)

    def __len__(self) -> int:
        return len(self._ids)

    # keeping up with the store

    def sync(self) -> None:
        with self._lock:
            if self._seq < 0:
                self._full_load()
                return
            seq, added, gone = self.store.chunk_changes_since(self._seq)
            if seq == self._seq:
                return
            self._apply(added, gone)
            self._seq = seq

    def _full_load(self) -> None:
        seq = self.store.latest_chunk_change()
        self._ids, self._docs, self._matrix = self.store.load_vectors(
            self.embedder.model_id, self.embedder.dim
        )
        self._matrix = np.ascontiguousarray(self._matrix)
        self._seq = seq
        log.info("loaded %d vectors for %s", len(self._ids), self.embedder.model_id)

    def _apply(self, added: list[int], gone: list[int]) -> None:
        drop = set(gone) | set(added)
        if drop:
            keep = ~np.isin(self._ids, np.fromiter(drop, dtype=np.int64, count=len(drop)))
            self._ids, self._docs, self._matrix = (
                self._ids[keep],
                self._docs[keep],
                self._matrix[keep],
            )
        if added:
            ids, docs, matrix = self.store.load_vectors(
                self.embedder.model_id, self.embedder.dim, added
            )
            self._ids = np.concatenate([self._ids, ids])
            self._docs = np.concatenate([self._docs, docs])
            self._matrix = np.ascontiguousarray(np.vstack([self._matrix, matrix]))

    def vectors_of(self, chunk_ids: Sequence[int]) -> dict[int, NDArray[np.float32]]:
        wanted = np.fromiter(chunk_ids, dtype=np.int64, count=len(chunk_ids))
        rows = np.flatnonzero(np.isin(self._ids, wanted))
        return {int(self._ids[r]): self._matrix[r] for r in rows}

    # searching

    def search(
        self,
        query: NDArray[np.float32],
        k: int,
        *,
        allowed: set[int] | None = None,
        best_per_document: bool = False,
    ) -> list[Scored]:
        self.sync()
        ids, docs, matrix = self._ids, self._docs, self._matrix
        if allowed is not None:
            mask = np.isin(ids, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
            ids, docs, matrix = ids[mask], docs[mask], matrix[mask]
        if len(ids) == 0 or k <= 0:
            return []
        scores = matrix @ query.astype(np.float32)
        order = _top(scores, ids, len(ids) if best_per_document else k)
        if best_per_document:
            _, first = np.unique(docs[order], return_index=True)
            order = order[np.sort(first)][:k]
        keep = [i for i in order if scores[i] > 0]
        if best_per_document:
            return [Scored(int(ids[i]), float(scores[i]), int(docs[i])) for i in keep]
        return [Scored(int(ids[i]), float(scores[i])) for i in keep]


def _top(scores: NDArray[np.float32], ids: NDArray[np.int64], k: int) -> NDArray[np.intp]:
    """Indices of the k best scores, best first; ties broken by lower chunk id."""
    part = np.arange(len(scores)) if k >= len(scores) else np.argpartition(-scores, k - 1)[:k]
    return part[np.lexsort((ids[part], -scores[part]))]


class VectorWriter:
    """Attaches text hashes to chunk drafts and encodes only texts the store lacks."""

    def __init__(self, store: Store, embedder: Embedder) -> None:
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

    def backfill(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed every live chunk that lacks a vector for the current model (after a model
        change, or an import). Returns how many chunks were embedded."""
        total = self.store.count_missing_vectors(self.embedder.model_id)
        if total:
            log.warning(
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
                progress(min(done, total), total)
        return done
