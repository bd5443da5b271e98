"""The core object. The CLI, the HTTP API and the MCP server each call one method of it."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from nexusbrain import __version__
from nexusbrain.clock import Clock, utc_now
from nexusbrain.config import Settings
from nexusbrain.embeddings import load_embedder
from nexusbrain.embeddings.profiles import centred
from nexusbrain.errors import ConfigError, InvalidInput, NotFound
from nexusbrain.evals.replay import capture_records
from nexusbrain.graph import Graph
from nexusbrain.graph.model import GraphFact
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
    MarkdownNote,
    SearchFilters,
    SearchMode,
    StoreStats,
    WriteResult,
    WriteStatus,
)
from nexusbrain.retrieval.explain import Explanation, explain
from nexusbrain.retrieval.hits import with_neighbours
from nexusbrain.retrieval.modes import PRESETS, SearchConfig
from nexusbrain.retrieval.pipeline import Searcher
from nexusbrain.retrieval.tokens import count_tokens
from nexusbrain.retrieval.vectors import IndexConfig, VectorIndex, VectorWriter
from nexusbrain.storage import SQLiteStore, Store
from nexusbrain.storage.graph_base import GraphStore
from nexusbrain.storage.graph_sqlite import SQLiteGraphStore


@dataclass(frozen=True, slots=True)
class Recall:
    """Hits that fit a token budget, ready to hand to a model."""

    query: str
    hits: tuple[Hit, ...]
    budget_tokens: int
    tokens_used: int
    dropped: int
    graph_context: tuple[GraphFact, ...] = ()  # relationships of entities the hits name


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
        own_store = store is None
        self.store: Store = store or SQLiteStore(
            settings.db_path, postings_cache_bytes=settings.lexical.postings_cache_mb << 20
        )
        self.clock = clock
        self.embedder = load_embedder(settings.embedder)
        self.vectors = VectorWriter(self.store, self.embedder) if self.embedder else None
        self.index = None
        if self.embedder is not None:
            model = self.embedder.model_id
            cache = index_cache_path(settings.db_path, model) if own_store else None
            config = IndexConfig(centre=centred(settings.embedder))
            self.index = VectorIndex(self.store, self.embedder, cache=cache, config=config)
        self.searcher = Searcher(self.store, settings.lexical, self.embedder, self.index)
        self.graph = Graph(_graph_store(self.store), settings.graph, clock)

    @classmethod
    def open(cls, db_path: str | Path | None = None, *, clock: Clock = utc_now) -> Brain:
        """A brain at `db_path`, else BRAIN_DB_PATH, else the platform data directory."""
        return cls(Settings.from_env(db_path), clock=clock)

    def close(self) -> None:
        self.searcher.close()
        if self.index is not None:
            self.index.save()
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
        note = MarkdownNote(content, title=title, uri=uri, domain=domain, metadata=metadata)
        return self.ingest_markdown_batch([note])[0]

    def ingest_markdown_batch(self, notes: Sequence[MarkdownNote]) -> list[WriteResult]:
        """Store several markdown documents in one transaction (one result each, in order):
        the fast way to load many. Two notes with the same uri (or, without one, the same
        content) are refused before anything is written."""
        prepared = [self._prepared_note(note) for note in notes]
        seen: dict[str, int] = {}
        for position, item in enumerate(prepared, start=1):
            first = seen.setdefault(item.draft.uri, position)
            if first != position:
                raise InvalidInput(
                    f"documents {first} and {position} of the batch have the same uri"
                    f" {item.draft.uri!r}"
                )
        return self._write_notes(prepared) if prepared else []

    def _prepared_note(self, note: MarkdownNote) -> Prepared:
        text = self._checked_text(note.content, "content")
        revision = content_hash(text.encode("utf-8"))
        return prepare_markdown(
            text,
            uri=note.uri or f"doc:{revision[:32]}",
            domain=note.domain or self.settings.default_domain,
            config=self.settings.chunking,
            title=note.title,
            metadata=note.metadata,
            revision=revision,
        )

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
            write=self._write_notes,
            retire=self._retire,
            progress=progress,
        )

    def embed_missing(self, progress: Progress | None = None) -> int:
        """Embed every chunk without a vector for the current model (after a model change or
        an import). Returns how many were embedded."""
        return self.vectors.backfill(progress) if self.vectors else 0

    def refresh_index(self) -> None:
        """Bring the vector index up to date and write its cache file, so that the next
        process to open this database starts without reading every vector (after ingest, and
        before serving)."""
        if self.index is not None:
            self.index.sync()
            self.index.save()

    def _checked_text(self, text: str, field: str) -> str:
        return decode_utf8(text.encode("utf-8"), field, self.settings.limits.max_document_bytes)

    def _write(self, prepared: Prepared) -> WriteResult:
        return self._write_batch([prepared])[0]

    def _write_batch(self, batch: Sequence[Prepared]) -> list[WriteResult]:
        """Documents, their chunks and any new vectors, in one transaction."""
        items = [(p.draft, list(p.chunks)) for p in batch]
        vectors = None
        if self.vectors is not None:
            every = [c for _, chunks in items for c in chunks]
            hashed, vectors = self.vectors.prepare(every)
            items, start = [], 0
            for p in batch:
                items.append((p.draft, hashed[start : start + len(p.chunks)]))
                start += len(p.chunks)
        return self.store.write_documents(items, self.clock(), vectors)

    def _retire(self, document_ids: Sequence[int]) -> int:
        now = self.clock()
        retired = self.store.retire_documents(document_ids, now)
        self.graph.retract_notes(document_ids, now)
        return retired

    def _write_notes(self, batch: Sequence[Prepared]) -> list[WriteResult]:
        """Write markdown notes, then bring the graph edges each states (wikilinks, front
        matter relations) in line with it. A bad relation refuses the note before any write."""
        stated = [
            self.graph.note_edges(p.draft.title, p.front_matter, p.draft.content) for p in batch
        ]
        results = self._write_batch(batch)
        now = self.clock()
        for result, edges in zip(results, stated, strict=True):
            changed = result.status is WriteStatus.UPDATED or edges
            if result.status is not WriteStatus.DUPLICATE and changed:
                self.graph.sync_note(result.document_id, edges, now)
        return results

    # retrieval

    def search(
        self,
        query: str,
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
        best_per_document: bool = False,
        mode: SearchMode | str = SearchMode.BALANCED,
    ) -> list[Hit]:
        """The best chunks for a natural-language query, each with its trace. `k` defaults
        to the mode's."""
        started = time.perf_counter()
        config = PRESETS[parse_mode(mode)]
        hits = self._search(query, config.k if k is None else k, filters, best_per_document, config)
        self._capture("search", query, mode, filters, hits, started)
        return hits

    def _search(
        self,
        query: str,
        k: int,
        filters: SearchFilters | None,
        best_per_document: bool,
        config: SearchConfig,
    ) -> list[Hit]:
        self._check_query(query, k)
        return self.searcher.search(
            query, k, filters or SearchFilters(), config, best_per_document=best_per_document
        )

    def recall(
        self,
        query: str,
        *,
        k: int | None = None,
        budget_tokens: int | None = None,
        filters: SearchFilters | None = None,
        mode: SearchMode | str = SearchMode.BALANCED,
        graph: bool | None = None,
    ) -> Recall:
        """The best hits, in rank order, that fit within the token budget (the mode's by
        default). `tokenmax` also brings each hit's neighbouring chunks as context. With
        `graph` (the default in tokenmax), the current relationships of entities the top hits
        name follow as `graph_context`, within what is left of the budget."""
        config = PRESETS[parse_mode(mode)]
        budget = config.budget_tokens if budget_tokens is None else budget_tokens
        if not 1 <= budget <= self.settings.limits.max_budget_tokens:
            raise InvalidInput(
                f"budget_tokens={budget} must be between 1 and "
                f"{self.settings.limits.max_budget_tokens}"
            )
        started = time.perf_counter()
        hits = self._search(query, config.k if k is None else k, filters, False, config)
        if config.neighbours:
            hits = with_neighbours(self.store, hits, config.neighbours)
        kept, used = _fit_budget(hits, budget)
        facts: tuple[GraphFact, ...] = ()
        if config.graph if graph is None else graph:
            facts, cost = _fit_facts(self.graph.context(kept), budget - used)
            used += cost
        self._capture("recall", query, mode, filters, kept, started)
        return Recall(query, tuple(kept), budget, used, len(hits) - len(kept), facts)

    def graph_context(
        self, hits: Sequence[Hit], budget_tokens: int | None = None
    ) -> tuple[GraphFact, ...]:
        """The current relationships of entities the top hits name, as text within the budget
        (settings.graph.search_context_tokens by default)."""
        budget = (
            self.settings.graph.search_context_tokens if budget_tokens is None else budget_tokens
        )
        return _fit_facts(self.graph.context(hits), budget)[0]

    def explain(
        self,
        query: str,
        document: int | str,
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
        mode: SearchMode | str = SearchMode.BALANCED,
    ) -> Explanation:
        """Where a document (by id or uri) ranked in each retriever's list for this query,
        whether it made the top k, and which filter, if any, excluded it."""
        config = PRESETS[parse_mode(mode)]
        size = config.k if k is None else k
        self._check_query(query, size)
        target = (
            self.get_document(document)
            if isinstance(document, int)
            else self.find_document(document)
        )
        return explain(self.searcher, query, target, filters or SearchFilters(), config, size)

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

    def captured(self) -> Iterator[dict[str, Any]]:
        """Every captured search and recall, as replay records: results get stable ids."""
        return capture_records(self.store.captures(), self.store.fetch_chunks)

    def _capture(
        self,
        operation: str,
        query: str,
        mode: SearchMode | str,
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
            mode=str(mode),
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
        return self._retire([document_id]) == 1

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

    def import_records(
        self, records: Iterable[Mapping[str, Any]], progress: Progress | None = None
    ) -> ImportResult:
        """Restore exported records (never overwriting), then embed the imported chunks."""
        result = self.store.import_records(records)
        self.embed_missing(progress)
        return result


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


def _fit_facts(facts: Sequence[GraphFact], budget: int) -> tuple[tuple[GraphFact, ...], int]:
    kept: list[GraphFact] = []
    used = 0
    for fact in facts:
        cost = count_tokens(fact.text)
        if used + cost <= budget:
            kept.append(fact)
            used += cost
    return tuple(kept), used


def index_cache_path(db_path: Path, model: str) -> Path | None:
    """The vector index's cache file for a model: beside the database, one per model."""
    if str(db_path) == ":memory:":
        return None
    digest = hashlib.sha256(model.encode("utf-8")).hexdigest()[:12]
    return db_path.with_name(f"{db_path.name}.vectors-{digest}.npz")


def _graph_store(store: Store) -> GraphStore:
    if isinstance(store, SQLiteStore):
        return SQLiteGraphStore(store)
    raise ConfigError(f"no knowledge graph storage for a {type(store).__name__}")


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
