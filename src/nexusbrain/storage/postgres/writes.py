"""Document writes in PostgreSQL, inside a write transaction (database.py): a `UnitOfWork`.

A batch of documents is written in a fixed number of round trips, whatever its size: one
read of the documents already held under its uris, one insert of the new ones, one update of
the replaced ones (after one delete of their chunks), one insert of their revisions, then the
chunks and their postings by COPY (chunks.py). It gives what SQLite's document-by-document
writes give: the same statuses, and ids in the same order. A batch that names one uri twice
is written document by document, as its later versions depend on its earlier ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import orjson
import psycopg
from psycopg.pq import TransactionStatus

from nexusbrain.records import ChunkDraft, DocumentDraft, VectorBatch, WriteResult, WriteStatus
from nexusbrain.storage.base import DocumentItems
from nexusbrain.storage.postgres.chunks import (
    ChangeLog,
    Staged,
    chunk_row,
    delete_chunks,
    draft_columns,
    insert_chunks,
    put_vectors,
    stage_chunks,
)
from nexusbrain.storage.postgres.dialect import POSTGRES
from nexusbrain.storage.sql.documents import edges_revision, retire
from nexusbrain.storage.sql.graph import GraphWrites

Conn = psycopg.Connection[Any]
_NEW_DOCUMENTS = (
    "INSERT INTO documents (uri, title, domain, kind, revision, content, metadata, created_at,"
    " updated_at) SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[],"
    " %s::text[], %s::text[], %s::text[], %s::timestamptz[], %s::timestamptz[])"
    " RETURNING id, uri"
)
_REPLACED_DOCUMENTS = (
    "UPDATE documents d SET title = u.title, domain = u.domain, kind = u.kind,"
    " revision = u.revision, content = u.content, metadata = u.metadata,"
    " updated_at = u.updated_at, deleted_at = NULL"
    " FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[],"
    " %s::text[], %s::timestamptz[]) AS u(id, title, domain, kind, revision, content,"
    " metadata, updated_at) WHERE d.id = u.id"
)
_REVISIONS = (
    "INSERT INTO document_revisions (document_id, revision, title, event, recorded_at)"
    " SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[],"
    " %s::timestamptz[])"
)


class _Begin(Protocol):
    """`Database.begin`: the write transaction, and with `lock` the brain's write lock."""

    def __call__(self, conn: Conn, *, lock: bool = True) -> None: ...


@dataclass(slots=True)
class _Planned:
    draft: DocumentDraft
    chunks: Sequence[ChunkDraft]
    status: WriteStatus
    document_id: int = 0
    held: int = 0  # a duplicate's chunks


class PostgresWork:
    """A `UnitOfWork` on a connection that begins its write transaction, and takes the
    brain's write lock, only when first used (`conn`): a batch of documents first does what
    needs no lock (its vectors, its postings). Its caller commits, after `finish` has
    written what it kept for the end (the chunk change log, the notes whose edges were
    synced)."""

    def __init__(self, conn: Conn, begin: _Begin) -> None:
        self._raw = conn
        self._begin = begin
        self.log = ChangeLog()
        self._graph: GraphWrites | None = None
        self._synced: dict[int, str] = {}  # note -> the revision its edges follow, to write

    @property
    def conn(self) -> Conn:
        """The connection, inside the write transaction."""
        self._begin(self._raw)
        return self._raw

    @property
    def graph(self) -> GraphWrites:
        if self._graph is None:
            self._graph = GraphWrites(self.conn, POSTGRES)
        return self._graph

    def finish(self) -> None:
        if self._synced:
            with self.conn.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO note_edges (document_id, revision) VALUES (%s, %s)"
                    " ON CONFLICT (document_id) DO UPDATE SET revision = excluded.revision",
                    list(self._synced.items()),
                )
            self._synced.clear()
        if self.log.events:
            self.log.flush(self.conn)

    def write_documents(
        self, items: DocumentItems, now: datetime, vectors: VectorBatch | None = None
    ) -> list[WriteResult]:
        uris = [draft.uri for draft, _ in items]
        one_by_one = len(set(uris)) < len(uris)
        staged = None
        if self._raw.info.transaction_status is TransactionStatus.IDLE:
            # Before the lock, so that other writers' batches are not held up by this work:
            # the vectors in a transaction of their own (stored once per text hash, never
            # removed, so one that outlives a failed write is only kept for the next), and
            # the postings of the documents that look new or changed, whose pids and segment
            # come from sequences, made and stored in the write's transaction. Under the
            # lock, the plan is made again; one that differs makes the postings again.
            if vectors is not None:
                with self._raw.transaction():
                    put_vectors(self._raw, vectors)
                vectors = None
            if not one_by_one:
                written = _written(_plan(self._raw, items))
                postings = stage_chunks(
                    self._raw, [draft_columns(c) for p in written for c in p.chunks]
                )
                self._begin(self._raw, lock=False)
                postings.store(self._raw)
                staged = ([p.draft.uri for p in written], postings)
        if vectors is not None:
            put_vectors(self.conn, vectors)
        if one_by_one:
            return [self._write_batch([item], now)[0] for item in items]
        return self._write_batch(items, now, staged)

    def _write_batch(
        self, items: DocumentItems, now: datetime, staged: tuple[list[str], Staged] | None = None
    ) -> list[WriteResult]:
        """Write the documents; `staged` holds the postings of the chunks of the documents
        it names, in order (used if those are the documents written)."""
        plan = _plan(self.conn, items)
        self._count_held([p for p in plan if p.status is WriteStatus.DUPLICATE])
        self._create([p for p in plan if p.status is WriteStatus.CREATED], now)
        self._replace([p for p in plan if p.status is WriteStatus.UPDATED], now)
        written = _written(plan)
        self._revisions([(p.document_id, p.draft, p.status.value) for p in written], now)
        rows = [chunk_row(p.document_id, c) for p in written for c in p.chunks]
        postings = None
        if staged is not None:
            staged_for, postings = staged
            if staged_for != [p.draft.uri for p in written]:
                postings.drop(self.conn)
                postings = None
        insert_chunks(self.conn, rows, self.log, postings)
        return [
            WriteResult(
                p.status,
                p.document_id,
                p.draft.revision,
                p.held if p.status is WriteStatus.DUPLICATE else len(p.chunks),
            )
            for p in plan
        ]

    def _count_held(self, duplicates: list[_Planned]) -> None:
        if not duplicates:
            return
        counts = dict(
            self.conn.execute(
                "SELECT document_id, count(*) FROM chunks WHERE document_id = ANY(%s)"
                " GROUP BY document_id",
                ([p.document_id for p in duplicates],),
            ).fetchall()
        )
        for p in duplicates:
            p.held = int(counts.get(p.document_id, 0))

    def _create(self, created: list[_Planned], now: datetime) -> None:
        """New documents, their ids given in batch order (as SQLite gives them)."""
        if not created:
            return
        drafts = [p.draft for p in created]
        rows = self.conn.execute(
            _NEW_DOCUMENTS,
            (
                [d.uri for d in drafts],
                *_content_columns(drafts),
                [now] * len(drafts),
                [now] * len(drafts),
            ),
        ).fetchall()
        ids = {uri: document_id for document_id, uri in rows}
        for p in created:
            p.document_id = int(ids[p.draft.uri]) if p.draft.uri in ids else 0
            assert p.document_id, p.draft.uri

    def _replace(self, replaced: list[_Planned], now: datetime) -> None:
        if not replaced:
            return
        for p in replaced:
            delete_chunks(self.conn, p.document_id, self.log)
        drafts = [p.draft for p in replaced]
        self.conn.execute(
            _REPLACED_DOCUMENTS,
            ([p.document_id for p in replaced], *_content_columns(drafts), [now] * len(drafts)),
        )

    def _revisions(self, written: list[tuple[int, DocumentDraft, str]], now: datetime) -> None:
        if not written:
            return
        self.conn.execute(
            _REVISIONS,
            (
                [document_id for document_id, _, _ in written],
                [draft.revision for _, draft, _ in written],
                [draft.title for _, draft, _ in written],
                [event for _, _, event in written],
                [now] * len(written),
            ),
        )

    def retire_documents(self, document_ids: Sequence[int], now: datetime) -> int:
        return retire(
            self.conn,
            POSTGRES,
            document_ids,
            now,
            lambda doc: delete_chunks(self.conn, doc, self.log),
        )

    def edges_revision(self, document_id: int) -> str | None:
        if document_id in self._synced:
            return self._synced[document_id]
        return edges_revision(self.conn, POSTGRES, document_id)

    def mark_edges_synced(self, document_id: int, revision: str) -> None:
        self._synced[document_id] = revision

    def store_vectors(self, vectors: VectorBatch, hashes: dict[int, str]) -> None:
        put_vectors(self.conn, vectors)
        for chunk_id, text_hash in hashes.items():
            for found, pid in self.conn.execute(
                "UPDATE chunks SET text_hash = %s WHERE id = %s RETURNING id, pid",
                (text_hash, chunk_id),
            ).fetchall():
                self.log.rehashed(found, pid)


def _content_columns(drafts: Sequence[DocumentDraft]) -> tuple[list[Any], ...]:
    """The drafts' title, domain, kind, revision, content and metadata (JSON), a column each,
    as the batch statements take them."""
    return (
        [d.title for d in drafts],
        [d.domain for d in drafts],
        [d.kind.value for d in drafts],
        [d.revision for d in drafts],
        [d.content for d in drafts],
        [orjson.dumps(dict(d.metadata)).decode() for d in drafts],
    )


def _plan(conn: Conn, items: DocumentItems) -> list[_Planned]:
    """What writing these documents does to each: by the documents held under their uris."""
    held = {
        row[0]: (int(row[1]), row[2], row[3])
        for row in conn.execute(
            "SELECT uri, id, revision, deleted_at FROM documents WHERE uri = ANY(%s)",
            ([draft.uri for draft, _ in items],),
        ).fetchall()
    }
    plan = []
    for draft, chunks in items:
        found = held.get(draft.uri)
        if found is None:
            plan.append(_Planned(draft, chunks, WriteStatus.CREATED))
        elif found[1] == draft.revision and found[2] is None:
            plan.append(_Planned(draft, chunks, WriteStatus.DUPLICATE, found[0]))
        else:
            plan.append(_Planned(draft, chunks, WriteStatus.UPDATED, found[0]))
    return plan


def _written(plan: list[_Planned]) -> list[_Planned]:
    return [p for p in plan if p.status is not WriteStatus.DUPLICATE]
