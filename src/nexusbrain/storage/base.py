"""The storage interface. Retrieval, graph and API code depend on this, never on a backend."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

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
    WriteResult,
)


class Store(Protocol):
    """Everything the brain needs from a database. Every write method is one transaction."""

    def close(self) -> None: ...

    # documents
    def get_document(self, document_id: int) -> Document:
        """The document with this id, retired or not. Raises NotFound."""
        ...

    def find_document(self, uri: str) -> Document | None: ...

    def revisions_under(self, uri_prefix: str) -> Mapping[str, str]:
        """uri -> revision of every live document whose uri starts with the prefix."""
        ...

    def write_document(
        self, draft: DocumentDraft, chunks: Sequence[ChunkDraft], now: datetime
    ) -> WriteResult:
        """Create or replace a document and all its chunks atomically; an identical
        revision of a live document writes nothing and answers DUPLICATE."""
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
        weights: tuple[float, float] = (1.0, 0.5),
    ) -> list[Scored]:
        """BM25 over the text and heading columns. Terms are plain words, joined with OR;
        the backend escapes them. Scores are higher-is-better."""
        ...

    # everything else
    def stats(self) -> StoreStats: ...

    def record_capture(self, capture: Capture, max_rows: int) -> None: ...

    def captures(self) -> Iterator[Capture]: ...

    def export_records(self) -> Iterator[dict[str, Any]]: ...

    def import_records(self, records: Iterable[Mapping[str, Any]]) -> ImportResult: ...
