"""Administration of one brain (`brain.admin`): backup, export, import and copy, the vectors'
upkeep, the dense index in memory and in the database, and the capture log's records."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from nexusbrain.brain.capture import CaptureLog
from nexusbrain.brain.embedding import Embedding
from nexusbrain.brain.models import Models
from nexusbrain.clock import Clock
from nexusbrain.config import HNSW_BUILD_MEMORY, Settings
from nexusbrain.embeddings import Embedder
from nexusbrain.embeddings.profiles import centred
from nexusbrain.errors import Conflict, InvalidInput
from nexusbrain.records import ImportResult, Progress
from nexusbrain.storage import open as open_backend
from nexusbrain.storage.base import (
    Backend,
    DenseIndex,
    DenseIndexAdmin,
    dense_admin,
    in_process_status,
)
from nexusbrain.storage.vector_index import VectorIndex


class Admin:
    """What an operator does to a brain as a whole. Errors as Brain's (see its docstring)."""

    def __init__(
        self,
        backend: Backend,
        settings: Settings,
        clock: Clock,
        *,
        models: Models,
        captures: CaptureLog,
    ) -> None:
        self._backend = backend
        self._store = backend.documents
        self._settings = settings
        self._clock = clock
        self._models = models
        self._captures = captures

    @property
    def _embedding(self) -> Embedding:
        return self._models.embedding

    @property
    def _index(self) -> DenseIndex | None:
        return self._models.current.index if self._models.current else None

    @property
    def _embedder(self) -> Embedder | None:
        return self._models.current.embedder if self._models.current else None

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
        (storage/merge.py): documents by path, the newer version current and the older kept
        as revisions, facts by lineage. Raises InvalidInput, naming the record, for a malformed
        one, and Conflict, listing each, where records contradict what is stored; nothing is
        then stored."""
        functional = self._settings.graph.functional_types
        result = self._store.import_records(records, functional, progress)
        self._embedding.embed_missing(progress, wait=False)
        self._embedding.committed()
        return result

    def copy_to(self, target: str | Path, progress: Progress | None = None) -> ImportResult:
        """Copy every record of this brain into a new, empty brain at `target` (a file path
        or a database URL: SQLite to PostgreSQL, or back), in one step: one snapshot of this
        brain streamed into one import transaction there, then its chunks embedded. The
        copy's export is this brain's, byte for byte. Raises Conflict if `target` already
        holds a record, StorageError when either database fails."""
        from nexusbrain.brain.facade import Brain

        settings = replace(self._settings, db=str(target))
        backend = open_backend(settings.db, settings.lexical, settings.storage)
        embedder = self._models.configured
        with Brain(backend, embedder, settings, clock=self._clock) as other:
            if next(itertools.islice(other.admin.export(), 1, None), None) is not None:
                raise Conflict(
                    f"the brain at {backend.describe()} is not empty: copy into a new"
                    " one (a new file, or a new ?schema= of the database)"
                )
            stats = self._store.stats()
            total = stats.documents + stats.retired_documents + stats.chunks
            return other.admin.import_records(_counted(self.export(), total, progress), progress)

    def captured(self) -> Iterator[dict[str, Any]]:
        """Every captured search and recall, as replay records: results get stable ids."""
        return self._captures.records()

    def embed_missing(self, progress: Progress | None = None, *, wait: bool = True) -> int:
        """Embed every chunk without a vector for the current model (after a model change or
        an import, or written by a brain that embeds in the background). Returns how many were
        embedded. With `wait=False`, a brain that embeds in the background leaves them to its
        thread and returns 0 at once."""
        return self._embedding.embed_missing(progress, wait=wait)

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
        if isinstance(self._backend, DenseIndexAdmin):
            value = self._backend.dense_status(embedder.model_id)
        else:
            value = in_process_status(embedder.model_id)
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
        return dense_admin(self._backend).build_dense(
            embedder.model_id,
            embedder.dim,
            centre=centred(
                self._models.current.profile if self._models.current else self._settings.embedder
            ),
            m=m,
            ef_construction=ef_construction,
            memory=memory,
            progress=progress,
        )

    def drop_dense_index(self) -> dict[str, Any]:
        return dense_admin(self._backend).drop_dense(self._require_embedder().model_id)

    def _require_embedder(self) -> Embedder:
        if self._embedder is None:
            raise InvalidInput("this brain's profile has no embedding model, so no dense index")
        return self._embedder


def _index_kind(index: DenseIndex | None) -> str:
    if index is None:
        return "none"
    return "in-process" if isinstance(index, VectorIndex) else "pgvector-hnsw"


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
