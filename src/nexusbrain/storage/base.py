"""The storage contract: the parts of a `Backend`, each a protocol. Retrieval, graph and the
brain depend on these, never on an engine; `storage.open(url)` builds one backend's parts.

    Backend
    ├── documents  DocumentStore   documents, chunks, revisions, the chunk change log, vector
    │                              blobs by (model, text hash), captures, stats, export/import
    ├── graph      GraphStore      entities and bitemporal relationships (graph_base.py)
    ├── lexical    LexicalIndex    BM25 over the chunks' text, heading path and context
    ├── sources    SourceStore     the named folders kept in sync, and their last syncs
    ├── dense_index(model, dim)    a DenseIndex over one model's vectors
    └── unit_of_work()             one transaction for a document write and its note edges

Every write method is one transaction; `unit_of_work` puts several in one. A backend may also
keep a dense index in the database (`DenseIndexAdmin`: PostgreSQL's pgvector HNSW); the brain
checks for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from nexusbrain.errors import InvalidInput
from nexusbrain.records import (
    Capture,
    Chunk,
    ChunkDraft,
    Document,
    DocumentDraft,
    DocumentHead,
    ImportResult,
    ListedDocument,
    Progress,
    Scored,
    SearchFilters,
    Source,
    StoreStats,
    VectorBatch,
    WriteResult,
)
from nexusbrain.storage.graph_base import GraphSession, GraphStore

Vector = NDArray[np.float32]
DocumentItems = Sequence[tuple[DocumentDraft, Sequence[ChunkDraft]]]


class DocumentWrites(Protocol):
    """The document writes, inside a transaction someone else opened and will commit."""

    def write_documents(
        self, items: DocumentItems, now: datetime, vectors: VectorBatch | None = None
    ) -> list[WriteResult]:
        """Create or replace documents and all their chunks (and their new vectors); an
        identical revision of a live document writes nothing and answers DUPLICATE."""
        ...

    def retire_documents(self, document_ids: Sequence[int], now: datetime) -> int:
        """Retire live documents from search (their rows and history are kept)."""
        ...

    def mark_edges_synced(self, document_id: int, revision: str) -> None:
        """Record that a note's graph edges now follow this revision of it."""
        ...

    def edges_revision(self, document_id: int) -> str | None:
        """The revision of the note that its graph edges follow (None: not known)."""
        ...


class UnitOfWork(DocumentWrites, Protocol):
    """One transaction: document writes and graph writes, committed together or not at all."""

    @property
    def graph(self) -> GraphSession: ...


class WritesInOwnUnit:
    """A store's document writes, each in a unit of work of its own (`unit_of_work()`)."""

    def unit_of_work(self) -> AbstractContextManager[UnitOfWork]:
        raise NotImplementedError

    def write_documents(
        self, items: DocumentItems, now: datetime, vectors: VectorBatch | None = None
    ) -> list[WriteResult]:
        with self.unit_of_work() as work:
            return work.write_documents(items, now, vectors)

    def retire_documents(self, document_ids: Sequence[int], now: datetime) -> int:
        with self.unit_of_work() as work:
            return work.retire_documents(document_ids, now)

    def mark_edges_synced(self, document_id: int, revision: str) -> None:
        with self.unit_of_work() as work:
            work.mark_edges_synced(document_id, revision)


class DocumentStore(DocumentWrites, Protocol):
    """Documents, chunks and everything kept with them. Each write method is one transaction."""

    # documents
    def get_document(self, document_id: int) -> Document:
        """The document with this id, retired or not. Raises NotFound."""
        ...

    def find_document(self, uri: str) -> Document | None: ...

    def list_documents(self, uri_prefix: str, limit: int) -> tuple[int, list[ListedDocument]]:
        """How many live documents' uris start with the prefix, and the first `limit` of them
        by uri (compared bytewise)."""
        ...

    def revisions_under(self, uri_prefix: str) -> Mapping[str, str]:
        """uri -> revision of every live document whose uri starts with the prefix."""
        ...

    def edges_behind(self, uri_prefix: str) -> set[str]:
        """Uris of live markdown notes under the prefix whose graph edges do not follow their
        current revision (a note written before edges were kept with it)."""
        ...

    def retired_with_edges(self) -> list[int]:
        """Ids of retired documents that are still the source of current graph edges."""
        ...

    def document_history(self, document_id: int) -> list[Mapping[str, Any]]: ...

    # chunks
    def chunks_of(self, document_id: int) -> list[Chunk]: ...

    def fetch_chunks(self, chunk_ids: Sequence[int]) -> dict[int, tuple[Chunk, DocumentHead]]: ...

    def chunk_ids_matching(self, filters: SearchFilters) -> set[int]:
        """Ids of the live chunks that pass the filters."""
        ...

    # the chunk change log
    def latest_chunk_change(self) -> int: ...

    def chunk_changes_since(self, seq: int) -> tuple[int, list[int], list[int]]:
        """(newest change seq, chunk ids added or re-hashed since `seq`, chunk ids removed)."""
        ...

    # vectors, keyed by (model id, hash of the embedded text)
    def known_vector_hashes(self, model: str, hashes: Sequence[str]) -> set[str]: ...

    def chunks_missing_vectors(
        self, model: str, limit: int
    ) -> list[tuple[int, str, Sequence[str], str]]:
        """(chunk id, text, heading path, context) of live chunks without a vector."""
        ...

    def count_missing_vectors(self, model: str) -> int: ...

    def store_vectors(
        self, vectors: VectorBatch, hashes: Mapping[int, str], *, as_of: int | None = None
    ) -> None:
        """Vectors for existing chunks (after a model change, or written without one), with
        the chunks' text hashes. With `as_of`, a change seq read before the chunks were, a
        chunk changed after it (removed, or its id reused by a new chunk) keeps its hash: the
        text embedded may no longer be its text. The vectors are stored all the same."""
        ...

    def vector_counts(self) -> dict[str, int]:
        """How many vectors each model has (stored by text: a text several chunks share has
        one)."""
        ...

    def drop_vectors(self, model: str) -> int:
        """Delete a model's vectors (after a switch to another); how many were deleted."""
        ...

    # the brain's own settings (which model its search uses)
    def setting(self, key: str) -> str | None: ...

    def set_setting(self, key: str, value: str) -> None: ...

    # everything else
    def stats(self) -> StoreStats: ...

    def record_capture(self, capture: Capture, max_rows: int) -> None: ...

    def captures(self) -> Iterator[Capture]: ...

    def export_records(self) -> Iterator[dict[str, Any]]:
        """Every record of the brain (documents, history, chunks, captures, the graph), read
        from one snapshot."""
        ...

    def import_records(
        self,
        records: Iterable[Mapping[str, Any]],
        functional: frozenset[str] = frozenset(),
        progress: Progress | None = None,
    ) -> ImportResult:
        """Restore exported records into an empty brain, or merge them into one with data
        (storage/merge.py; `functional` names the graph's one-value-at-a-time types), in
        one transaction. The records are checked as they are read and staged on disk
        (exchange.staged) before the write lock is taken, so memory does not grow with
        them. Raises InvalidInput for a bad record and Conflict when the import cannot be
        merged, listing what conflicts; nothing is then written. `progress` hears
        "importing"."""
        ...


@dataclass(frozen=True, slots=True)
class LexicalHits:
    """A BM25 list, best first; each query token's weight in it, idf × (1 + ln q) for a
    token said q times; `rarest`, the idf of a token no chunk holds (the largest); and `seq`,
    the chunk change its read saw (None when it read nothing, or read inside a write): a
    dense index already at that change need not read the change log again for the search."""

    scored: list[Scored]
    weights: Mapping[str, float] = field(default_factory=dict)
    rarest: float = 0.0
    seq: int | None = None


class LexicalIndex(Protocol):
    """BM25 (storage/bm25.py) over each chunk's text, heading path and context, weighted as
    LexicalConfig says. Terms are plain words: the index analyzes them into tokens
    (storage/analyzer.py) and looks each up as a value, so no text is ever read as query
    syntax. Scores are higher-is-better; equal scores go to the lower chunk id."""

    def search(
        self,
        terms: Sequence[str],
        k: int,
        filters: SearchFilters,
        *,
        best_per_document: bool = False,
    ) -> LexicalHits: ...

    def scores(
        self, terms: Sequence[str], chunk_ids: Sequence[int], *, per_document: bool = False
    ) -> dict[int, float]:
        """The BM25 score of each of these chunks for the terms (0.0 when it holds none of
        them), or with `per_document`, of the best chunk of each of their documents (keyed by
        document id): what fusion gives a candidate that another retriever found."""
        ...


class DenseIndex(Protocol):
    """Nearest chunks to a query vector, for one embedding model. Similarities are cosines
    taken around the corpus's mean vector when the index centres (IndexConfig.centre)."""

    def __len__(self) -> int: ...

    def centre(self, vector: Vector, at: int | None = None) -> Vector:
        """A raw unit query vector, moved into the index's space. The start of every query:
        it brings the index up to date once, so the searches and scores that follow see the
        same rows. `at`: a chunk change seq that a read begun by this search saw (its BM25
        list's, `LexicalHits.seq`); an index already at it has every write committed before
        the search began, and reads nothing more."""
        ...

    def search(
        self,
        query: Vector,
        k: int,
        filters: SearchFilters | None = None,
        *,
        best_per_document: bool = False,
    ) -> list[Scored]:
        """The k chunks (or documents' best chunks) most similar to a centred query."""
        ...

    def scores(
        self, query: Vector, chunk_ids: Sequence[int], *, per_document: bool = False
    ) -> dict[int, float]:
        """A centred query's similarity to each of these chunks, or, with `per_document`, to
        the best chunk of each of their documents (keyed by document id)."""
        ...

    def vectors_of(self, chunk_ids: Sequence[int]) -> dict[int, Vector]:
        """The centred unit vectors of these chunks (those in the index)."""
        ...

    def refresh(self) -> None:
        """Catch up with the store now, and persist what a restart would otherwise rebuild."""
        ...

    def warm(self) -> None:
        """Catch up with the store, and load now what the first searches would each wait
        for (a server's, before it answers)."""
        ...

    def close(self) -> None: ...


class SourceStore(Protocol):
    """The named folders kept in sync (records.Source), by name. Each write is a transaction."""

    def sources(self) -> list[Source]:
        """Every source, by name."""
        ...

    def source(self, name: str) -> Source | None: ...

    def add_source(self, source: Source, now: datetime) -> None:
        """Raises Conflict when a source has its name or its root already."""
        ...

    def record_sync(self, name: str, at: datetime, problems: Sequence[tuple[str, str]]) -> None:
        """A sync of the source ended at `at`, skipping these files (path, reason)."""
        ...

    def remove_source(self, name: str) -> None:
        """Raises NotFound for a name no source has."""
        ...


class Backend(Protocol):
    """The parts of one storage backend."""

    @property
    def documents(self) -> DocumentStore: ...

    @property
    def graph(self) -> GraphStore: ...

    @property
    def lexical(self) -> LexicalIndex: ...

    @property
    def sources(self) -> SourceStore: ...

    def dense_index(
        self, model: str, dim: int, *, centre: bool, reference: Vector | None = None
    ) -> DenseIndex:
        """The dense index of one embedding model's vectors; `reference` is a point that
        depends on the model alone (embeddings/reference.py), for an index that needs one."""
        ...

    def unit_of_work(self) -> AbstractContextManager[UnitOfWork]:
        """One write transaction, committed when the block ends without an error."""
        ...

    def drop_vectors(self, model: str) -> int:
        """Delete a model's vectors, and what is kept of them beside the database (a dense
        index's cache file); how many were deleted. Its dense index must be closed first."""
        ...

    def describe(self) -> str:
        """Where the brain lives, for people: a file path, or a URL without its password."""
        ...

    def ping(self) -> None:
        """Return once the database answers; StorageError (Unavailable for a server that
        cannot be reached) otherwise."""
        ...

    def backup(self, target: Path) -> None:
        """A consistent copy of the whole brain in the file `target`, taken while writers go
        on (for SQLite, a database file; see each backend)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class DenseIndexAdmin(Protocol):
    """A backend that can also keep a dense index in the database (PostgreSQL: pgvector
    HNSW), for a brain past what every replica should hold in memory: `dense_index` then
    opens it. A backend without one keeps its dense index in process only."""

    def dense_status(self, model: str) -> dict[str, Any]:
        """Which dense index a replica opened now would use for the model, and its state."""
        ...

    def build_dense(
        self,
        model: str,
        dim: int,
        *,
        centre: bool,
        m: int,
        ef_construction: int,
        memory: str,
        progress: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """Build (or build again) the model's index in the database, with `memory` for the
        build (e.g. 512MB)."""
        ...

    def drop_dense(self, model: str) -> dict[str, Any]:
        """Drop the model's index in the database (NotFound if there is none)."""
        ...


# what `dense-index build` and `drop` say on a backend without the capability (SQLite is the one)
IN_PROCESS = (
    "a database-side dense index (pgvector HNSW) is for PostgreSQL brains: a SQLite brain's"
    " dense index is in process (exact up to 20,000 vectors, quantized past that)"
)


def dense_admin(backend: Backend) -> DenseIndexAdmin:
    """The backend, if it keeps a dense index in the database; InvalidInput otherwise."""
    if not isinstance(backend, DenseIndexAdmin):
        raise InvalidInput(IN_PROCESS)
    return backend


def in_process_status(model: str) -> dict[str, Any]:
    """`dense_status` of a backend whose dense index is in process only."""
    return {"model": model, "kind": "in-process", "built": False}
