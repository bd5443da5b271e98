"""Document writes in PostgreSQL, inside a write transaction (database.py): a `UnitOfWork`.

A batch of documents is written in a fixed number of round trips, whatever its size. Before
the write lock: its vectors (a transaction of their own), a read of the documents held under
its uris, the postings of those that look new or changed (chunks.py), with their chunks'
ids. Under it: the lock and the read again; the new documents inserted, the replaced ones'
chunks deleted and their rows updated; the chunks by COPY; the graph's reads of the notes'
edges (graph.py), each with the writes queued before it; and the COMMIT, with the revisions,
the rest of the graph's writes, the note edges' revisions and the chunk change log before it.
It gives what SQLite's document-by-document writes give: the same statuses, and ids in the
same order. A batch that names one uri twice is written document by document, as its later
versions depend on its earlier ones.
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
from nexusbrain.storage.exchange import chunk_values
from nexusbrain.storage.postgres.chunks import (
    ChangeLog,
    ChunkRow,
    Staged,
    delete_chunks,
    delete_statement,
    draft_columns,
    insert_chunks,
    put_vectors,
    removed,
    stage_chunks,
)
from nexusbrain.storage.postgres.database import Query
from nexusbrain.storage.postgres.dialect import POSTGRES
from nexusbrain.storage.postgres.graph import Pending, PostgresGraphWrites
from nexusbrain.storage.sql.documents import edges_revision, retire

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
    """`Database.begin`: the write transaction, and with `lock` the brain's write lock, then
    the statement `then` in the same round trip (its cursor returned)."""

    def __call__(
        self, conn: Conn, *, lock: bool = True, then: Query | None = None
    ) -> psycopg.Cursor[Any] | None: ...


@dataclass(slots=True)
class _Planned:
    draft: DocumentDraft
    chunks: Sequence[ChunkDraft]
    status: WriteStatus
    document_id: int = 0
    held: int = 0  # a duplicate's chunks
    edges: str | None = None  # the revision its note's edges follow, if known


@dataclass(frozen=True, slots=True)
class _Staged:
    """What a batch made before the write lock, for the documents it then looked to write
    (`uris`, in order): their chunks' postings (stored) and ids, and their chunks' columns."""

    uris: list[str]
    postings: Staged
    values: list[tuple[Any, ...]]  # chunk_values of each chunk, in order


class PostgresWork:
    """A `UnitOfWork` on a connection that begins its write transaction, and takes the
    brain's write lock, only when first used (`conn`): a batch of documents first does what
    needs no lock (its vectors, its postings). Statements whose answers it does not need
    (revisions, the graph's writes, the note edges' revisions, the chunk change log) wait in
    `pending` for the next read, or for the COMMIT: its caller commits, with `finish()`'s
    statements in the same round trip."""

    def __init__(self, conn: Conn, begin: _Begin) -> None:
        self._raw = conn
        self._begin = begin
        self.log = ChangeLog()
        self.pending = Pending()
        self._graph: PostgresGraphWrites | None = None
        self._synced: dict[int, str] = {}  # note -> the revision its edges follow, to write
        self._edges: dict[int, str | None] = {}  # note -> the revision read under the lock
        self._notes: list[int] = []  # documents written, whose note edges may be synced

    @property
    def conn(self) -> Conn:
        """The connection, inside the write transaction, with what is pending sent."""
        self._begin(self._raw)
        self.pending.send(self._raw)
        return self._raw

    @property
    def graph(self) -> PostgresGraphWrites:
        if self._graph is None:
            self._begin(self._raw)
            self._graph = PostgresGraphWrites(self._raw, self.pending, self._notes)
        return self._graph

    def finish(self) -> list[Query]:
        """The statements left to send, in order, before the COMMIT."""
        if self._graph is not None:
            self._graph.close()
        if self._synced:
            self.pending.add(
                "INSERT INTO note_edges (document_id, revision)"
                " SELECT * FROM unnest(%s::bigint[], %s::text[])"
                " ON CONFLICT (document_id) DO UPDATE SET revision = excluded.revision",
                (list(self._synced), list(self._synced.values())),
            )
            self._synced.clear()
        logged = self.log.statement()
        if logged is not None:
            self.pending.add(*logged)
        if self.pending.statements:
            self._begin(self._raw)  # they are written under the lock
        return self.pending.take()

    def write_documents(
        self, items: DocumentItems, now: datetime, vectors: VectorBatch | None = None
    ) -> list[WriteResult]:
        uris = [draft.uri for draft, _ in items]
        one_by_one = len(set(uris)) < len(uris)
        staged = None
        if self._raw.info.transaction_status is TransactionStatus.IDLE:
            # Before the lock, so that other writers' batches are not held up by this work:
            # the vectors in a transaction of their own (put_vectors), and the postings of
            # the documents that look new or changed, whose pids, ids and segment come from
            # sequences, made and stored in the write's transaction. Under the lock, the
            # plan is made again; one that differs makes the postings again.
            if vectors is not None:
                put_vectors(self._raw, vectors, apart=True)
                vectors = None
            if not one_by_one:
                staged = self._stage(items)
        if vectors is not None:
            put_vectors(self.conn, vectors)
        if one_by_one:
            return [self._write_batch([item], now)[0] for item in items]
        return self._write_batch(items, now, staged)

    def _stage(self, items: DocumentItems) -> _Staged:
        found = self._raw.execute(*_plan_query(items)).fetchall()
        written = _written(_plan(items, found))
        drafts = [c for p in written for c in p.chunks]
        postings = stage_chunks(self._raw, [draft_columns(c) for c in drafts], len(drafts))
        self._begin(self._raw, lock=False)
        postings.store(self._raw)
        return _Staged([p.draft.uri for p in written], postings, [chunk_values(c) for c in drafts])

    def _write_batch(
        self, items: DocumentItems, now: datetime, staged: _Staged | None = None
    ) -> list[WriteResult]:
        """Write the documents; `staged` holds what was made before the lock for the
        documents it names (used if those are the documents written)."""
        self.pending.send(self._raw)
        found = self._begin(self._raw, then=_plan_query(items))
        assert found is not None
        plan = _plan(items, found.fetchall())
        self._edges.update((p.document_id, p.edges) for p in plan if p.document_id)
        self._apply(plan, now)
        written = _written(plan)
        self._notes.extend(p.document_id for p in written)
        self._revisions([(p.document_id, p.draft, p.status.value) for p in written], now)
        postings = None
        values: list[tuple[Any, ...]] | None = None
        if staged is not None:
            if staged.uris == [p.draft.uri for p in written]:
                postings, values = staged.postings, staged.values
            else:
                staged.postings.drop(self._raw)
        if values is None:
            values = [chunk_values(c) for p in written for c in p.chunks]
        documents = (p.document_id for p in written for _ in p.chunks)
        rows = [ChunkRow(None, d, *v) for d, v in zip(documents, values, strict=True)]
        insert_chunks(self._raw, rows, self.log, postings)
        return [
            WriteResult(
                p.status,
                p.document_id,
                p.draft.revision,
                p.held if p.status is WriteStatus.DUPLICATE else len(p.chunks),
            )
            for p in plan
        ]

    def _apply(self, plan: list[_Planned], now: datetime) -> None:
        """The plan's statements on documents, in one round trip: the chunks held by its
        duplicates counted, its new documents inserted (their ids given in batch order, as
        SQLite gives them), its replaced ones' chunks deleted and their rows updated."""
        duplicates = [p for p in plan if p.status is WriteStatus.DUPLICATE]
        created = [p for p in plan if p.status is WriteStatus.CREATED]
        replaced = [p for p in plan if p.status is WriteStatus.UPDATED]
        if not (duplicates or created or replaced):
            return
        conn = self._raw
        with conn.pipeline():
            held = inserted = deleted = None
            if duplicates:
                held = conn.execute(
                    "SELECT document_id, count(*) FROM chunks WHERE document_id = ANY(%s)"
                    " GROUP BY document_id",
                    ([p.document_id for p in duplicates],),
                )
            if created:
                drafts = [p.draft for p in created]
                inserted = conn.execute(
                    _NEW_DOCUMENTS,
                    (
                        [d.uri for d in drafts],
                        *_content_columns(drafts),
                        [now] * len(drafts),
                        [now] * len(drafts),
                    ),
                )
            if replaced:
                deleted = conn.execute(*delete_statement([p.document_id for p in replaced]))
                drafts = [p.draft for p in replaced]
                conn.execute(
                    _REPLACED_DOCUMENTS,
                    (
                        [p.document_id for p in replaced],
                        *_content_columns(drafts),
                        [now] * len(drafts),
                    ),
                )
        if held is not None:
            counts = dict(held.fetchall())
            for p in duplicates:
                p.held = int(counts.get(p.document_id, 0))
        if inserted is not None:
            ids = {uri: document_id for document_id, uri in inserted.fetchall()}
            for p in created:
                p.document_id = int(ids[p.draft.uri]) if p.draft.uri in ids else 0
                assert p.document_id, p.draft.uri
        if deleted is not None:
            removed(deleted, self.log)

    def _revisions(self, written: list[tuple[int, DocumentDraft, str]], now: datetime) -> None:
        """Their revisions' rows, sent with the next read or the COMMIT."""
        if not written:
            return
        self.pending.add(
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
        if document_id in self._edges:  # read with the plan, under the lock
            return self._edges[document_id]
        return edges_revision(self.conn, POSTGRES, document_id)

    def mark_edges_synced(self, document_id: int, revision: str) -> None:
        self._synced[document_id] = revision

    def store_vectors(self, vectors: VectorBatch, hashes: dict[int, str]) -> None:
        put_vectors(self.conn, vectors)
        if not hashes:
            return
        rows = self.conn.execute(
            "UPDATE chunks c SET text_hash = u.text_hash"
            " FROM unnest(%s::bigint[], %s::text[]) WITH ORDINALITY AS u(id, text_hash, n)"
            " WHERE c.id = u.id RETURNING c.id, c.pid, u.n",
            (list(hashes), list(hashes.values())),
        ).fetchall()
        for found, pid, _ in sorted(rows, key=lambda row: int(row[2])):  # in `hashes`' order
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


def _plan_query(items: DocumentItems) -> Query:
    """The read of the documents held under the items' uris (`_plan` reads its rows), with
    the revision their note's edges follow."""
    return (
        "SELECT d.uri, d.id, d.revision, d.deleted_at, e.revision FROM documents d"
        " LEFT JOIN note_edges e ON e.document_id = d.id WHERE d.uri = ANY(%s)",
        ([draft.uri for draft, _ in items],),
    )


def _plan(items: DocumentItems, found: Sequence[Sequence[Any]]) -> list[_Planned]:
    """What writing these documents does to each, by the rows of `_plan_query`."""
    held = {row[0]: (int(row[1]), row[2], row[3], row[4]) for row in found}
    plan = []
    for draft, chunks in items:
        known = held.get(draft.uri)
        if known is None:
            plan.append(_Planned(draft, chunks, WriteStatus.CREATED))
            continue
        document_id, revision, deleted_at, edges = known
        status = WriteStatus.UPDATED
        if revision == draft.revision and deleted_at is None:
            status = WriteStatus.DUPLICATE
        plan.append(_Planned(draft, chunks, status, document_id, edges=edges))
    return plan


def _written(plan: list[_Planned]) -> list[_Planned]:
    return [p for p in plan if p.status is not WriteStatus.DUPLICATE]
