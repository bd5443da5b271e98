"""The records every layer shares: frozen dataclasses and closed sets as StrEnums."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class DocumentKind(StrEnum):
    MARKDOWN = "markdown"
    MEMORY = "memory"
    CONVERSATION = "conversation"


class SearchMode(StrEnum):
    """Named presets that trade context tokens for recall (see retrieval/modes.py)."""

    CONSERVATIVE = "conservative"
    BALANCED = "balanced"
    TOKENMAX = "tokenmax"


class WriteStatus(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    DUPLICATE = "duplicate"


@dataclass(frozen=True, slots=True)
class Document:
    id: int
    uri: str
    title: str
    domain: str
    kind: DocumentKind
    revision: str
    content: str
    metadata: Mapping[str, Any]
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class DocumentHead:
    """A document without its content: what a hit needs to cite its source."""

    id: int
    uri: str
    title: str
    domain: str
    kind: DocumentKind
    revision: str


@dataclass(frozen=True, slots=True)
class Chunk:
    id: int
    document_id: int
    ordinal: int
    char_start: int
    char_end: int
    line_start: int
    line_end: int
    heading_path: tuple[str, ...]
    text: str
    unit: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DocumentDraft:
    """A document about to be written: what ingest hands to storage."""

    uri: str
    title: str
    domain: str
    kind: DocumentKind
    revision: str
    content: str
    metadata: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """A chunk about to be written, its span already cut from the draft's content."""

    ordinal: int
    char_start: int
    char_end: int
    line_start: int
    line_end: int
    heading_path: tuple[str, ...]
    text: str
    unit: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WriteResult:
    status: WriteStatus
    document_id: int
    revision: str
    chunks: int


@dataclass(frozen=True, slots=True)
class SearchFilters:
    domain: str | None = None
    path_prefix: str | None = None
    document_id: int | None = None
    kind: DocumentKind | None = None
    updated_after: datetime | None = None
    updated_before: datetime | None = None

    def is_empty(self) -> bool:
        return self == SearchFilters()


@dataclass(frozen=True, slots=True)
class Scored:
    """One retriever's raw answer: a chunk id and its score (higher is better)."""

    chunk_id: int
    score: float


@dataclass(frozen=True, slots=True)
class RetrieverScore:
    """Where one retriever put a hit: its rank (from 1) and its raw score."""

    retriever: str
    rank: int
    score: float


@dataclass(frozen=True, slots=True)
class FusionContribution:
    """One list's share of a fused score: weight / (k + rank)."""

    retriever: str
    weight: float
    rank: int
    contribution: float


@dataclass(frozen=True, slots=True)
class RerankChange:
    model: str
    rank_before: int
    rank_after: int
    score: float


@dataclass(frozen=True, slots=True)
class Trace:
    """Why a hit ranked where it did."""

    retrievers: tuple[RetrieverScore, ...]
    fusion: tuple[FusionContribution, ...] = ()
    fused_rank: int | None = None
    prf_terms: tuple[str, ...] = ()
    rerank: RerankChange | None = None
    context: str | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    rank: int
    score: float
    chunk_id: int
    document_id: int
    uri: str
    title: str
    domain: str
    kind: DocumentKind
    revision: str
    unit: str | None
    text: str
    char_start: int
    char_end: int
    line_start: int
    line_end: int
    heading_path: tuple[str, ...]
    trace: Trace


@dataclass(frozen=True, slots=True)
class StoreStats:
    documents: int
    retired_documents: int
    chunks: int
    db_bytes: int
    schema_version: int


@dataclass(frozen=True, slots=True)
class ImportResult:
    documents: int
    chunks: int
    skipped: int
    records: int


@dataclass(frozen=True, slots=True)
class Capture:
    """One search or recall as the server answered it, for later replay."""

    at: datetime
    operation: str
    query: str
    mode: str | None
    filters: Mapping[str, Any]
    results: tuple[int, ...]
    latency_ms: float
