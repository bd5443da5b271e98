"""What must hold of a PostgreSQL brain after anything (a killed replica, a restarted server):
the graph's invariants, postings that agree with the chunks, a change head that agrees with
the chunk table, every chunk with its vector or found by the next embedding pass, and, where
an HNSW index is built, every vector of its model in it. Read in one snapshot, straight from
the tables."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from nexusbrain.storage.postgres.postings import chunk_terms, unpacked


def database_checks(conn: Any, schema: str) -> None:
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    try:
        conn.execute(f'SET LOCAL search_path TO "{schema}", public')
        graph_checks(conn)
        postings_checks(conn)
        head_checks(conn)
        dense_checks(conn)
    finally:
        conn.execute("ROLLBACK")


def graph_checks(conn: Any) -> None:
    doubled = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM relationships WHERE superseded_at IS NULL"
        " GROUP BY from_id, type, to_id HAVING count(*) > 1) AS t"
    ).fetchone()[0]
    assert doubled == 0, "a triple with two current versions"
    gaps = conn.execute(
        "SELECT count(*) FROM relationships n JOIN relationships o ON o.id = n.supersedes"
        " WHERE o.superseded_at IS DISTINCT FROM n.created_at"
    ).fetchone()[0]
    assert gaps == 0, "a successor that does not start when its predecessor ended"
    unexplained = conn.execute(
        "SELECT count(*) FROM relationships WHERE (superseded_at IS NULL) != (reason IS NULL)"
    ).fetchone()[0]
    assert unexplained == 0


def postings_checks(conn: Any) -> None:
    """Every live chunk's postings are exactly its analyzed tokens, and no live posting
    belongs to a chunk that is gone."""
    chunks = conn.execute("SELECT pid, text, heading, context, length FROM chunks").fetchall()
    expected: dict[str, dict[int, tuple[int, ...]]] = defaultdict(dict)
    for pid, text, heading, context, length in chunks:
        size, counts = chunk_terms(text, heading, context)
        assert size == length, (pid, size, length)
        for token, frequencies in counts.items():
            expected[token][pid] = tuple(frequencies)
    live = {row[0] for row in chunks}
    found: dict[str, dict[int, tuple[int, ...]]] = defaultdict(dict)
    rows = conn.execute("SELECT term, pids, tfs, wide FROM postings", binary=True).fetchall()
    for term, pids_blob, tfs_blob, wide in rows:
        pids, tf = unpacked([(pids_blob, tfs_blob, wide)])
        for pid, frequencies in zip(pids.tolist(), tf.tolist(), strict=True):
            if pid in live:
                assert pid not in found[term], (term, pid)  # one posting per chunk and token
                found[term][pid] = tuple(frequencies)
    assert dict(found) == dict(expected)


def head_checks(conn: Any) -> None:
    head = conn.execute("SELECT seq, chunks, tokens FROM change_head").fetchone()
    counted = conn.execute("SELECT count(*), coalesce(sum(length), 0) FROM chunks").fetchone()
    assert (head[1], head[2]) == (counted[0], counted[1])
    last = conn.execute("SELECT coalesce(max(seq), 0), count(*) FROM chunk_changes").fetchone()
    assert last[0] == head[0] == last[1], "change seqs are 1..head, without gaps"
    state: dict[int, bool] = {}
    for chunk_id, added in conn.execute(
        "SELECT chunk_id, added FROM chunk_changes ORDER BY seq"
    ).fetchall():
        state[chunk_id] = added
    logged = {c for c, alive in state.items() if alive}
    present = {row[0] for row in conn.execute("SELECT id FROM chunks").fetchall()}
    assert logged == present, "the change log's live chunks are the chunk table's"


def dense_checks(conn: Any) -> None:
    """Once a model has a frozen centre (an HNSW index), each of its vectors has its centred
    form, the one the index holds, around that centre."""
    if not conn.execute("SELECT to_regclass('dense_centres') IS NOT NULL").fetchone()[0]:
        return
    uncentred = conn.execute(
        "SELECT count(*) FROM vectors v JOIN dense_centres d ON d.model = v.model"
        " WHERE v.centred IS NULL"
    ).fetchone()[0]
    assert uncentred == 0, "a vector stored after the build without its centred form"
