"""The core object. The CLI, the HTTP API and the MCP server each call one method of it."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from nexusbrain import __version__
from nexusbrain.clock import Clock, utc_now
from nexusbrain.config import Settings
from nexusbrain.errors import InvalidInput, NotFound
from nexusbrain.ingest.conversation import Session, prepare_session
from nexusbrain.ingest.directory import DirectoryReport, Progress, ingest_directory
from nexusbrain.ingest.documents import Prepared, content_hash, decode_utf8, prepare_markdown
from nexusbrain.records import (
    Capture,
    Chunk,
    Document,
    DocumentKind,
    Hit,
    ImportResult,
    SearchFilters,
    SearchMode,
    StoreStats,
    WriteResult,
)
from nexusbrain.retrieval.hits import build_hits
from nexusbrain.retrieval.lexical import bm25_search, traced
from nexusbrain.retrieval.tokens import count_tokens
from nexusbrain.storage import SQLiteStore, Store


@dataclass(frozen=True, slots=True)
class Recall:
    """Hits that fit a token budget, ready to hand to a model."""

    query: str
    hits: tuple[Hit, ...]
    budget_tokens: int
    tokens_used: int
    dropped: int


@dataclass(frozen=True, slots=True)
class BrainStats:
    store: StoreStats
    db_path: str
    rss_bytes: int
    version: str


class Brain:
    """A brain over one store. Thread-safe: the store serialises its own writes."""

    def __init__(
        self, settings: Settings, *, store: Store | None = None, clock: Clock = utc_now
    ) -> None:
        self.settings = settings
        self.store: Store = store or SQLiteStore(settings.db_path)
        self.clock = clock

    @classmethod
    def open(cls, db_path: str | Path | None = None, *, clock: Clock = utc_now) -> Brain:
        """A brain at `db_path`, else BRAIN_DB_PATH, else the platform data directory."""
        return cls(Settings.from_env(db_path), clock=clock)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Brain:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ingest

    def ingest_markdown(
        self,
        content: str,
        *,
        title: str | None = None,
        uri: str | None = None,
        domain: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> WriteResult:
        """Store one markdown document. Without a uri, its content identifies it."""
        text = self._checked_text(content, "content")
        revision = content_hash(text.encode("utf-8"))
        prepared = prepare_markdown(
            text,
            uri=uri or f"doc:{revision[:32]}",
            domain=domain or self.settings.default_domain,
            config=self.settings.chunking,
            title=title,
            metadata=metadata,
            revision=revision,
        )
        return self._write(prepared)

    def add_memory(
        self,
        text: str,
        *,
        source: str | None = None,
        domain: str | None = None,
        tags: Sequence[str] = (),
    ) -> WriteResult:
        """Store a short agent memory. The same text again is a duplicate."""
        body = self._checked_text(text, "text")
        revision = content_hash(body.encode("utf-8"))
        metadata: dict[str, Any] = {"tags": list(tags)}
        if source:
            metadata["source"] = source
        prepared = prepare_markdown(
            body,
            uri=f"memory:{revision[:32]}",
            domain=domain or self.settings.default_domain,
            config=self.settings.chunking,
            title=_memory_title(body),
            kind=DocumentKind.MEMORY,
            metadata=metadata,
            revision=revision,
        )
        return self._write(prepared)

    def ingest_conversation(
        self,
        sessions: Sequence[Session],
        *,
        domain: str | None = None,
        index_roles: Iterable[str] | None = None,
    ) -> list[WriteResult]:
        """Store sessions of turns: one document per session, one chunk per indexed turn."""
        roles = frozenset(r.lower() for r in index_roles) if index_roles is not None else None
        prepared = [
            prepare_session(s, domain=domain or self.settings.default_domain, index_roles=roles)
            for s in sessions
        ]
        return [self._write(p) for p in prepared]

    def ingest_dir(
        self, root: str | Path, *, domain: str | None = None, progress: Progress | None = None
    ) -> DirectoryReport:
        """Bring the store in line with a folder of markdown, incrementally."""
        return ingest_directory(
            self.store,
            root,
            domain=domain or self.settings.default_domain,
            chunking=self.settings.chunking,
            max_bytes=self.settings.limits.max_document_bytes,
            clock=self.clock,
            progress=progress,
        )

    def _checked_text(self, text: str, field: str) -> str:
        return decode_utf8(text.encode("utf-8"), field, self.settings.limits.max_document_bytes)

    def _write(self, prepared: Prepared) -> WriteResult:
        return self.store.write_document(prepared.draft, prepared.chunks, self.clock())

    # retrieval

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        filters: SearchFilters | None = None,
        best_per_document: bool = False,
        mode: SearchMode | str = SearchMode.BALANCED,
    ) -> list[Hit]:
        """The k best chunks for a natural-language query, each with its trace."""
        started = time.perf_counter()
        chosen = parse_mode(mode)
        hits = self._search(query, k, filters or SearchFilters(), best_per_document)
        self._capture("search", query, chosen, filters, hits, started)
        return hits

    def _search(
        self, query: str, k: int, filters: SearchFilters, best_per_document: bool
    ) -> list[Hit]:
        self._check_query(query, k)
        results = bm25_search(
            self.store,
            query,
            k,
            filters,
            self.settings.lexical,
            best_per_document=best_per_document,
        )
        return build_hits(self.store, traced(results))

    def recall(
        self,
        query: str,
        *,
        k: int = 10,
        budget_tokens: int = 2_000,
        filters: SearchFilters | None = None,
        mode: SearchMode | str = SearchMode.BALANCED,
    ) -> Recall:
        """The best hits, in rank order, that fit within `budget_tokens`."""
        if not 1 <= budget_tokens <= self.settings.limits.max_budget_tokens:
            raise InvalidInput(
                f"budget_tokens={budget_tokens} must be between 1 and "
                f"{self.settings.limits.max_budget_tokens}"
            )
        started = time.perf_counter()
        chosen = parse_mode(mode)
        hits = self._search(query, k, filters or SearchFilters(), False)
        kept, used = _fit_budget(hits, budget_tokens)
        self._capture("recall", query, chosen, filters, kept, started)
        return Recall(query, tuple(kept), budget_tokens, used, len(hits) - len(kept))

    def _check_query(self, query: str, k: int) -> None:
        limits = self.settings.limits
        if not query.strip():
            raise InvalidInput("query is empty: give some words to search for")
        if len(query) > limits.max_query_chars:
            raise InvalidInput(
                f"query is {len(query)} characters, over the limit of {limits.max_query_chars}"
            )
        if not 1 <= k <= limits.max_k:
            raise InvalidInput(f"k={k} must be between 1 and {limits.max_k}")

    def _capture(
        self,
        operation: str,
        query: str,
        mode: str | None,
        filters: SearchFilters | None,
        hits: Sequence[Hit],
        started: float,
    ) -> None:
        if not self.settings.capture.enabled:
            return
        capture = Capture(
            at=self.clock(),
            operation=operation,
            query=query,
            mode=mode,
            filters=_filters_dict(filters),
            results=tuple(h.chunk_id for h in hits),
            latency_ms=(time.perf_counter() - started) * 1000,
        )
        self.store.record_capture(capture, self.settings.capture.max_rows)

    # documents

    def get_document(self, document_id: int) -> Document:
        return self.store.get_document(document_id)

    def find_document(self, uri: str) -> Document:
        document = self.store.find_document(uri)
        if document is None:
            raise NotFound(f"no document with uri or path {uri!r}")
        return document

    def document_chunks(self, document_id: int) -> list[Chunk]:
        self.store.get_document(document_id)
        return self.store.chunks_of(document_id)

    def document_history(self, document_id: int) -> list[Mapping[str, Any]]:
        return self.store.document_history(document_id)

    def delete_document(self, document_id: int) -> bool:
        """Retire a document from search; its row and history are kept. False if already."""
        self.store.get_document(document_id)
        return self.store.retire_documents([document_id], self.clock()) == 1

    # whole-brain

    def stats(self) -> BrainStats:
        return BrainStats(
            store=self.store.stats(),
            db_path=str(self.settings.db_path),
            rss_bytes=psutil.Process().memory_info().rss,
            version=__version__,
        )

    def export(self) -> Iterator[dict[str, Any]]:
        return self.store.export_records()

    def import_records(self, records: Iterable[Mapping[str, Any]]) -> ImportResult:
        return self.store.import_records(records)


def parse_mode(mode: SearchMode | str) -> SearchMode:
    try:
        return SearchMode(mode)
    except ValueError:
        choices = ", ".join(m.value for m in SearchMode)
        raise InvalidInput(f"mode={mode!r} is not one of: {choices}") from None


def _fit_budget(hits: Sequence[Hit], budget: int) -> tuple[list[Hit], int]:
    kept: list[Hit] = []
    used = 0
    for hit in hits:
        cost = count_tokens(hit.text)
        if used + cost <= budget:
            kept.append(hit)
            used += cost
    return kept, used


def _memory_title(text: str) -> str:
    first = text.strip().splitlines()[0]
    return first if len(first) <= 80 else first[:77] + "..."


def _filters_dict(filters: SearchFilters | None) -> dict[str, Any]:
    if filters is None:
        return {}
    return {
        name: str(value)
        for name in SearchFilters.__slots__
        if (value := getattr(filters, name)) is not None
    }
