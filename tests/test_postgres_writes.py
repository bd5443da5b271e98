"""PostgreSQL's write path (storage/postgres/writes.py, graph.py, chunks.py): what a batch
leaves behind, whatever round trips it takes. The graph records and everything else a brain
exports are the same as SQLite's for the same notes; a write is found by the next search;
the chunk change log replays to the chunks there are; vectors stored before a write that
then failed are kept for its retry, and the brain is whole after it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nexusbrain.brain.facade import Brain
from nexusbrain.clock import FrozenClock
from nexusbrain.config import Profile, Settings, StorageConfig
from nexusbrain.errors import Busy
from nexusbrain.graph.model import EntityInput, RelationshipInput
from nexusbrain.records import MarkdownNote, WriteStatus

from .pgserver import Server, fresh_schema
from .postgres_checks import database_checks

psycopg = pytest.importorskip("psycopg")


def _note(uri: str, title: str, body: str, relations: list[str] = ()) -> MarkdownNote:  # type: ignore[assignment]
    front = "".join(f"  - '{r}'\n" for r in relations)
    head = f"---\nrelations:\n{front}---\n" if relations else ""
    return MarkdownNote(f"{head}# {title}\n\n{body}\n", title=title, uri=uri)


FIRST = [
    _note("n/alpha.md", "Alpha", "Alpha knows [[Beta]] and [[Gamma]].", ["works_at: Acme"]),
    _note("n/beta.md", "Beta", "Beta answers [[Alpha]].", ["lives_in: Paris"]),
    _note("n/gamma.md", "Gamma", "Gamma points at [[Beta]] too."),
    _note("n/alpha-copy.md", "Alpha", "A second Alpha note that also links [[Beta]]."),
    _note("n/plain.md", "Plain", "No links at all, zyxwvut."),
]
SECOND = [
    # alpha drops Beta (the copy still states it: handed on) and changes employer (works_at
    # is functional: Acme is contradicted)
    _note("n/alpha.md", "Alpha", "Alpha now knows [[Gamma]] only.", ["works_at: Globex"]),
    FIRST[1],  # unchanged: a duplicate
    _note("n/delta.md", "Delta", "Delta is new and links [[Alpha]] and [[Epsilon]]."),
]


def _scenario(db: str | Path, clock: FrozenClock) -> list[dict[str, Any]]:
    settings = Settings(db=db, embedder=Profile.HASHING)
    with Brain.open(settings=settings, clock=clock) as brain:
        first = brain.ingest_markdown_batch(FIRST)
        assert [r.status for r in first] == [WriteStatus.CREATED] * len(FIRST)
        clock.advance(hours=1)
        second = brain.ingest_markdown_batch(SECOND)
        assert [r.status for r in second] == [
            WriteStatus.UPDATED,
            WriteStatus.DUPLICATE,
            WriteStatus.CREATED,
        ]
        clock.advance(hours=1)
        assert brain.delete_document(first[2].document_id)  # gamma: its edges retracted
        clock.advance(hours=1)
        # a write of the graph's own after the notes': its ids follow theirs
        brain.graph.ingest(
            [EntityInput("Zeta", "person", ("Z",))], [RelationshipInput("Zeta", "knows", "Delta")]
        )
        brain.ingest_markdown_batch([_note("n/eta.md", "Eta", "Eta links [[Zeta]].")])
        return list(brain.admin.export())


def test_notes_leave_the_same_records_on_both_backends(postgres: Server, tmp_path: Path) -> None:
    start = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
    on_sqlite = _scenario(tmp_path / "brain.db", FrozenClock(start))
    schema = fresh_schema()
    on_postgres = _scenario(postgres.url(schema), FrozenClock(start))
    kinds = {r.get("kind", r.get("type")) for r in on_sqlite}
    assert len(on_sqlite) > 20 and len(kinds) > 3
    graph = [r for r in on_sqlite if "relationship" in str(r) or "entit" in str(r)]
    assert graph  # the scenario made a graph
    assert on_postgres == on_sqlite
    with postgres.connect() as conn:
        database_checks(conn, schema)


@pytest.fixture
def pg_brain(postgres: Server) -> Iterator[tuple[Brain, str]]:
    schema = fresh_schema()
    storage = StorageConfig(busy_timeout_ms=300)
    settings = Settings(db=postgres.url(schema), embedder=Profile.HASHING, storage=storage)
    with Brain.open(settings=settings) as brain:
        yield brain, schema


def test_a_write_is_found_by_the_next_search(pg_brain: tuple[Brain, str]) -> None:
    brain, _ = pg_brain
    assert not brain.search("zyxwvut")
    brain.ingest_markdown_batch(FIRST)
    hits = brain.search("zyxwvut")
    assert hits[0].uri == "n/plain.md" and "zyxwvut" in hits[0].text
    brain.ingest_markdown_batch([_note("n/plain.md", "Plain", "Now it says qwertzui.")])
    assert not any("zyxwvut" in h.text for h in brain.search("zyxwvut"))
    hits = brain.search("qwertzui")
    assert hits[0].uri == "n/plain.md" and "qwertzui" in hits[0].text


def test_the_change_log_replays_to_the_chunks_there_are(
    postgres: Server, pg_brain: tuple[Brain, str]
) -> None:
    brain, schema = pg_brain
    first = brain.ingest_markdown_batch(FIRST)
    brain.ingest_markdown_batch(SECOND)
    brain.delete_document(first[4].document_id)
    with postgres.connect() as conn:
        conn.execute(f'SET search_path TO "{schema}", public')
        log = conn.execute("SELECT seq, chunk_id, pid, added FROM chunk_changes ORDER BY seq")
        rows = log.fetchall()
        head, chunks, tokens = conn.execute(
            "SELECT seq, chunks, tokens FROM change_head"
        ).fetchone()
        live = dict(conn.execute("SELECT id, pid FROM chunks").fetchall())
        length = conn.execute("SELECT coalesce(sum(length), 0) FROM chunks").fetchone()[0]
    assert [r[0] for r in rows] == list(range(1, head + 1))  # every seq, once, in order
    state: dict[int, tuple[int, bool]] = {}
    for _, chunk_id, pid, added in rows:
        assert added != state.get(chunk_id, (0, False))[1]  # added, removed, added...
        state[chunk_id] = (pid, added)
    assert {c: pid for c, (pid, added) in state.items() if added} == live
    removed = [c for c, (_, added) in state.items() if not added]
    assert removed  # the replaced note's and the deleted note's chunks
    assert (chunks, tokens) == (len(live), length)


def test_vectors_stored_before_a_failed_write_serve_its_retry(
    postgres: Server, pg_brain: tuple[Brain, str]
) -> None:
    brain, schema = pg_brain
    with postgres.connect() as holder:
        key = f"nexusbrain:{schema}:write"
        holder.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))
        with pytest.raises(Busy):
            brain.ingest_markdown_batch(FIRST)
        holder.execute(f'SET search_path TO "{schema}", public')
        kept = holder.execute("SELECT count(*) FROM vectors").fetchone()[0]
        written = holder.execute("SELECT count(*) FROM chunks").fetchone()[0]
        assert kept > 0 and written == 0  # the vectors' own transaction had committed
        holder.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))
        results = brain.ingest_markdown_batch(FIRST)
        assert [r.status for r in results] == [WriteStatus.CREATED] * len(FIRST)
        after = holder.execute("SELECT count(*) FROM vectors").fetchone()[0]
        missing = holder.execute(
            "SELECT count(*) FROM chunks c LEFT JOIN vectors v ON v.text_hash = c.text_hash"
            " WHERE v.text_hash IS NULL"
        ).fetchone()[0]
    assert after == kept and missing == 0  # none embedded twice, every chunk has its vector
    assert brain.search("zyxwvut")[0].uri == "n/plain.md"
    with postgres.connect() as conn:
        database_checks(conn, schema)
