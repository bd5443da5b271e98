"""The core object. The CLI, the HTTP API and the MCP server each call one method of it.

`Brain` is a façade over the parts of one storage backend (storage/base.py), an embedder and
the settings; `Brain.open` is the composition root that builds them. Nothing outside reaches
the parts: callers use the methods below, and `brain.graph`, the knowledge graph's façade.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexusbrain import __version__
from nexusbrain.clock import Clock, utc_now
from nexusbrain.config import HNSW_BUILD_MEMORY, Profile, Settings
from nexusbrain.embeddings import Embedder, load_embedder
from nexusbrain.embeddings.profiles import centred, embeds_in_background
from nexusbrain.embeddings.reference import reference_vector
from nexusbrain.errors import Conflict, InvalidInput, NotFound
from nexusbrain.records import (
    MAX_ID,
    Capture,
    Chunk,
    Document,
    DocumentKind,
    Hit,
    ImportResult,
    MarkdownNote,
    Progress,
    SearchFilters,
    SearchMode,
    StoreStats,
    VectorBatch,
    WriteResult,
    WriteStatus,
    json_problem,
)
from nexusbrain.retrieval.background import BackgroundEmbedder, annotate
from nexusbrain.retrieval.hits import with_neighbours
from nexusbrain.retrieval.modes import PRESETS, SearchConfig
from nexusbrain.retrieval.pipeline import Searcher
from nexusbrain.retrieval.tokens import fit_budget, fit_in_order
from nexusbrain.retrieval.vectors import VectorWriter
from nexusbrain.storage import open as open_backend
from nexusbrain.storage.base import Backend, DenseIndex, DocumentItems, UnitOfWork
from nexusbrain.storage.vector_index import VectorIndex

# What only writes, the graph, explain and stats use is imported where it is used: a search
# in a fresh process (the command line without a server) then loads none of it.
if TYPE_CHECKING:
    from nexusbrain.graph import Graph
    from nexusbrain.graph.model import GraphFact, RelationshipInput
    from nexusbrain.ingest.conversation import Session
    from nexusbrain.ingest.directory import DirectoryReport
    from nexusbrain.ingest.documents import Prepared
    from nexusbrain.retrieval.explain import Explanation


@dataclass(frozen=True, slots=True)
class Recall:
    """Hits that fit a token budget, ready to hand to a model: the best ones whole, in rank
    order, and the first that did not fit cut to what was left (`truncated`), never a lower
    hit in place of a higher one. `left_out` counts the hits after those."""

    query: str
    hits: tuple[Hit, ...]
    budget_tokens: int
    tokens_used: int
    left_out: int
    truncated: bool = False
    graph_context: tuple[GraphFact, ...] = ()  # relationships of entities the hits name


@dataclass(frozen=True, slots=True)
class EmbedderInfo:
    profile: Profile
    model_id: str | None  # None: lexical only
    dim: int | None
    embedded_chunks: int | None = None  # chunks with a vector for the model (None: no model)
    background: bool = False  # writes leave embedding to a background thread


@dataclass(frozen=True, slots=True)
class BrainStats:
    store: StoreStats
    db_path: str  # where the brain lives: a file path, or a URL without its password
    rss_bytes: int
    version: str
    embedder: EmbedderInfo


class Brain:
    """A brain over one storage backend. Thread-safe: the backend serialises its own writes.

    Errors: methods raise InvalidInput for a bad argument, NotFound for an unknown id or
    uri, StorageError when the database fails (see errors.py)."""

    def __init__(
        self,
        backend: Backend,
        embedder: Embedder | None,
        settings: Settings,
        *,
        clock: Clock = utc_now,
        background: bool | None = None,
    ) -> None:
        """`background`: embed in a background thread, not inside each write (by default, when
        the profile's model is slow: embeddings/profiles.py)."""
        self.settings = settings
        self._backend = backend
        self._store = backend.documents
        self._clock = clock
        self._embedder = embedder
        self._vectors = VectorWriter(self._store, embedder) if embedder else None
        self._index = _dense_index(backend, embedder, settings) if embedder else None
        self._searcher = Searcher(
            self._store,
            backend.lexical,
            settings.lexical,
            embedder,
            self._index,
            at_once=settings.searches_at_once,
        )
        self._graph: Graph | None = None
        if background is None:
            background = embeds_in_background(settings.embedder)
        self._background = (
            BackgroundEmbedder(self._vectors) if self._vectors and background else None
        )
        if self._background is not None:
            self._background.start()

    @classmethod
    def open(
        cls,
        db: str | Path | None = None,
        *,
        settings: Settings | None = None,
        clock: Clock = utc_now,
        create: bool = True,
    ) -> Brain:
        """The brain at `db` (a path, or a database URL), else at `settings.db`, else where
        BRAIN_DB_URL or BRAIN_DB_PATH says, else in the platform data directory; made there
        if it does not exist, unless `create` is false. Raises ConfigError for a bad setting,
        NotFound for a missing brain not to be made, StorageError when the database cannot
        be opened."""
        if settings is None:
            chosen = Settings.from_env(db)
        else:
            chosen = settings if db is None else replace(settings, db=db)
        backend = open_backend(chosen.db, chosen.lexical, chosen.storage, create=create)
        try:
            return cls(backend, load_embedder(chosen.embedder), chosen, clock=clock)
        except BaseException:
            backend.close()
            raise

    @property
    def graph(self) -> Graph:
        """The knowledge graph: entities and bitemporal relationships (graph/service.py)."""
        if self._graph is None:
            from nexusbrain.graph import Graph

            self._graph = Graph(self._backend.graph, self.settings.graph, self._clock)
        return self._graph

    def close(self) -> None:
        """Stop the worker threads, save the dense index's cache and close the database."""
        if self._background is not None:
            self._background.close()
        self._searcher.close()
        if self._index is not None:
            self._index.close()
        self._backend.close()

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
        """Store one markdown document. Without a uri, its content identifies it. Raises
        InvalidInput for empty or oversized content, or a bad front-matter relation."""
        note = MarkdownNote(content, title=title, uri=uri, domain=domain, metadata=metadata)
        return self.ingest_markdown_batch([note])[0]

    def ingest_markdown_batch(self, notes: Sequence[MarkdownNote]) -> list[WriteResult]:
        """Store several markdown documents in one transaction (one result each, in order):
        the fast way to load many. Two notes with the same uri (or, without one, the same
        content) are refused with InvalidInput before anything is written."""
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
        from nexusbrain.ingest.documents import content_hash, prepare_markdown

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
        """Store a short agent memory. The same text again is a duplicate. Raises
        InvalidInput for empty or oversized text."""
        from nexusbrain.ingest.documents import content_hash, prepare_markdown

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
        return self._write_batch([prepared])[0]

    def ingest_conversation(
        self,
        sessions: Sequence[Session],
        *,
        domain: str | None = None,
        index_roles: Iterable[str] | None = None,
    ) -> list[WriteResult]:
        """Store sessions of turns: one document per session, one chunk per indexed turn."""
        from nexusbrain.ingest.conversation import prepare_session

        roles = frozenset(r.lower() for r in index_roles) if index_roles is not None else None
        prepared = [
            prepare_session(s, domain=domain or self.settings.default_domain, index_roles=roles)
            for s in sessions
        ]
        return [self._write_batch([p])[0] for p in prepared]

    def ingest_dir(
        self, root: str | Path, *, domain: str | None = None, progress: Progress | None = None
    ) -> DirectoryReport:
        """Bring the store in line with a folder of markdown, incrementally. Files that cannot
        be read are listed in the report; InvalidInput if `root` is not a folder."""
        from nexusbrain.ingest.directory import ingest_directory

        self._retract_retired()
        return ingest_directory(
            self._store,
            root,
            domain=domain or self.settings.default_domain,
            chunking=self.settings.chunking,
            max_bytes=self.settings.limits.max_document_bytes,
            clock=self._clock,
            write=self._write_notes,
            retire=self._retire,
            progress=progress,
        )

    def watch_dir(
        self,
        root: str | Path,
        *,
        on_sync: Callable[[DirectoryReport], None],
        domain: str | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        """Keep the store in line with a folder while its files change, until `stop` is set
        (or Ctrl-C): the folder is synced as `ingest_dir` syncs it once the watch begins, then
        after each burst of changes; `on_sync` gets each report (its `changes` name the
        files). Uses no CPU while nothing changes (ingest/watch.py)."""
        from nexusbrain.ingest.watch import follow  # watchfiles, only when watching

        follow(root, lambda: self.ingest_dir(root, domain=domain), on_sync, stop=stop)

    def embed_missing(self, progress: Progress | None = None, *, wait: bool = True) -> int:
        """Embed every chunk without a vector for the current model (after a model change or
        an import, or written by a brain that embeds in the background). Returns how many were
        embedded. With `wait=False`, a brain that embeds in the background leaves them to its
        thread and returns 0 at once."""
        if self._background is not None:
            return self._background.drain(progress) if wait else 0
        return self._vectors.backfill(progress) if self._vectors else 0

    def refresh_index(self) -> None:
        """Bring the dense index up to date and persist it, so that the next process to open
        this database starts without reading every vector (after ingest, before serving)."""
        if self._index is not None:
            self._index.refresh()

    def warm(self) -> None:
        """Load now what a search reads and the first searches would each wait for (the
        dense index up to date, its vectors' pages read): a server does it before it answers.
        A one-off command does not: it reads the few pages its one search needs."""
        if self._index is not None:
            self._index.warm()

    def dense_index_status(self) -> dict[str, Any]:
        """Which dense index this brain's model has in the database, if any, and what this
        process searches with (`searching`: set when it opened)."""
        embedder = self._require_embedder()
        value = self._backend.dense_status(embedder.model_id)
        return {**value, "searching": _index_kind(self._index)}

    def build_dense_index(
        self,
        *,
        m: int,
        ef_construction: int,
        memory: str = HNSW_BUILD_MEMORY,
        progress: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """Build (or build again) the database-side ANN index of this brain's model
        (PostgreSQL: pgvector HNSW). Replicas opened after it use it."""
        embedder = self._require_embedder()
        return self._backend.build_dense(
            embedder.model_id,
            embedder.dim,
            centre=centred(self.settings.embedder),
            m=m,
            ef_construction=ef_construction,
            memory=memory,
            progress=progress,
        )

    def drop_dense_index(self) -> dict[str, Any]:
        return self._backend.drop_dense(self._require_embedder().model_id)

    def _require_embedder(self) -> Embedder:
        if self._embedder is None:
            raise InvalidInput("this brain's profile has no embedding model, so no dense index")
        return self._embedder

    def _checked_text(self, text: str, field: str) -> str:
        from nexusbrain.ingest.documents import decode_utf8

        problem = json_problem({field: text})  # a lone surrogate cannot be stored as UTF-8
        if problem:
            raise InvalidInput(problem)
        return decode_utf8(text.encode("utf-8"), field, self.settings.limits.max_document_bytes)

    def _write_batch(
        self, batch: Sequence[Prepared], work: UnitOfWork | None = None
    ) -> list[WriteResult]:
        """Documents, their chunks and any new vectors, in one transaction (the caller's
        `work`, if given)."""
        items, vectors = self._embedded(batch)
        if work is not None:
            return work.write_documents(items, self._clock(), vectors)
        results = self._store.write_documents(items, self._clock(), vectors)
        self._embed_later()
        return results

    def _embed_later(self) -> None:
        """After a commit: the background embedder, if any, has chunks to embed."""
        if self._background is not None:
            self._background.wake()

    def _embedded(self, batch: Sequence[Prepared]) -> tuple[DocumentItems, VectorBatch | None]:
        """The batch's chunks with their text hashes, and the vectors the store lacks: done
        before the write transaction, so that no writer holds the brain's write lock while it
        embeds (a vector a concurrent writer stores first is kept once). With a background
        embedder only known texts get their hash here; the rest wait for the thread."""
        items = [(p.draft, list(p.chunks)) for p in batch]
        if self._vectors is None:
            return items, None
        every = [c for _, chunks in items for c in chunks]
        hashed, vectors = self._vectors.prepare(every, encode=self._background is None)
        items, start = [], 0
        for p in batch:
            items.append((p.draft, hashed[start : start + len(p.chunks)]))
            start += len(p.chunks)
        return items, vectors

    def _write_notes(self, batch: Sequence[Prepared]) -> list[WriteResult]:
        """Write markdown notes and the graph edges each states (wikilinks, front-matter
        relations) in one transaction, so a crash can never leave them out of step. A bad
        relation refuses the note before any write."""
        from nexusbrain.graph.notes import note_edges

        stated = [
            note_edges(p.draft.title, p.front_matter or {}, p.draft.content, self._link_type)
            for p in batch
        ]
        items, vectors = self._embedded(batch)
        with self._backend.unit_of_work() as work:
            results = work.write_documents(items, self._clock(), vectors)
            now = self._clock()
            for result, edges in zip(results, stated, strict=True):
                self._sync_edges(work, result, edges, now)
        self._embed_later()
        return results

    def _sync_edges(
        self,
        work: UnitOfWork,
        result: WriteResult,
        edges: Sequence[RelationshipInput],
        now: Any,
    ) -> None:
        if result.status is WriteStatus.DUPLICATE:
            if work.edges_revision(result.document_id) == result.revision:
                return
        elif result.status is WriteStatus.CREATED and not edges:
            work.mark_edges_synced(result.document_id, result.revision)
            return
        from nexusbrain.graph.service import sync_note

        sync_note(work.graph, self.settings.graph, result.document_id, edges, now)
        work.mark_edges_synced(result.document_id, result.revision)

    @property
    def _link_type(self) -> str:
        return self.settings.graph.link_type

    def _retire(self, document_ids: Sequence[int]) -> int:
        """Retire documents and retract the edges they stated, in one transaction."""
        from nexusbrain.graph.service import retract_notes

        now = self._clock()
        with self._backend.unit_of_work() as work:
            retired = work.retire_documents(document_ids, now)
            retract_notes(work.graph, self.settings.graph, document_ids, now)
        return retired

    def _retract_retired(self) -> None:
        """Retract the edges that retired notes still state (left by a crash before edges
        were written with their note)."""
        stale = self._store.retired_with_edges()
        if stale:
            from nexusbrain.graph.service import retract_notes

            with self._backend.unit_of_work() as work:
                retract_notes(work.graph, self.settings.graph, stale, self._clock())

    # retrieval

    def search(
        self,
        query: str,
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
        best_per_document: bool = False,
        mode: SearchMode | str = SearchMode.BALANCED,
        config: SearchConfig | None = None,
    ) -> list[Hit]:
        """The best chunks for a natural-language query, each with its trace. `k` defaults
        to the mode's. `config` replaces the mode's preset (evaluation and tuning). Raises
        InvalidInput for an empty or overlong query, a bad k or an unknown mode."""
        started = time.perf_counter()
        chosen = config or PRESETS[parse_mode(mode)]
        hits = self._search(query, chosen.k if k is None else k, filters, best_per_document, chosen)
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
        hits = self._searcher.search(
            query, k, filters or SearchFilters(), config, best_per_document=best_per_document
        )
        if self._background is not None and self._index is not None and config.dense:
            hits = annotate(hits, self._index, self._store, self._background.pending)
        return hits

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
        name follow as `graph_context`, within what is left of the budget. Raises
        InvalidInput as `search` does, and for a budget out of range."""
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
            hits = with_neighbours(self._store, hits, config.neighbours)
        kept, used, truncated = fit_in_order(hits, budget, lambda hit: hit.text, _cut)
        facts: list[GraphFact] = []
        if config.graph if graph is None else graph:
            facts, cost = fit_budget(self.graph.context(kept), budget - used, _fact_text)
            used += cost
        self._capture("recall", query, mode, filters, kept, started)
        left_out = len(hits) - len(kept)
        return Recall(query, tuple(kept), budget, used, left_out, truncated, tuple(facts))

    def graph_context(
        self, hits: Sequence[Hit], budget_tokens: int | None = None
    ) -> tuple[GraphFact, ...]:
        """The current relationships of entities the top hits name, as text within the budget
        (settings.graph.search_context_tokens by default)."""
        budget = (
            self.settings.graph.search_context_tokens if budget_tokens is None else budget_tokens
        )
        return tuple(fit_budget(self.graph.context(hits), budget, _fact_text)[0])

    def explain(
        self,
        query: str,
        document: int | str,
        *,
        k: int | None = None,
        filters: SearchFilters | None = None,
        mode: SearchMode | str = SearchMode.BALANCED,
        best_per_document: bool = False,
    ) -> Explanation:
        """Where a document (by id, uri or path) ranked for this query, from the very search
        `search` runs with the same arguments: its place among the hits and the chunk that
        is, its fused rank, its place in each retriever's list, and why it was not returned
        (a filter, the score floor, k). Raises NotFound for an unknown document, InvalidInput
        as `search` does."""
        chosen = parse_mode(mode)
        config = PRESETS[chosen]
        size = config.k if k is None else k
        self._check_query(query, size)
        target = self.document(document)
        from nexusbrain.retrieval.explain import explain

        return explain(
            self._searcher,
            query,
            target,
            filters or SearchFilters(),
            config,
            size,
            mode=chosen.value,
            best_per_document=best_per_document,
        )

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
        from nexusbrain.captures import capture_records

        return capture_records(self._store.captures(), self._store.fetch_chunks)

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
            at=self._clock(),
            operation=operation,
            query=query,
            mode=str(mode),
            filters=_filters_dict(filters),
            results=tuple(h.chunk_id for h in hits),
            latency_ms=(time.perf_counter() - started) * 1000,
        )
        self._store.record_capture(capture, self.settings.capture.max_rows)

    # documents

    def get_document(self, document_id: int) -> Document:
        """The document with this id, retired or not. Raises NotFound."""
        return self._store.get_document(document_id)

    def find_document(self, uri: str) -> Document:
        """The document stored under this uri. Raises NotFound."""
        document = self._store.find_document(uri)
        if document is None:
            raise NotFound(f"no document with uri or path {uri!r}")
        return document

    def document(self, ref: int | str) -> Document:
        """A document by id, by uri, or by the path of the file `ingest-dir` read it from
        (relative paths are taken from the current folder); a string of digits is an id.
        Raises NotFound."""
        if isinstance(ref, int):
            return self.get_document(ref)
        if ref.isascii() and ref.isdigit():
            if int(ref) > MAX_ID:
                raise NotFound(f"no document with id {ref}: ids are at most {MAX_ID}")
            return self.get_document(int(ref))
        found = self._store.find_document(ref)
        if found is None:
            path = _existing_file(ref)
            if path is not None:
                found = self._store.find_document(path)
        if found is None:
            raise NotFound(f"no document with uri or path {ref!r}")
        return found

    def document_chunks(self, document_id: int) -> list[Chunk]:
        """A document's chunks in order. Raises NotFound."""
        self._store.get_document(document_id)
        return self._store.chunks_of(document_id)

    def document_history(self, document_id: int) -> list[Mapping[str, Any]]:
        """A document's revisions: created, updated and retired events. Raises NotFound."""
        return self._store.document_history(document_id)

    def delete_document(self, document_id: int) -> bool:
        """Retire a document from search; its row and history are kept. False if already.
        Raises NotFound."""
        self._store.get_document(document_id)
        return self._retire([document_id]) == 1

    # whole-brain

    def stats(self) -> BrainStats:
        """Counts, database size, memory use, the embedding model and how many chunks have
        its vectors."""
        import psutil

        embedder = self._embedder
        store = self._store.stats()
        missing = self._vectors.missing() if self._vectors else 0
        return BrainStats(
            store=store,
            db_path=self._backend.describe(),
            rss_bytes=psutil.Process().memory_info().rss,
            version=__version__,
            embedder=EmbedderInfo(
                self.settings.embedder,
                embedder.model_id if embedder else None,
                embedder.dim if embedder else None,
                max(0, store.chunks - missing) if embedder else None,
                self._background is not None,
            ),
        )

    def check_database(self) -> None:
        """Return once the database answers. Raises StorageError (Unavailable when its
        server cannot be reached)."""
        self._backend.ping()

    def backup(self, target: str | Path) -> Path:
        """A consistent copy of the whole brain at `target`, taken while other processes and
        threads go on writing; returns its path. Raises InvalidInput if `target` exists or its
        folder does not, StorageError if the copy fails."""
        path = Path(target).expanduser()
        if path.exists():
            raise InvalidInput(f"{str(path)!r} already exists: give a new file to back up to")
        if not path.parent.is_dir():
            raise InvalidInput(f"no folder {str(path.parent)!r} to write the backup into")
        self._backend.backup(path)
        return path

    def export(self) -> Iterator[dict[str, Any]]:
        """Every record, as JSON-ready dicts (the `export` format)."""
        return self._store.export_records()

    def import_records(
        self, records: Iterable[Mapping[str, Any]], progress: Progress | None = None
    ) -> ImportResult:
        """Load exported records, then embed the chunks they bring (a brain that embeds in
        the background leaves them to its thread).

        Into an empty brain the records keep their ids; into one with data they are merged
        (storage/exchange.py): documents by path, the newer version current and the older kept
        as revisions, facts by lineage. Raises InvalidInput, naming the record, for a malformed
        one, and Conflict, listing each, where records contradict what is stored; nothing is
        then stored."""
        result = self._store.import_records(records, self.settings.graph.functional_types)
        self.embed_missing(progress, wait=False)
        self._embed_later()
        return result

    def copy_to(self, target: str | Path, progress: Progress | None = None) -> ImportResult:
        """Copy every record of this brain into a new, empty brain at `target` (a file path
        or a database URL: SQLite to PostgreSQL, or back), in one step: one snapshot of this
        brain streamed into one import transaction there, then its chunks embedded. The
        copy's export is this brain's, byte for byte. Raises Conflict if `target` already
        holds a record, StorageError when either database fails."""
        settings = replace(self.settings, db=str(target))
        with Brain(
            open_backend(settings.db, settings.lexical, settings.storage),
            self._embedder,
            settings,
            clock=self._clock,
        ) as other:
            if next(itertools.islice(other.export(), 1, None), None) is not None:
                raise Conflict(
                    f"the brain at {other._backend.describe()} is not empty: copy into a new"
                    " one (a new file, or a new ?schema= of the database)"
                )
            stats = self._store.stats()
            total = stats.documents + stats.retired_documents + stats.chunks
            return other.import_records(_counted(self.export(), total, progress), progress)


def _index_kind(index: DenseIndex | None) -> str:
    if index is None:
        return "none"
    return "in-process" if isinstance(index, VectorIndex) else "pgvector-hnsw"


def _dense_index(backend: Backend, embedder: Embedder, settings: Settings) -> DenseIndex:
    centre = centred(settings.embedder)
    reference = reference_vector(embedder) if centre else None
    return backend.dense_index(embedder.model_id, embedder.dim, centre=centre, reference=reference)


def _counted(
    records: Iterator[dict[str, Any]], total: int, progress: Progress | None
) -> Iterator[dict[str, Any]]:
    """The records, with progress every thousand ("copying": of about `total`)."""
    done = 0
    for done, record in enumerate(records, start=1):
        if progress and done % 1_000 == 0:
            progress("copying", done, max(total, done))
        yield record
    if progress:
        progress("copying", done, done)


def parse_mode(mode: SearchMode | str) -> SearchMode:
    try:
        return SearchMode(mode)
    except ValueError:
        choices = ", ".join(m.value for m in SearchMode)
        raise InvalidInput(f"mode={mode!r} is not one of: {choices}") from None


def _cut(hit: Hit, text: str) -> Hit:
    """The hit with its text cut to a start of it, and its span with it."""
    end, lines = hit.char_start + len(text), text.count("\n")
    return replace(hit, text=text, char_end=end, line_end=hit.line_start + lines, truncated=True)


def _fact_text(fact: GraphFact) -> str:
    return fact.text


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


def _existing_file(ref: str) -> str | None:
    """The resolved path of the file `ref` names, if there is one. A ref that cannot be a path
    here is none: '~nobody' (no such user's home), a name too long for the file system."""
    try:
        path = Path(ref).expanduser()
        return path.resolve().as_posix() if path.exists() else None
    except (OSError, RuntimeError, ValueError):
        return None
