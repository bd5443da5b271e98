"""Brain, the façade: every interface calls one of its methods. It composes the parts of one
storage backend (storage/base.py), an embedder and the settings; `Brain.open` is the
composition root that builds them. Writes go through its Writer (writes.py), administration
is `brain.admin` (admin.py), the knowledge graph is `brain.graph` (graph/service.py)."""

from __future__ import annotations

import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexusbrain import __version__
from nexusbrain.brain.admin import Admin
from nexusbrain.brain.capture import CaptureLog
from nexusbrain.brain.models import Models
from nexusbrain.brain.writes import Writer
from nexusbrain.clock import Clock, utc_now
from nexusbrain.config import Profile, Settings
from nexusbrain.embeddings import Embedder, load_embedder
from nexusbrain.errors import InvalidInput, NotFound
from nexusbrain.records import (
    MAX_ID,
    Chunk,
    Document,
    Hit,
    ListedDocument,
    MarkdownNote,
    Progress,
    SearchFilters,
    SearchMode,
    StoreStats,
    WriteResult,
)
from nexusbrain.rerankers import Reranker, load_reranker
from nexusbrain.retrieval.background import annotate
from nexusbrain.retrieval.hits import with_neighbours
from nexusbrain.retrieval.modes import PRESETS, SearchConfig
from nexusbrain.retrieval.pipeline import Searcher
from nexusbrain.retrieval.tokens import fit_budget, fit_in_order
from nexusbrain.storage import open as open_backend
from nexusbrain.storage.base import Backend

# What only writes, the graph, explain and stats use is imported where it is used: a search
# in a fresh process (the command line without a server) then loads none of it.
if TYPE_CHECKING:
    from nexusbrain.brain.sources import Sources
    from nexusbrain.graph import Graph
    from nexusbrain.graph.model import GraphFact
    from nexusbrain.ingest.conversation import Session
    from nexusbrain.ingest.directory import DirectoryReport
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
    switching_to: str | None = None  # the configured model, while it embeds the brain
    switch_embedded: int | None = None  # the chunks it has embedded so far


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
        reranker: Reranker | None = None,
    ) -> None:
        """`background`: embed in a background thread, not inside each write (by default, when
        the profile's model is slow: embeddings/profiles.py); `reranker`: re-orders the fused
        top of every search."""
        self.settings = settings
        self._backend = backend
        self._store = backend.documents
        self._clock = clock
        self.models = Models(backend, embedder, settings, reranker, background=background)
        self._embedding = self.models.embedding
        current = self.models.current
        self._searcher = Searcher(
            self._store,
            backend.lexical,
            settings.lexical,
            current.embedder if current else None,
            current.index if current else None,
            profile=current.profile if current else settings.embedder,
            at_once=settings.searches_at_once,
            reranker=reranker,
            rerank_budget=settings.models.rerank_budget,
        )
        self.models.on_switch(lambda m: self._searcher.use_dense(m.embedder, m.index, m.profile))
        self._captures = CaptureLog(self._store, settings.capture, clock)
        self._writer = Writer(backend, settings, clock, self._embedding)
        self.admin = Admin(backend, settings, clock, models=self.models, captures=self._captures)
        self._graph: Graph | None = None
        self._sources: Sources | None = None

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
            embedder = load_embedder(chosen.embedder, chosen.models)
            reranker = load_reranker(chosen.models)
            return cls(backend, embedder, chosen, clock=clock, reranker=reranker)
        except BaseException:
            backend.close()
            raise

    @property
    def sources(self) -> Sources:
        """The named folders kept in sync: add, list, update, remove, watch (sources.py)."""
        if self._sources is None:
            from nexusbrain.brain.sources import Sources

            self._sources = Sources(self._backend.sources, self._store, self._writer, self._clock)
        return self._sources

    @property
    def location(self) -> str:
        """Where the brain lives, for people: a file path, or a URL without its password."""
        return self._backend.describe()

    @property
    def graph(self) -> Graph:
        """The knowledge graph: entities and bitemporal relationships (graph/service.py)."""
        if self._graph is None:
            from nexusbrain.graph import Graph

            self._graph = Graph(self._backend.graph, self.settings.graph, self._clock)
        return self._graph

    def close(self) -> None:
        """Stop the worker threads, save the dense index's cache and close the database."""
        self._searcher.close()
        self.models.close()
        self._backend.close()

    def __enter__(self) -> Brain:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # writes

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
        return self._writer.markdown([note])[0]

    def ingest_markdown_batch(self, notes: Sequence[MarkdownNote]) -> list[WriteResult]:
        """Store several markdown documents in one transaction (one result each, in order):
        the fast way to load many. Two notes with the same uri (or, without one, the same
        content) are refused with InvalidInput before anything is written."""
        return self._writer.markdown(notes)

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
        return self._writer.memory(text, source=source, domain=domain, tags=tags)

    def ingest_conversation(
        self,
        sessions: Sequence[Session],
        *,
        domain: str | None = None,
        index_roles: Iterable[str] | None = None,
    ) -> list[WriteResult]:
        """Store sessions of turns: one document per session, one chunk per indexed turn."""
        return self._writer.conversation(sessions, domain=domain, index_roles=index_roles)

    def ingest_dir(
        self, root: str | Path, *, domain: str | None = None, progress: Progress | None = None
    ) -> DirectoryReport:
        """Bring the store in line with a folder of markdown, incrementally. Files that cannot
        be read are listed in the report; InvalidInput if `root` is not a folder."""
        return self._writer.directory(root, domain=domain, progress=progress)

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
        self._writer.watch(root, on_sync=on_sync, domain=domain, stop=stop)

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
        distinct: bool | None = None,
    ) -> list[Hit]:
        """The best chunks for a natural-language query, each with its trace. `k` defaults
        to the mode's and counts distinct texts: a text stored in several places is one hit
        that lists the others (`Hit.also_in`), unless `distinct` is false (None: as the mode or
        `config` says). `config` replaces the mode's preset (evaluation and tuning). Raises
        InvalidInput for an empty or overlong query, a bad k or an unknown mode."""
        started = time.perf_counter()
        chosen = _distinct(config or PRESETS[parse_mode(mode)], distinct)
        hits = self._search(query, chosen.k if k is None else k, filters, best_per_document, chosen)
        self._captures.record("search", query, mode, filters, hits, started)
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
        hits = self._searcher.answer(
            query, k, filters or SearchFilters(), config, best_per_document=best_per_document
        ).hits
        background, current = self._embedding.background, self.models.current
        if background is not None and current is not None and config.dense:
            hits = annotate(hits, current.index, self._store, background.pending)
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
        distinct: bool | None = None,
    ) -> Recall:
        """The best hits, in rank order, that fit within the token budget (the mode's by
        default). `tokenmax` also brings each hit's neighbouring chunks as context. With
        `graph` (the default in tokenmax), the current relationships of entities the top hits
        name follow as `graph_context`, within what is left of the budget. Raises
        InvalidInput as `search` does, and for a budget out of range."""
        config = _distinct(PRESETS[parse_mode(mode)], distinct)
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
        self._captures.record("recall", query, mode, filters, kept, started)
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
        distinct: bool | None = None,
    ) -> Explanation:
        """Where a document (by id, uri or path) ranked for this query, from the very search
        `search` runs with the same arguments: its place among the hits and the chunk that
        is, its fused rank, its place in each retriever's list, and why it was not returned
        (a filter, the score floor, k, a copy of a hit's text). Raises NotFound for an unknown
        document, InvalidInput as `search` does."""
        chosen = parse_mode(mode)
        config = _distinct(PRESETS[chosen], distinct)
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

    # documents

    def get_document(self, document_id: int) -> Document:
        """The document with this id, retired or not. Raises NotFound."""
        return self._store.get_document(document_id)

    def find_document(self, uri: str) -> Document:
        """The document stored under this uri (or its NFC spelling, as writes store it).
        Raises NotFound."""
        document = self._find(uri)
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
        found = self._find(ref)
        if found is None:
            path = _existing_file(ref)
            if path is not None:
                found = self._store.find_document(path)
        if found is None:
            raise NotFound(f"no document with uri or path {ref!r}")
        return found

    def list_documents(
        self, prefix: str = "", *, limit: int = 1000
    ) -> tuple[int, list[ListedDocument]]:
        """How many live documents' uris start with `prefix` (a folder's path, `memory:`...),
        and the first `limit` of them by uri. Raises InvalidInput for a limit below 1."""
        if limit < 1:
            raise InvalidInput(f"limit={limit} must be at least 1")
        return self._store.list_documents(prefix, min(limit, MAX_ID))

    def _find(self, uri: str) -> Document | None:
        """The document under `uri` as given (a file's path, as its file system spells
        it), else under its NFC spelling (writes.uri)."""
        found = self._store.find_document(uri)
        if found is None:
            nfc = unicodedata.normalize("NFC", uri)
            found = self._store.find_document(nfc) if nfc != uri else None
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
        return self._writer.retire([document_id]) == 1

    # whole-brain

    def stats(self) -> BrainStats:
        """Counts, database size, memory use, the embedding model and how many chunks have
        its vectors."""
        import psutil

        current = self.models.current
        embedder = current.embedder if current else None
        store = self._store.stats()
        missing = self._embedding.missing()
        coming = self._embedding.next_missing()
        return BrainStats(
            store=store,
            db_path=self._backend.describe(),
            rss_bytes=psutil.Process().memory_info().rss,
            version=__version__,
            embedder=EmbedderInfo(
                current.profile if current else self.settings.embedder,
                embedder.model_id if embedder else None,
                embedder.dim if embedder else None,
                max(0, store.chunks - missing) if embedder else None,
                self._embedding.background is not None,
                self.models.next.embedder.model_id if self.models.next else None,
                None if coming is None else max(0, store.chunks - coming),
            ),
        )

    def check_database(self) -> None:
        """Return once the database answers. Raises StorageError (Unavailable when its
        server cannot be reached)."""
        self._backend.ping()


def _distinct(config: SearchConfig, distinct: bool | None) -> SearchConfig:
    if distinct is None or config.distinct == distinct:
        return config
    return replace(config, distinct=distinct)


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


def _existing_file(ref: str) -> str | None:
    """The resolved path of the file `ref` names, if there is one. A ref that cannot be a path
    here is none: '~nobody' (no such user's home), a name too long for the file system."""
    try:
        path = Path(ref).expanduser()
        return path.resolve().as_posix() if path.exists() else None
    except (OSError, RuntimeError, ValueError):
        return None
