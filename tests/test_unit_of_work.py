"""A note and its graph edges are one transaction: a process killed between writing the one and
the other leaves neither, and a re-run converges. The kill is real (SIGKILL in a child
process, inside the unit of work); nothing is mocked in the brain under test."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from nexusbrain import storage
from nexusbrain.brain import Brain
from nexusbrain.config import ChunkingConfig, Profile, Settings
from nexusbrain.graph.model import AsOf
from nexusbrain.ingest.documents import content_hash, prepare_markdown

NOW = datetime(2026, 1, 1, tzinfo=UTC)

# Run in a child: replace one of the graph functions Brain calls inside its unit of work with a
# SIGKILL of the process, then ingest the folder. Brain imports them where it uses them (a
# search loads no graph), so they are replaced in the module they come from.
CHILD = """
import os, signal, sys
import nexusbrain.graph.service as core
from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

setattr(core, sys.argv[2], die)
with Brain.open(settings=Settings(db=sys.argv[1], embedder=Profile.HASHING)) as brain:
    brain.ingest_dir(sys.argv[3])
"""


def killed_in(hook: str, db: Path, vault: Path) -> int:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(db), hook, str(vault)], capture_output=True, timeout=60
    )
    return done.returncode


def open_brain(db: Path) -> Brain:
    return Brain.open(settings=Settings(db=db, embedder=Profile.HASHING))


def links(brain: Brain) -> set[str]:
    try:
        found = brain.graph.relations("Alice", as_of=AsOf())
    except Exception:
        return set()
    return {r.to_name for r in found}


def test_a_kill_between_a_note_and_its_edges_leaves_neither(tmp_path: Path) -> None:
    db, vault = tmp_path / "brain.db", tmp_path / "vault"
    vault.mkdir()
    note = vault / "alice.md"
    note.write_text("# Alice\n\nAlice works with [[Bob]] and [[Carol]].\n", encoding="utf-8")
    assert killed_in("sync_note", db, vault) == -9
    with open_brain(db) as brain:
        assert brain.stats().store.documents == 0  # the note's write was rolled back
        assert links(brain) == set()
        brain.ingest_dir(vault)  # the re-run writes both
        assert brain.stats().store.documents == 1
        assert links(brain) == {"Bob", "Carol"}
    note.unlink()
    assert killed_in("retract_notes", db, vault) == -9
    with open_brain(db) as brain:
        assert brain.stats().store.documents == 1  # not retired: the retirement rolled back
        assert links(brain) == {"Bob", "Carol"}
        report = brain.ingest_dir(vault)
        assert report.deleted == 1 and brain.stats().store.documents == 0
        assert links(brain) == set()


def test_a_note_whose_edges_lag_is_repaired_by_the_next_run(tmp_path: Path) -> None:
    """A database written before edges were kept with their note may hold a note without
    its edges (the crash this prevents): ingest-dir brings them in line, though the file is
    unchanged."""
    db, vault = tmp_path / "brain.db", tmp_path / "vault"
    vault.mkdir()
    note = vault / "alice.md"
    note.write_bytes(b"# Alice\n\nAlice knows [[Bob]].\n")
    revision = content_hash(note.read_bytes())
    prepared = prepare_markdown(
        note.read_text(),
        uri=note.resolve().as_posix(),
        domain="default",
        config=ChunkingConfig(),
        revision=revision,
    )
    backend = storage.open(db)  # the note alone, as a crash after its commit left it
    backend.documents.write_documents([(prepared.draft, prepared.chunks)], NOW)
    backend.close()
    with open_brain(db) as brain:
        assert links(brain) == set()
        report = brain.ingest_dir(vault)
        assert (report.unchanged, report.updated, report.added) == (1, 0, 0)
        assert links(brain) == {"Bob"}
        again = brain.ingest_dir(vault)  # nothing left to repair: nothing written
        assert again.unchanged == 1 and links(brain) == {"Bob"}
