"""Writes: notes, memories, conversations and folders, each document written with its chunks,
its vectors and the graph edges it states in one unit of work, so that a crash can never leave
a note and its edges out of step."""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexusbrain.brain.embedding import Embedding
from nexusbrain.clock import Clock
from nexusbrain.config import Settings
from nexusbrain.errors import InvalidInput
from nexusbrain.records import (
    DocumentKind,
    MarkdownNote,
    Progress,
    WriteResult,
    WriteStatus,
    json_problem,
)
from nexusbrain.storage.base import Backend, UnitOfWork

# What only writes use is imported where it is used: a search in a fresh process (the command
# line without a server) then loads none of it.
if TYPE_CHECKING:
    from nexusbrain.graph.model import RelationshipInput
    from nexusbrain.ingest.conversation import Session
    from nexusbrain.ingest.directory import DirectoryReport
    from nexusbrain.ingest.documents import Prepared


class Writer:
    """Every write of one brain (Brain's write methods call it; see their docstrings)."""

    def __init__(
        self, backend: Backend, settings: Settings, clock: Clock, embedding: Embedding
    ) -> None:
        self._backend = backend
        self._store = backend.documents
        self._settings = settings
        self._clock = clock
        self._embedding = embedding

    def markdown(self, notes: Sequence[MarkdownNote]) -> list[WriteResult]:
        """A batch, in one transaction. A note the batch already holds (the same uri and
        content: without a uri, the same content) is a duplicate of it, as if sent after it;
        two different notes under one uri are refused."""
        prepared = [self._prepared_note(_named(note)) for note in notes]
        seen: dict[str, int] = {}  # uri -> its first place in `prepared`
        again: dict[int, int] = {}  # place of a repeated note -> place of its first
        for position, item in enumerate(prepared):
            first = seen.setdefault(item.draft.uri, position)
            if first == position:
                continue
            if prepared[first].draft.revision != item.draft.revision:
                raise InvalidInput(
                    f"documents {first + 1} and {position + 1} of the batch have the same uri"
                    f" {item.draft.uri!r} and different content: send one of them"
                )
            again[position] = first
        unique = [item for position, item in enumerate(prepared) if position not in again]
        written = iter(self._write_notes(unique) if unique else [])
        results: list[WriteResult] = []
        for position in range(len(prepared)):
            if position in again:
                result = results[again[position]]
                results.append(
                    WriteResult(WriteStatus.DUPLICATE, result.document_id, result.revision, 0)
                )
            else:
                results.append(next(written))
        return results

    def memory(
        self, text: str, *, source: str | None, domain: str | None, tags: Sequence[str]
    ) -> WriteResult:
        from nexusbrain.ingest.documents import content_hash, prepare_markdown

        body = self._checked_text(text, "text")
        revision = content_hash(body.encode("utf-8"))
        metadata: dict[str, Any] = {"tags": [label(tag, "tag") for tag in tags]}
        if source:
            metadata["source"] = label(source, "source")
        prepared = prepare_markdown(
            body,
            uri=f"memory:{revision[:32]}",
            domain=domain or self._settings.default_domain,
            config=self._settings.chunking,
            title=_memory_title(body),
            kind=DocumentKind.MEMORY,
            metadata=metadata,
            revision=revision,
        )
        return self._write_batch([prepared])[0]

    def conversation(
        self, sessions: Sequence[Session], *, domain: str | None, index_roles: Iterable[str] | None
    ) -> list[WriteResult]:
        from nexusbrain.ingest.conversation import prepare_session

        sessions = [_session(s) for s in sessions]
        roles = frozenset(r.lower() for r in index_roles) if index_roles is not None else None
        chosen = domain or self._settings.default_domain
        most = self._settings.limits.max_session_turns
        prepared = [
            prepare_session(s, domain=chosen, index_roles=roles, max_turns=most) for s in sessions
        ]
        return [self._write_batch([p])[0] for p in prepared]

    def directory(
        self,
        root: str | Path,
        *,
        domain: str | None,
        progress: Progress | None,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
    ) -> DirectoryReport:
        from nexusbrain.ingest.directory import ingest_directory

        self._retract_retired()
        return ingest_directory(
            self._store,
            root,
            domain=domain or self._settings.default_domain,
            chunking=self._settings.chunking,
            max_bytes=self._settings.limits.max_document_bytes,
            clock=self._clock,
            write=self._write_notes,
            retire=self.retire,
            progress=progress,
            include=include,
            exclude=exclude,
        )

    def watch(
        self,
        root: str | Path,
        *,
        on_sync: Callable[[DirectoryReport], None],
        domain: str | None,
        stop: threading.Event | None,
    ) -> None:
        from nexusbrain.ingest.watch import follow  # watchfiles, only when watching

        follow(root, lambda: self.directory(root, domain=domain, progress=None), on_sync, stop=stop)

    def retire(self, document_ids: Sequence[int]) -> int:
        """Retire documents and retract the edges they stated, in one transaction."""
        from nexusbrain.graph.service import retract_notes

        now = self._clock()
        with self._backend.unit_of_work() as work:
            retired = work.retire_documents(document_ids, now)
            retract_notes(work.graph, self._settings.graph, document_ids, now)
        return retired

    def _prepared_note(self, note: MarkdownNote) -> Prepared:
        from nexusbrain.ingest.documents import content_hash, prepare_markdown

        text = self._checked_text(note.content, "content")
        revision = content_hash(text.encode("utf-8"))
        return prepare_markdown(
            text,
            uri=note.uri or f"doc:{revision[:32]}",
            domain=note.domain or self._settings.default_domain,
            config=self._settings.chunking,
            title=note.title,
            metadata=note.metadata,
            revision=revision,
        )

    def _checked_text(self, text: str, field: str) -> str:
        from nexusbrain.ingest.documents import decode_utf8

        problem = json_problem({field: text})  # a lone surrogate cannot be stored as UTF-8
        if problem:
            raise InvalidInput(problem)
        text = text.replace(NUL, "")  # no reader wants one, and it breaks tools downstream
        limit = self._settings.limits.max_document_bytes
        return decode_utf8(text.encode("utf-8"), field, limit)

    def _write_batch(self, batch: Sequence[Prepared]) -> list[WriteResult]:
        """Documents, their chunks and any new vectors, in one transaction."""
        items, vectors = self._embedding.prepared(batch)
        results = self._store.write_documents(items, self._clock(), vectors)
        self._embedding.committed()
        return results

    def _write_notes(self, batch: Sequence[Prepared]) -> list[WriteResult]:
        """Write markdown notes and the graph edges each states (wikilinks, front-matter
        relations) in one transaction. A bad relation refuses the note before any write."""
        from nexusbrain.graph.names import edge_keys
        from nexusbrain.graph.notes import note_edges

        link_type = self._settings.graph.link_type
        stated = [
            note_edges(p.draft.title, p.front_matter or {}, p.draft.content, link_type)
            if p.draft.kind is DocumentKind.MARKDOWN  # a script's [[ -f x ]] states no link
            else ()
            for p in batch
        ]
        items, vectors = self._embedding.prepared(batch)
        with self._backend.unit_of_work() as work:
            results = work.write_documents(items, self._clock(), vectors)
            now = self._clock()
            written = [
                edge
                for result, edges in zip(results, stated, strict=True)
                if result.status is not WriteStatus.DUPLICATE
                for edge in edges
            ]
            if written:  # their entities in one look-up, not one each
                work.graph.look_up(edge_keys(written))
            for result, edges in zip(results, stated, strict=True):
                self._sync_edges(work, result, edges, now)
        self._embedding.committed()
        return results

    def _sync_edges(
        self,
        work: UnitOfWork,
        result: WriteResult,
        edges: Sequence[RelationshipInput],
        now: datetime,
    ) -> None:
        if result.status is WriteStatus.DUPLICATE:
            if work.edges_revision(result.document_id) == result.revision:
                return
        elif result.status is WriteStatus.CREATED and not edges:
            work.mark_edges_synced(result.document_id, result.revision)
            return
        from nexusbrain.graph.service import sync_note

        sync_note(work.graph, self._settings.graph, result.document_id, edges, now)
        work.mark_edges_synced(result.document_id, result.revision)

    def _retract_retired(self) -> None:
        """Retract the edges that retired notes still state (left by a crash before edges
        were written with their note)."""
        stale = self._store.retired_with_edges()
        if stale:
            from nexusbrain.graph.service import retract_notes

            with self._backend.unit_of_work() as work:
                retract_notes(work.graph, self._settings.graph, stale, self._clock())


def _memory_title(text: str) -> str:
    first = text.strip().splitlines()[0]
    return first if len(first) <= 80 else first[:77] + "..."


NUL = "\x00"


def uri(value: str, field: str = "uri") -> str:
    """A uri (or a part of one, named by `field`) as stored and looked up: NFC, so that the
    composed and decomposed spellings of one name are one document. InvalidInput for a NUL,
    which no path or link holds."""
    return unicodedata.normalize("NFC", label(value, field))


def label(value: str, field: str) -> str:
    """A name (a uri, title, tag, source) as given; InvalidInput if it holds a NUL."""
    if NUL in value:
        raise InvalidInput(f"{field} {value!r} holds a NUL character (\\x00): remove it")
    return value


def _named(note: MarkdownNote) -> MarkdownNote:
    """A note whose uri, title and tags are checked (`uri`, `label`)."""
    metadata = note.metadata
    tags = metadata.get("tags") if metadata else None
    if metadata is not None and isinstance(tags, list):
        checked = [label(t, "tag") if isinstance(t, str) else t for t in tags]
        metadata = {**metadata, "tags": checked}
    return replace(
        note,
        uri=uri(note.uri) if note.uri is not None else None,
        title=label(note.title, "title") if note.title is not None else None,
        metadata=metadata,
    )


def _session(session: Session) -> Session:
    """A session whose id and conversation are checked (they make its uri) and whose turns
    hold no NUL."""
    turns = tuple(
        replace(t, content=t.content.replace(NUL, "")) if NUL in t.content else t
        for t in session.turns
    )
    conversation = session.conversation
    return replace(
        session,
        id=uri(session.id, "session id"),
        conversation=uri(conversation, "conversation") if conversation is not None else None,
        turns=turns,
    )
