"""Conformance: documents, chunks, revisions, the change log, captures and the unit of work."""

from __future__ import annotations

import threading

import pytest

from nexusbrain.errors import NotFound, StorageError
from nexusbrain.records import Capture, DocumentKind, SearchFilters, WriteStatus
from nexusbrain.storage.base import Backend

from .conftest import NOW, OpenBackend, chunk, draft, write


def test_write_then_duplicate_then_update(backend: Backend) -> None:
    store = backend.documents
    first = write(backend, draft(), [chunk()])
    assert first.status is WriteStatus.CREATED
    dup = write(backend, draft(), [chunk()])
    assert (dup.status, dup.document_id, dup.chunks) == (
        WriteStatus.DUPLICATE,
        first.document_id,
        1,
    )
    new = write(backend, draft(revision="r2", text="gamma"), [chunk("gamma")])
    assert (new.status, new.document_id) == (WriteStatus.UPDATED, first.document_id)
    assert [c.text for c in store.chunks_of(first.document_id)] == ["gamma"]
    assert [h["event"] for h in store.document_history(first.document_id)] == [
        "created",
        "updated",
    ]
    document = store.get_document(first.document_id)
    assert (document.uri, document.revision, document.content) == ("a.md", "r2", "gamma")
    assert document.metadata == {"x": 1} and document.created_at == NOW


def test_a_failed_write_leaves_nothing_behind(backend: Backend) -> None:
    write(backend, draft(), [chunk()])
    clashing = [chunk("one", 0), chunk("two", 0)]  # the same ordinal twice
    with pytest.raises(StorageError, match="nothing was changed"):
        write(backend, draft(revision="r2", text="one two"), clashing)
    document = backend.documents.find_document("a.md")
    assert document is not None and document.revision == "r1"
    assert [c.text for c in backend.documents.chunks_of(document.id)] == ["alpha beta"]


def test_retire_keeps_the_row_and_hides_it(backend: Backend) -> None:
    store = backend.documents
    doc_id = write(backend, draft(), [chunk()]).document_id
    assert store.retire_documents([doc_id], NOW) == 1
    assert store.retire_documents([doc_id], NOW) == 0
    assert store.get_document(doc_id).deleted_at == NOW
    assert store.chunks_of(doc_id) == []
    assert store.revisions_under("") == {}
    assert backend.lexical.search(["alpha"], 5, SearchFilters()).scored == []
    revived = write(backend, draft(), [chunk()])
    assert (revived.status, revived.document_id) == (WriteStatus.UPDATED, doc_id)
    events = [h["event"] for h in store.document_history(doc_id)]
    assert events == ["created", "retired", "updated"]


def test_unknown_document_is_not_found(backend: Backend) -> None:
    with pytest.raises(NotFound, match="42"):
        backend.documents.get_document(42)
    with pytest.raises(NotFound, match="42"):
        backend.documents.document_history(42)
    assert backend.documents.find_document("nowhere.md") is None


def test_a_batch_writing_the_same_uri_twice_keeps_the_last_version(backend: Backend) -> None:
    results = backend.documents.write_documents(
        [
            (draft("a.md", "r1", "one two"), [chunk("one", 0), chunk("two", 1)]),
            (draft("b.md"), [chunk("apple")]),
            (draft("a.md", "r1", "one two"), [chunk("one", 0), chunk("two", 1)]),
            (draft("a.md", "r2", "three"), [chunk("three")]),
        ],
        NOW,
    )
    assert [(r.status, r.chunks) for r in results] == [
        (WriteStatus.CREATED, 2),
        (WriteStatus.CREATED, 1),
        (WriteStatus.DUPLICATE, 2),
        (WriteStatus.UPDATED, 1),
    ]
    assert [c.text for c in backend.documents.chunks_of(results[0].document_id)] == ["three"]
    assert backend.lexical.search(["one"], 5, SearchFilters()).scored == []
    assert len(backend.lexical.search(["three"], 5, SearchFilters()).scored) == 1


def test_chunks_keep_their_spans_and_heads(backend: Backend) -> None:
    text = "alpha\nbeta"
    written = write(backend, draft(text=text), [chunk("alpha", 0, ("A", "B")), chunk("beta", 1)])
    chunks = backend.documents.chunks_of(written.document_id)
    assert [c.ordinal for c in chunks] == [0, 1]
    assert chunks[0].heading_path == ("A", "B") and chunks[1].heading_path == ("H",)
    found = backend.documents.fetch_chunks([c.id for c in chunks] + [10_000])
    assert set(found) == {c.id for c in chunks}
    got, head = found[chunks[0].id]
    assert got == chunks[0]
    assert (head.id, head.uri, head.kind, head.revision) == (
        written.document_id,
        "a.md",
        DocumentKind.MARKDOWN,
        "r1",
    )


def test_revisions_under_a_prefix_and_filters(backend: Backend) -> None:
    write(backend, draft("notes/a.md", "ra"), [chunk("apple")])
    write(backend, draft("notes/b.md", "rb", domain="work"), [chunk("apple tart")])
    write(backend, draft("other/c.md", "rc"), [chunk("apple pie")])
    assert backend.documents.revisions_under("notes/") == {"notes/a.md": "ra", "notes/b.md": "rb"}
    store = backend.documents
    work = store.chunk_ids_matching(SearchFilters(domain="work"))
    notes = store.chunk_ids_matching(SearchFilters(path_prefix="notes/"))
    assert len(work) == 1 and len(notes) == 2 and work < notes
    assert len(store.chunk_ids_matching(SearchFilters())) == 3


def test_a_listing_under_a_prefix_is_the_live_documents_by_uri(backend: Backend) -> None:
    write(backend, draft("notes/b.md", "rb"), [chunk("one", 0), chunk("two", 1)])
    write(backend, draft("notes/Z.md", "rz", kind=DocumentKind.PDF), [chunk("three")])
    write(backend, draft("notes/a.md", "ra"), [chunk("four")])
    gone = write(backend, draft("notes/gone.md", "rg"), [chunk("five")])
    write(backend, draft("other/c.md", "rc"), [chunk("six")])
    backend.documents.retire_documents([gone.document_id], NOW)
    total, listed = backend.documents.list_documents("notes/", 10)
    assert total == 3
    assert [(d.uri, d.kind, d.chunks, d.title) for d in listed] == [
        ("notes/Z.md", DocumentKind.PDF, 1, "Title"),  # bytewise: capitals first
        ("notes/a.md", DocumentKind.MARKDOWN, 1, "Title"),
        ("notes/b.md", DocumentKind.MARKDOWN, 2, "Title"),
    ]
    assert all(d.updated_at == NOW for d in listed)
    assert backend.documents.list_documents("notes/", 1) == (3, listed[:1])
    assert backend.documents.list_documents("", 10)[0] == 4
    assert backend.documents.list_documents("nothing/", 10) == (0, [])


def test_the_change_log_names_added_and_removed_chunks(backend: Backend) -> None:
    store = backend.documents
    start = store.latest_chunk_change()
    first = write(backend, draft(), [chunk("one", 0), chunk("two", 1)])
    seq, added, gone = store.chunk_changes_since(start)
    ids = {c.id for c in store.chunks_of(first.document_id)}
    assert seq > start and set(added) == ids and gone == []
    write(backend, draft(revision="r2", text="three"), [chunk("three")])
    later, added, gone = store.chunk_changes_since(seq)
    now = {c.id for c in store.chunks_of(first.document_id)}
    # an id may be used again: what counts is each id's last change
    assert later > seq and set(added) == now and set(gone) == ids - now
    assert store.chunk_changes_since(later) == (later, [], [])
    assert store.latest_chunk_change() == later


def test_captures_are_kept_up_to_the_cap(backend: Backend) -> None:
    store = backend.documents
    for n in range(5):
        capture = Capture(NOW, "search", f"q{n}", "balanced", {"domain": "x"}, (1, 2), 1.5)
        store.record_capture(capture, max_rows=3)
    kept = list(store.captures())
    assert [c.query for c in kept] == ["q2", "q3", "q4"]
    assert kept[0].results == (1, 2) and kept[0].filters == {"domain": "x"}


def test_stats_count_live_and_retired_documents(backend: Backend) -> None:
    a = write(backend, draft("a.md"), [chunk("one", 0), chunk("two", 1)])
    write(backend, draft("b.md"), [chunk("three")])
    backend.documents.retire_documents([a.document_id], NOW)
    stats = backend.documents.stats()
    assert (stats.documents, stats.retired_documents, stats.chunks) == (1, 1, 1)
    assert stats.db_bytes > 0 and stats.schema_version >= 1


def test_a_unit_of_work_commits_documents_and_edges_together(backend: Backend) -> None:
    from nexusbrain.records import RelationshipDraft

    class Boom(Exception):
        pass

    with pytest.raises(Boom), backend.unit_of_work() as work:
        result = work.write_documents([(draft(), [chunk()])], NOW)[0]
        ada = work.graph.insert_entity("ada", "Ada", None, NOW)
        acme = work.graph.insert_entity("acme", "Acme", None, NOW)
        work.graph.insert_relationship(
            RelationshipDraft(ada.id, "works_at", acme.id, None, None, "document:1", None), NOW
        )
        work.mark_edges_synced(result.document_id, "r1")
        raise Boom
    assert backend.documents.find_document("a.md") is None
    assert backend.graph.find_entity("ada") is None
    with backend.unit_of_work() as work:
        result = work.write_documents([(draft(), [chunk()])], NOW)[0]
        work.mark_edges_synced(result.document_id, "r1")
        assert work.edges_revision(result.document_id) == "r1"
    assert backend.documents.edges_revision(result.document_id) == "r1"
    assert backend.documents.edges_behind("") == set()


def test_notes_whose_edges_lag_their_revision_are_named(backend: Backend) -> None:
    a = write(backend, draft("n/a.md", "r1"), [chunk()])
    write(backend, draft("n/b.md", "r1"), [chunk()])
    write(backend, draft("memory:1", "m", kind=DocumentKind.MEMORY), [chunk()])
    backend.documents.mark_edges_synced(a.document_id, "r1")
    assert backend.documents.edges_behind("n/") == {"n/b.md"}
    write(backend, draft("n/a.md", "r2", "new"), [chunk("new")])
    assert backend.documents.edges_behind("n/") == {"n/a.md", "n/b.md"}
    assert backend.documents.edges_behind("") == {"n/a.md", "n/b.md"}  # not the memory


def test_writers_and_readers_on_several_threads(open_backend: OpenBackend) -> None:
    backend = open_backend()
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(25):
                write(backend, draft(f"w{n}/{i}.md", f"r{i}", f"word{n} item{i}"), [chunk()])
        except BaseException as exc:
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(50):
                backend.lexical.search(["alpha"], 10, SearchFilters())
                backend.documents.stats()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    threads += [threading.Thread(target=reader) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert backend.documents.stats().documents == 100
    # a second handle on the same database sees every write
    assert open_backend().documents.stats().documents == 100
