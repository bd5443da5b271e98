"""PostgreSQL-specific checks (the conformance suite, tests/backend, covers what both backends
share): the URL, migrations under their lock, the graph's invariants refused by the database
itself, postings compaction, ids that import uses again, and two backends over one schema."""

from __future__ import annotations

import multiprocessing
import time
from datetime import UTC, datetime

import pytest

from nexusbrain import storage
from nexusbrain.errors import ConfigError
from nexusbrain.records import SearchFilters
from nexusbrain.storage.base import Backend
from nexusbrain.storage.sqlite.migrations import LATEST as SQLITE_LATEST

from .backend.conftest import NOW, chunk, draft, write
from .pgserver import Server, fresh_schema, open_url
from .postgres_checks import database_checks

psycopg = pytest.importorskip("psycopg")
pg_errors = pytest.importorskip("psycopg.errors")


def test_versions_count_on_sqlite_s_scale() -> None:
    from nexusbrain.storage.postgres.migrations import LATEST

    assert LATEST == SQLITE_LATEST  # an export's header names the same schema on both


def test_the_url_names_schema_and_pool_and_hides_the_password() -> None:
    from nexusbrain.storage.postgres.url import parse_url

    url = parse_url("postgresql://ada:s3cret@db.example:5433/brains?schema=team_a&pool=4")
    assert (url.schema, url.pool) == ("team_a", 4)
    assert "s3cret" not in url.shown and "schema" not in url.conninfo
    assert parse_url("postgres://u@h/d").schema == "nexusbrain"
    for bad, named in [
        ("postgresql://u@h/d?schema=Team-A", "schema='Team-A'"),
        ("postgresql://u@h/d?schema=1st", "schema='1st'"),
        ("postgresql://u@h/d?pool=0", "pool='0'"),
        ("postgresql://u@h/d?nonsense=1&password=hush", "nonsense"),
    ]:
        with pytest.raises(ConfigError, match=named) as caught:
            parse_url(bad)
        assert "hush" not in caught.value.message and "\n" not in caught.value.message


def _open_in_child(url: str, barrier: object, results: object) -> None:
    barrier.wait()  # type: ignore[attr-defined]
    try:
        storage.open(url).close()
        results.put("ok")  # type: ignore[attr-defined]
    except Exception as exc:
        results.put(f"{type(exc).__name__}: {exc}")  # type: ignore[attr-defined]


def test_two_replicas_starting_at_once_migrate_exactly_once(postgres: Server) -> None:
    schema = fresh_schema()
    url = postgres.url(schema)
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(3), context.Queue()
    children = [
        context.Process(target=_open_in_child, args=(url, barrier, results)) for _ in range(3)
    ]
    for child in children:
        child.start()
    for child in children:
        child.join(timeout=120)
    assert sorted(results.get(timeout=5) for _ in children) == ["ok"] * 3
    with postgres.connect() as conn:
        versions = conn.execute(f"SELECT version FROM {schema}.schema_migrations").fetchall()
    from nexusbrain.storage.postgres.migrations import MIGRATIONS

    assert versions == [(version,) for version, _ in MIGRATIONS]  # each applied once
    assert versions[-1] == (SQLITE_LATEST,)


def _graph(postgres: Server, opened: list[Backend]) -> tuple[str, int]:
    """A schema with Ada (alias Ada L) works_at Acme (id 1), then Globex (retiring 1)."""
    from nexusbrain.clock import FrozenClock
    from nexusbrain.config import GraphConfig
    from nexusbrain.graph import Graph

    schema = fresh_schema()
    backend = open_url(opened, postgres.url(schema))
    graph = Graph(backend.graph, GraphConfig(), FrozenClock(NOW))
    graph.relate("Ada", "works_at", "Acme", valid_at=datetime(2020, 1, 1, tzinfo=UTC))
    moved = graph.relate("Ada", "works_at", "Globex", valid_at=datetime(2022, 1, 1, tzinfo=UTC))
    with backend.graph.session() as session:
        ada = session.find_entity("ada")
        assert ada is not None
        session.add_alias(ada.id, "ada l", "Ada L", NOW)
    return schema, moved.id or 0


VIOLATIONS = [
    ("delete a version", "DELETE FROM relationships WHERE id = 1"),
    ("truncate the versions", "TRUNCATE relationships CASCADE"),
    ("delete an entity", "DELETE FROM entities WHERE key = 'acme'"),
    ("delete an alias", "DELETE FROM entity_aliases"),
    (
        "a second current version of a triple",
        "INSERT INTO relationships (from_id, type, to_id, created_at)"
        " SELECT from_id, type, to_id, now() FROM relationships WHERE superseded_at IS NULL",
    ),
    ("edit a version's window", "UPDATE relationships SET valid_at = now() WHERE id = {current}"),
    (
        "retire without a reason",
        "UPDATE relationships SET superseded_at = now() WHERE id = {current}",
    ),
    ("retire twice", "UPDATE relationships SET reason = 'retracted' WHERE id = 1"),
    (
        "an unknown reason",
        "UPDATE relationships SET superseded_at = now(), reason = 'tired' WHERE id = {current}",
    ),
    (
        "a successor that does not meet its predecessor",
        "INSERT INTO relationships (from_id, type, to_id, created_at, supersedes)"
        " SELECT to_id, type, from_id, superseded_at + interval '1 microsecond', id"
        " FROM relationships WHERE id = 1",
    ),
    (
        "a successor of a current version",
        "INSERT INTO relationships (from_id, type, to_id, created_at, supersedes)"
        " SELECT to_id, 'knows', from_id, now(), id FROM relationships WHERE id = {current}",
    ),
    (
        "a second successor",
        "INSERT INTO relationships (from_id, type, to_id, created_at, supersedes)"
        " SELECT to_id, 'knows', from_id, superseded_at, id FROM relationships WHERE id = 1",
    ),
    (
        "a window that ends before it starts",
        "INSERT INTO relationships (from_id, type, to_id, valid_at, invalid_at, created_at)"
        " VALUES (1, 'x', 2, '2024-01-01', '2023-01-01', now())",
    ),
]


@pytest.mark.parametrize(("what", "statement"), VIOLATIONS, ids=[v[0] for v in VIOLATIONS])
def test_the_database_refuses_what_breaks_the_graph(
    postgres: Server, opened: list[Backend], what: str, statement: str
) -> None:
    schema, current = _graph(postgres, opened)
    with postgres.connect() as conn:
        conn.execute(f"SET search_path TO {schema}, public")
        with pytest.raises(psycopg.IntegrityError), conn.transaction():
            conn.execute(statement.format(current=current))
        database_checks(conn, schema)


def test_a_retirement_and_its_successor_at_the_same_instant_are_accepted(
    postgres: Server, opened: list[Backend]
) -> None:
    schema, current = _graph(postgres, opened)
    with postgres.connect() as conn, conn.transaction():
        conn.execute(f"SET LOCAL search_path TO {schema}, public")
        conn.execute(
            "UPDATE relationships SET superseded_at = %s, reason = 'window_changed' WHERE id = %s",
            (datetime(2027, 1, 1, tzinfo=UTC), current),
        )
        conn.execute(
            "INSERT INTO relationships (from_id, type, to_id, created_at, supersedes)"
            " SELECT from_id, type, to_id, superseded_at, id FROM relationships WHERE id = %s",
            (current,),
        )


def _segments(postgres: Server, schema: str) -> int:
    with postgres.connect() as conn:
        return int(conn.execute(f"SELECT count(*) FROM {schema}.postings").fetchone()[0])


def test_compaction_merges_segments_and_drops_removed_chunks(
    postgres: Server, opened: list[Backend]
) -> None:
    schema = fresh_schema()
    backend = open_url(opened, postgres.url(schema))
    backend.compactor.close()  # type: ignore[attr-defined]  # compacted by hand below
    ids = [
        write(backend, draft(f"{n}.md", text=f"common word{n}"), [chunk(f"common word{n}")])
        for n in range(40)
    ]
    backend.documents.retire_documents([r.document_id for r in ids[::3]], NOW)
    query = ["common", "word7", "word9"]
    before = backend.lexical.search(query, 50, SearchFilters()).scored
    segments = _segments(postgres, schema)
    done = backend.compactor.compact()  # type: ignore[attr-defined]
    assert done.merged >= 1 and done.written < done.read  # removed chunks' postings dropped
    assert _segments(postgres, schema) < segments
    again = storage.open(postgres.url(schema))  # a fresh process's view, after compaction
    opened.append(again)
    assert again.lexical.search(query, 50, SearchFilters()).scored == before
    assert backend.lexical.search(query, 50, SearchFilters()).scored == before
    with postgres.connect() as conn:
        database_checks(conn, schema)


def test_compaction_keeps_the_frequencies_of_wide_and_narrow_segments_alike(
    postgres: Server, opened: list[Backend]
) -> None:
    """A token whose segments mix int16 and int32 frequencies (one chunk holds it more than
    32,767 times) merges into one segment that scores as the separate ones did."""
    from nexusbrain.storage.postgres.compaction import FANOUT

    schema = fresh_schema()
    backend = open_url(opened, postgres.url(schema))
    backend.compactor.close()  # type: ignore[attr-defined]  # compacted by hand below
    texts = [f"echo note{n}" for n in range(FANOUT)]
    texts[3] = "echo " * 40_000 + "note3"
    for n, text in enumerate(texts):
        write(backend, draft(f"{n}.md", text=text), [chunk(text)])
    with postgres.connect() as conn:
        widths = conn.execute(
            f"SELECT wide FROM {schema}.postings WHERE term = 'echo' ORDER BY segment"
        ).fetchall()
    assert [w[0] for w in widths].count(True) == 1 and len(widths) == FANOUT
    before = backend.lexical.search(["echo"], 20, SearchFilters()).scored
    done = backend.compactor.compact()  # type: ignore[attr-defined]
    assert done.merged >= 1
    assert _segments_of(postgres, schema, "echo") == 1
    assert backend.lexical.search(["echo"], 20, SearchFilters()).scored == before
    again = open_url(opened, postgres.url(schema))  # a fresh process's view
    assert again.lexical.search(["echo"], 20, SearchFilters()).scored == before
    with postgres.connect() as conn:
        database_checks(conn, schema)


def test_a_replica_takes_compaction_up_where_the_brain_s_last_round_left_it(
    postgres: Server, opened: list[Backend]
) -> None:
    """A round records the segment it got to in the brain; a replica opened later starts its
    compactor there instead of scanning every token's segments again. A full tier behind that
    mark (as segments that committed behind a round leave one) waits for its token's next
    segment, as it does in a replica that has run all along."""
    from nexusbrain.storage.postgres.compaction import FANOUT

    schema = fresh_schema()
    backend = open_url(opened, postgres.url(schema))
    backend.compactor.close()  # type: ignore[attr-defined]  # compacted by hand below
    for n in range(FANOUT):
        write(backend, draft(f"{n}.md", text=f"echo note{n}"), [chunk(f"echo note{n}")])
    assert backend.compactor.compact().merged >= 1  # type: ignore[attr-defined]
    with postgres.connect() as conn:
        mark = conn.execute(
            f"SELECT value::bigint FROM {schema}.brain_settings"
            " WHERE key = 'postings_compacted_through'"
        ).fetchone()
        latest = conn.execute(f"SELECT last_value FROM {schema}.postings_segments").fetchone()
        assert mark is not None and latest is not None and mark[0] == latest[0]
        conn.execute(  # a full tier of "late" behind the mark: the notes' one-chunk segments
            f"INSERT INTO {schema}.postings (term, segment, n, pids, tfs, wide)"
            f" SELECT 'late', segment, n, pids, tfs, wide FROM {schema}.postings"
            " WHERE term LIKE 'note%%'"
        )
    assert _segments_of(postgres, schema, "late") == FANOUT
    again = open_url(opened, postgres.url(schema))  # another replica, opened after the round
    again.compactor.close()  # type: ignore[attr-defined]
    assert again.compactor.compact().merged == 0  # type: ignore[attr-defined]
    assert _segments_of(postgres, schema, "late") == FANOUT
    write(backend, draft("late.md", text="late"), [chunk("late")])
    assert again.compactor.compact().merged >= 1  # type: ignore[attr-defined]
    assert _segments_of(postgres, schema, "late") < FANOUT


def _segments_of(postgres: Server, schema: str, term: str) -> int:
    with postgres.connect() as conn:
        row = conn.execute(f"SELECT count(*) FROM {schema}.postings WHERE term = %s", (term,))
        return int(row.fetchone()[0])


def _fullest_tier(postgres: Server, schema: str, term: str) -> int:
    """The most segments of `term` in one tier (log base FANOUT of their posting count)."""
    from nexusbrain.storage.postgres.compaction import FANOUT, _tier

    with postgres.connect() as conn:
        row = conn.execute(
            f"SELECT coalesce(max(c), 0) FROM (SELECT count(*) AS c FROM {schema}.postings"
            f" WHERE term = %s GROUP BY {_tier('n')}) AS tiers",
            (term, FANOUT),
        )
        return int(row.fetchone()[0])


def _stream_writes(backend: Backend, start: int, seconds: float, least: int = 0) -> int:
    """Write one note holding "common" every 20 ms for `seconds`, and at least `least` notes
    (a loaded machine writes few in that time); returns the next number."""
    deadline = time.monotonic() + seconds
    first = start
    while time.monotonic() < deadline or start - first < least:
        write(backend, draft(f"s{start}.md", text=f"common s{start}"), [chunk(f"common s{start}")])
        start += 1
        time.sleep(0.02)
    return start


@pytest.mark.parametrize("longest_wait", [60.0, 0.3])
def test_compaction_yields_to_a_stream_of_writes_but_only_so_long(
    postgres: Server, opened: list[Backend], longest_wait: float
) -> None:
    from nexusbrain.storage.postgres.compaction import FANOUT, Compactor

    schema = fresh_schema()
    backend = open_url(opened, postgres.url(schema))
    backend.compactor.close()  # type: ignore[attr-defined]
    compactor = Compactor(backend.db, backend.lexical.live, 0.05, longest_wait)  # type: ignore[attr-defined]
    compactor.start()
    try:
        n = _stream_writes(backend, 0, 1.5, least=4 * FANOUT)
        during = _segments_of(postgres, schema, "common")
        if longest_wait > 1.5:
            assert during == n  # one segment a write: nothing merged while writes streamed
        else:
            assert during < n - FANOUT  # merged at least once while writes streamed
        deadline = time.monotonic() + 20
        # compacted is no tier full, not few segments: 63 postings merge to 7 of 8 and 7 of 1
        while _fullest_tier(postgres, schema, "common") >= FANOUT:
            assert time.monotonic() < deadline, "no compaction once the writes stopped"
            time.sleep(0.05)
    finally:
        compactor.close()
    assert backend.lexical.search(["common"], 200, SearchFilters()).scored
    with postgres.connect() as conn:
        database_checks(conn, schema)


def test_an_id_used_again_by_import_never_gets_the_old_chunk_s_postings(
    postgres: Server, opened: list[Backend]
) -> None:
    schema = fresh_schema()
    backend = open_url(opened, postgres.url(schema))
    gone = write(backend, draft("gone.md", text="apple"), [chunk("apple")])
    (old,) = backend.documents.chunks_of(gone.document_id)
    backend.documents.retire_documents([gone.document_id], NOW)
    source = open_url(opened, postgres.url())
    kept = write(source, draft("kept.md", text="banana"), [chunk("banana")])
    records = list(source.documents.export_records())
    for record in records:  # the imported document and chunk take ids this brain used
        if record["type"] == "document":
            record["id"] = 77
        elif record["type"] in ("chunk", "revision"):
            record["document_id"] = 77
            if record["type"] == "chunk":
                record["id"] = old.id
    assert kept.document_id != 77
    backend.documents.import_records(records)
    assert backend.lexical.search(["apple"], 5, SearchFilters()).scored == []
    assert [s.chunk_id for s in backend.lexical.search(["banana"], 5, SearchFilters()).scored] == [
        old.id
    ]
    fresh = open_url(opened, postgres.url(schema))
    assert fresh.lexical.search(["apple"], 5, SearchFilters()).scored == []
    with postgres.connect() as conn:
        database_checks(conn, schema)


def test_a_write_through_one_backend_is_seen_by_the_next_search_of_another(
    postgres: Server, opened: list[Backend]
) -> None:
    from nexusbrain.records import VectorBatch
    from nexusbrain.retrieval.vectors import to_blob

    url = postgres.url()
    one, two = open_url(opened, url), open_url(opened, url)
    index = two.dense_index("m", 2, centre=False)
    import numpy as np

    first = write(
        one,
        draft("a.md", text="alpha"),
        [chunk("alpha", text_hash="ha")],
        VectorBatch("m", 2, {"ha": to_blob(np.array([1.0, 0.0], np.float32))}),
    )
    assert len(two.lexical.search(["alpha"], 5, SearchFilters()).scored) == 1
    query = index.centre(np.array([1.0, 0.0], np.float32))
    assert [s.chunk_id for s in index.search(query, 5)] == [
        c.id for c in one.documents.chunks_of(first.document_id)
    ]
    one.documents.retire_documents([first.document_id], NOW)
    assert two.lexical.search(["alpha"], 5, SearchFilters()).scored == []
    assert index.search(index.centre(np.array([1.0, 0.0], np.float32)), 5) == []


def test_a_batch_does_its_lock_free_work_before_it_waits_for_the_write_lock(
    postgres: Server, opened: list[Backend]
) -> None:
    """Its vectors are stored, and its postings inserted, before it takes the brain's write
    lock: while it waits for the lock, its transaction has written to postings and to no
    other table; a write that times out leaves its vectors (kept for the retry, as vectors are
    never removed) and nothing else; the retry writes it whole."""
    import threading

    from nexusbrain.config import StorageConfig
    from nexusbrain.errors import Busy
    from nexusbrain.records import VectorBatch

    schema = fresh_schema()
    backend = storage.open(postgres.url(schema), config=StorageConfig(busy_timeout_ms=3_000))
    opened.append(backend)
    vectors = VectorBatch("m", 2, {"h-1": bytes(8), "h-2": bytes(8)})
    items = [
        (draft("a.md", text="lockfree alpha"), [chunk("lockfree alpha", text_hash="h-1")]),
        (draft("b.md", text="lockfree beta"), [chunk("lockfree beta", text_hash="h-2")]),
    ]
    key = f"nexusbrain:{schema}:write"
    failed: list[BaseException] = []

    def write() -> None:
        try:
            backend.documents.write_documents(items, NOW, vectors)
        except BaseException as exc:
            failed.append(exc)

    with postgres.connect() as holder:
        holder.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))
        writer = threading.Thread(target=write)
        writer.start()
        waiting: list[tuple[str, ...]] = []
        deadline = time.monotonic() + 2.5
        while not waiting and time.monotonic() < deadline:
            waiting = holder.execute(
                "SELECT w.pid FROM pg_locks w WHERE w.locktype = 'advisory' AND NOT w.granted"
            ).fetchall()
            time.sleep(0.01)
        assert waiting, "the write never waited for the lock"
        written = {  # the tables its transaction has written to (the pid of the waiter)
            str(r[0])
            for r in holder.execute(
                "SELECT c.relname FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
                " WHERE l.pid = %s AND l.mode = 'RowExclusiveLock' AND c.relkind = 'r'",
                (waiting[0][0],),
            ).fetchall()
        }
        assert written == {"postings"}
        writer.join(timeout=10)
        holder.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))
    assert len(failed) == 1 and isinstance(failed[0], Busy)
    with postgres.connect() as conn:
        counts = [
            int(conn.execute(f"SELECT count(*) FROM {schema}.{table}").fetchone()[0])
            for table in ("vectors", "chunks", "postings", "documents")
        ]
    assert counts == [2, 0, 0, 0]
    results = backend.documents.write_documents(items, NOW, vectors)
    assert [r.chunks for r in results] == [1, 1]
    found = backend.lexical.search(["lockfree"], 10, SearchFilters()).scored
    assert len(found) == 2
    with postgres.connect() as conn:
        database_checks(conn, schema)


def test_postings_stored_before_the_lock_are_taken_back_when_the_plan_changes_under_it(
    postgres: Server, opened: list[Backend]
) -> None:
    """Two writers of the same documents both store their postings while a third holds the
    lock; the second to take it finds them written, so its postings go: none is left twice."""
    import threading

    from nexusbrain.records import WriteStatus

    schema = fresh_schema()
    backend = open_url(opened, postgres.url(schema))
    items = [
        (draft("a.md", text="twice alpha"), [chunk("twice alpha")]),
        (draft("b.md", text="twice beta"), [chunk("twice beta")]),
    ]
    key = f"nexusbrain:{schema}:write"
    statuses: list[list[WriteStatus]] = []

    def write() -> None:
        statuses.append([r.status for r in backend.documents.write_documents(items, NOW)])

    with postgres.connect() as holder:
        holder.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))
        writers = [threading.Thread(target=write) for _ in range(2)]
        for writer in writers:
            writer.start()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            row = holder.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            ).fetchone()
            if row is not None and row[0] == 2:
                break
            time.sleep(0.01)
        holder.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))
        for writer in writers:
            writer.join(timeout=10)
    created, again = WriteStatus.CREATED, WriteStatus.DUPLICATE
    assert sorted(statuses) == sorted([[created, created], [again, again]])
    with postgres.connect() as conn:
        row = conn.execute(
            f"SELECT count(DISTINCT segment), count(*), count(DISTINCT term),"
            f" bool_or(term = 'twice') FROM {schema}.postings"
        ).fetchone()
        assert row == (1, row[2], row[2], True)
        database_checks(conn, schema)
