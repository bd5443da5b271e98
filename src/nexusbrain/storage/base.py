"""The storage interface. Retrieval, graph and API code depend on this, never on a backend."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from nexusbrain.records import (
    Capture,
    Chunk,
    ChunkDraft,
    Document,
    DocumentDraft,
    DocumentHead,
    ImportResult,
    Scored,
    SearchFilters,
    StoreStats,
    VectorBatch,
    WriteResult,
)


class Store(Protocol):
    """Everything the brain needs from a database. Every write method is one transaction."""

    def close(self) -> None: ...

    def identity(self) -> str:
        """A random id the store got when it was created (caches beside it check it)."""
        ...

    # documents
    def get_document(self, document_id: int) -> Document:
        """The document with this id, retired or not. Raises NotFound."""
        ...

    def find_document(self, uri: str) -> Document | None: ...

    def revisions_under(self, uri_prefix: str) -> Mapping[str, str]:
        """uri -> revision of every live document whose uri starts with the prefix."""
        ...

    def write_document(
        self,
        draft: DocumentDraft,
        chunks: Sequence[ChunkDraft],
        now: datetime,
        vectors: VectorBatch | None = None,
    ) -> WriteResult:
        """Create or replace a document and all its chunks (and their new vectors)
        atomically; an identical revision of a live document writes nothing and answers
        DUPLICATE."""
        ...

    def write_documents(
        self,
        items: Sequence[tuple[DocumentDraft, Sequence[ChunkDraft]]],
        now: datetime,
        vectors: VectorBatch | None = None,
    ) -> list[WriteResult]:
        """Several documents in one transaction: all are written, or none."""
        ...

    def retire_documents(self, document_ids: Sequence[int], now: datetime) -> int:
        """Retire live documents from search (their rows and history are kept)."""
        ...

    def document_history(self, document_id: int) -> list[Mapping[str, Any]]: ...

    # chunks and search
    def chunks_of(self, document_id: int) -> list[Chunk]: ...

    def fetch_chunks(self, chunk_ids: Sequence[int]) -> dict[int, tuple[Chunk, DocumentHead]]: ...

    def lexical_search(
        self,
        terms: Sequence[str],
        k: int,
        filters: SearchFilters,
        *,
        best_per_document: bool = False,
        weights: tuple[float, float, float] = (1.0, 0.5, 0.2),
        common: Sequence[str] = (),
        from_postings: bool = True,
    ) -> list[Scored]:
        """BM25 over the text, heading and context columns, weighted. Terms are plain words,
        joined with OR; the backend escapes them. Scores are higher-is-better. Terms in
        `common` add to the score of chunks that hold another term but bring in no chunk by
        themselves (unless every term is common); scores are always over all the terms.
        `from_postings` lets the backend score the postings itself where it can, with the
        same results as its engine's ranking (False: always the engine's)."""
        ...

    def common_terms(self, terms: Sequence[str], share: float, min_rows: int) -> list[str]:
        """The terms found in at least `share` of the chunks and in at least `min_rows`
        chunks (none when `share` is 0)."""
        ...

    def chunk_ids_matching(self, filters: SearchFilters) -> set[int]:
        """Ids of the live chunks that pass the filters (for the dense side)."""
        ...

    # vectors, keyed by (model id, hash of the embedded text)
    def known_vector_hashes(self, model: str, hashes: Sequence[str]) -> set[str]: ...

    def latest_chunk_change(self) -> int: ...

    def chunk_changes_since(self, seq: int) -> tuple[int, list[int], list[int]]:
        """(newest change seq, chunk ids added or re-hashed since `seq`, chunk ids removed)."""
        ...

    def load_vectors(
        self, model: str, dim: int, chunk_ids: Sequence[int] | None = None
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]: ...

    def chunks_missing_vectors(
        self, model: str, limit: int
    ) -> list[tuple[int, str, Sequence[str], str]]: ...

    def count_missing_vectors(self, model: str) -> int: ...

    def store_vectors(self, vectors: VectorBatch, hashes: Mapping[int, str]) -> None: ...

    # everything else
    def stats(self) -> StoreStats: ...

    def record_capture(self, capture: Capture, max_rows: int) -> None: ...

    def captures(self) -> Iterator[Capture]: ...

    def export_records(self) -> Iterator[dict[str, Any]]: ...

    def import_records(self, records: Iterable[Mapping[str, Any]]) -> ImportResult: ...
