"""What must hold of a brain's file after any crash: the file checks (SQLite's and FTS5's
integrity, every chunk indexed and with its vector or found by the next embedding pass) and
the logical ones (every live note's current edges are exactly what its current revision
states; no current edge belongs to a retired note)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from nexusbrain.brain import Brain
from nexusbrain.config import ChunkingConfig, Profile, Settings
from nexusbrain.graph.names import entity_key, relationship_type
from nexusbrain.graph.notes import note_edges
from nexusbrain.ingest.documents import prepare_markdown

Triple = tuple[str, str, str]


def file_checks(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')")
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        indexed = conn.execute("SELECT count(*) FROM chunks_fts_docsize").fetchone()[0]
        assert chunks == indexed, (chunks, indexed)
        orphans = conn.execute(
            "SELECT count(*) FROM chunks c LEFT JOIN documents d ON d.id = c.document_id"
            " WHERE d.id IS NULL OR d.deleted_at IS NOT NULL"
        ).fetchone()[0]
        assert orphans == 0
    finally:
        conn.close()


def open_brain(db: Path) -> Brain:
    return Brain.open(settings=Settings(db=db, embedder=Profile.HASHING))


def vectors_complete(brain: Brain) -> None:
    """Every chunk has its vector, or the next embedding pass finds it."""
    brain.admin.embed_missing()
    assert brain.admin.embed_missing() == 0


def note_triples(note: Any) -> set[Triple]:
    """The edges a markdown note's revision states (a document row or export record)."""
    prepared = prepare_markdown(
        note["content"],
        uri=note["uri"],
        domain=note["domain"],
        config=ChunkingConfig(),
        title=note["title"],
        revision=note["revision"],
    )
    edges = note_edges(
        prepared.draft.title, prepared.front_matter or {}, note["content"], "links_to"
    )
    return {
        (entity_key(e.from_name), relationship_type(e.type), entity_key(e.to_name)) for e in edges
    }


def stated_edges(db: Path) -> tuple[dict[int, set[Triple]], dict[int, set[Triple]], set[int]]:
    """(what each live note states, what the graph holds as current for it, retired ids)."""
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        stated: dict[int, set[Triple]] = {}
        for row in conn.execute(
            "SELECT id, uri, title, domain, revision, content FROM documents"
            " WHERE deleted_at IS NULL AND kind = 'markdown'"
        ):
            stated[row["id"]] = note_triples(row)
        held: dict[int, set[Triple]] = {}
        for row in conn.execute(
            "SELECT r.source, f.key AS f, r.type, t.key AS t FROM relationships r"
            " JOIN entities f ON f.id = r.from_id JOIN entities t ON t.id = r.to_id"
            " WHERE r.superseded_at IS NULL AND r.source LIKE 'document:%'"
        ):
            owner = int(row["source"].split(":", 1)[1])
            held.setdefault(owner, set()).add((row["f"], row["type"], row["t"]))
        retired = {
            r[0] for r in conn.execute("SELECT id FROM documents WHERE deleted_at IS NOT NULL")
        }
        return stated, held, retired
    finally:
        conn.close()


def logical_checks(db: Path) -> None:
    """Every edge a live note states is current, held by that note or by another live note
    that states it too (the lowest id: graph/service.py); every current edge a note holds, it
    states; no retired note holds one."""
    stated, held, retired = stated_edges(db)
    for document, triples in held.items():
        assert triples <= stated.get(document, set()), document
    current = {triple: owner for owner, triples in held.items() for triple in triples}
    for document, triples in stated.items():
        for triple in triples:
            assert triple in current, (document, triple)
            assert triple in stated.get(current[triple], set()), (document, triple)
    assert not set(held) & retired


def matches_folder(db: Path, folder: Path) -> None:
    """The brain holds exactly the folder's files, at their current content."""
    with open_brain(db) as brain:
        live = {
            r["uri"]: r["revision"]
            for r in brain.admin.export()
            if r["type"] == "document" and not r["deleted_at"]
        }
    from nexusbrain.ingest.documents import content_hash

    files = {p.resolve().as_posix(): content_hash(p.read_bytes()) for p in folder.glob("*.md")}
    assert live == files
