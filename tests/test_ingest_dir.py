"""ingest-dir: incremental, exact spans, deletions, and clear errors for bad files."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from nexusbrain.brain import Brain
from nexusbrain.clock import FrozenClock
from nexusbrain.config import Limits, Profile, Settings


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def fingerprint(db: Path) -> tuple[str, ...]:
    """The bytes of the database and its WAL: any committed write changes them."""
    parts = []
    for suffix in ("", "-wal"):
        file = Path(f"{db}{suffix}")
        parts.append(hashlib.sha256(file.read_bytes()).hexdigest() if file.exists() else "-")
    return tuple(parts)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write(
        root / "deploy.md",
        "# Deploy\n\nThe deploy failed: the API key expired.\n\n## Fix\n\n"
        "Rotate the key.\n\n```sh\nvault rotate\n\n# not a heading\n```\n",
    )
    write(root / "sub" / "groceries.txt", "milk, eggs, bread\n")
    write(root / "sub" / "ideas.markdown", "---\ntitle: Ideas\ntags: [x]\n---\nA flying car.\n")
    write(root / ".obsidian" / "hidden.md", "hidden config text")
    write(root / "image.png", b"\x89PNG")
    return root


def test_first_ingest_adds_every_markdown_file(brain: Brain, vault: Path) -> None:
    report = brain.ingest_dir(vault)
    assert (report.added, report.updated, report.unchanged, report.deleted) == (3, 0, 0, 0)
    assert report.errors == ()
    ideas = brain.find_document((vault / "sub" / "ideas.markdown").as_posix())
    assert ideas.title == "Ideas"
    assert ideas.metadata["front_matter"] == {"title": "Ideas", "tags": ["x"]}
    assert [c.text for c in brain.document_chunks(ideas.id)] == ["A flying car."]
    assert all(".obsidian" not in h.uri for h in brain.search("hidden config"))


def test_second_ingest_of_unchanged_files_makes_no_writes(brain: Brain, vault: Path) -> None:
    brain.ingest_dir(vault)
    before = fingerprint(brain.settings.db)
    report = brain.ingest_dir(vault)
    assert (report.added, report.updated, report.unchanged, report.chunks) == (0, 0, 3, 0)
    assert fingerprint(brain.settings.db) == before


def test_changed_file_is_rechunked_and_deleted_file_retired(
    brain: Brain, vault: Path, clock: FrozenClock
) -> None:
    brain.ingest_dir(vault)
    clock.advance(hours=1)
    write(vault / "deploy.md", "# Deploy\n\nThe deploy now succeeds.\n")
    (vault / "sub" / "groceries.txt").unlink()
    report = brain.ingest_dir(vault)
    assert (report.added, report.updated, report.unchanged, report.deleted) == (0, 1, 1, 1)
    assert all("groceries" not in h.uri for h in brain.search("milk eggs"))
    assert all("expired" not in h.text for h in brain.search("expired"))
    hit = brain.search("succeeds")[0]
    assert hit.text == "# Deploy\n\nThe deploy now succeeds."
    events = [h["event"] for h in brain.document_history(hit.document_id)]
    assert events == ["created", "updated"]


def test_every_chunk_span_slices_back_to_its_text(brain: Brain, vault: Path) -> None:
    brain.ingest_dir(vault)
    deploy = brain.find_document((vault / "deploy.md").as_posix())
    chunks = brain.document_chunks(deploy.id)
    assert len(chunks) == 2
    lines = deploy.content.split("\n")
    for chunk in chunks:
        assert deploy.content[chunk.char_start : chunk.char_end] == chunk.text
        assert deploy.content.count("\n", 0, chunk.char_start) + 1 == chunk.line_start
        assert "\n".join(lines[chunk.line_start - 1 : chunk.line_end]) == chunk.text
    assert chunks[1].heading_path == ("Deploy", "Fix")
    assert "# not a heading" in chunks[1].text  # the code fence stayed whole


def test_bad_files_are_named_with_their_reason_and_the_rest_ingests(
    vault: Path, tmp_path: Path
) -> None:
    write(vault / "latin1.md", "caf\xe9".encode("latin-1"))
    write(vault / "empty.md", "  \n\n")
    outside = write(tmp_path / "outside.md", "secret outside the root")
    os.symlink(outside, vault / "link-out.md")
    os.symlink(vault, vault / "sub" / "loop")
    limits = Limits(max_document_bytes=200)
    settings = Settings(db=tmp_path / "brain.db", limits=limits, embedder=Profile.HASHING)
    write(vault / "big.md", "word " * 100)
    with Brain.open(settings=settings) as brain:
        report = brain.ingest_dir(vault)
        leaked = [h for h in brain.search("secret outside") if "secret" in h.text]
    reasons = {Path(p.path).name: p.reason for p in report.errors}
    assert "not valid UTF-8" in reasons["latin1.md"]
    assert "empty" in reasons["empty.md"]
    assert "outside the root" in reasons["link-out.md"]
    assert "loop" in reasons["loop"]
    assert "over the limit of 200 bytes" in reasons["big.md"]
    assert report.added == 3
    assert leaked == []


def test_links_inside_the_root_are_followed_once(brain: Brain, vault: Path) -> None:
    write(vault / "deep" / "er" / "note.md", "# Note\n\nA note two folders down.")
    os.symlink(vault / "deep", vault / "sub" / "shortcut")
    os.symlink(vault / "deep" / "er" / "note.md", vault / "alias.md")
    os.symlink(vault / "deep", vault / "deep" / "er" / "up")  # a loop, met through the link too
    report = brain.ingest_dir(vault)
    stored = [
        r["uri"] for r in brain.admin.export() if r["type"] == "document" and not r["deleted_at"]
    ]
    uris = {Path(d).relative_to(vault).as_posix() for d in stored}
    assert {"deep/er/note.md", "sub/shortcut/er/note.md", "alias.md"} <= uris
    assert not any("/up/" in uri for uri in uris)
    loops = sorted(Path(p.path).relative_to(vault).as_posix() for p in report.errors)
    assert loops == ["deep/er/up", "sub/shortcut/er/up"]
    assert all("symlink loop" in p.reason for p in report.errors)


def test_a_file_that_turns_bad_keeps_its_last_good_version(brain: Brain, vault: Path) -> None:
    brain.ingest_dir(vault)
    write(vault / "deploy.md", b"\xff\xfe broken")
    report = brain.ingest_dir(vault)
    assert [Path(p.path).name for p in report.errors] == ["deploy.md"]
    assert report.deleted == 0
    assert brain.search("expired")


def test_missing_folder_is_a_clear_error(brain: Brain, tmp_path: Path) -> None:
    from nexusbrain.errors import NotFound

    with pytest.raises(NotFound, match="no such folder"):
        brain.ingest_dir(tmp_path / "nope")


def test_a_recursive_yaml_alias_is_one_file_s_error(brain: Brain, vault: Path) -> None:
    write(vault / "loop.md", "---\na: &a [*a]\n---\n# Loop\n\ntext")
    write(vault / "bomb.md", "---\na: &a [x, x]\nb: [*a, *a]\n---\n# Bomb\n\ntext")
    report = brain.ingest_dir(vault)
    reasons = {Path(p.path).name: p.reason for p in report.errors}
    assert set(reasons) == {"loop.md", "bomb.md"}
    assert all("alias" in reason for reason in reasons.values())
    assert report.added == 3


def test_a_file_name_that_is_not_utf8_is_one_file_s_error(brain: Brain, vault: Path) -> None:
    folder = os.fsencode(vault)
    with open(os.path.join(folder, b"caf\xe9.md"), "wb") as file:
        file.write(b"# Cafe\n\nlatin-1 name")
    os.mkdir(os.path.join(folder, b"dir\xff"))
    with open(os.path.join(folder, b"dir\xff", b"inside.md"), "wb") as file:
        file.write(b"# Inside\n\ntext")
    report = brain.ingest_dir(vault)
    shown = sorted(Path(p.path).name for p in report.errors)
    assert shown == ["caf\\xe9.md", "dir\\xff"]
    assert all("not valid UTF-8" in p.reason and "rename" in p.reason for p in report.errors)
    assert all(p.path.encode("utf-8") for p in report.errors)  # printable as it is
    assert report.added == 3


def test_ingest_dir_lists_bad_names_and_aliases_and_ingests_the_rest(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from nexusbrain.cli.main import cli

    notes = tmp_path / "notes"
    write(notes / "good.md", "# Good\n\nthe okapi grazes")
    write(notes / "loop.md", "---\na: &a [*a]\n---\n# Loop\n\ntext")
    with open(os.path.join(os.fsencode(notes), b"caf\xe9.md"), "wb") as file:
        file.write(b"# Cafe\n\ntext")
    db = ["--db", str(tmp_path / "cli.db")]
    result = CliRunner().invoke(cli, [*db, "ingest-dir", str(notes), "--json"])
    assert result.exit_code == 0, result.output  # what could be ingested was: not a failure
    report = json.loads(result.output)
    assert report["added"] == 1
    reasons = {Path(e["path"]).name: e["reason"] for e in report["errors"]}
    assert "alias" in reasons["loop.md"] and "not valid UTF-8" in reasons["caf\\xe9.md"]
    found = CliRunner().invoke(cli, [*db, "search", "okapi", "--json"])
    assert json.loads(found.output)["hits"][0]["uri"].endswith("good.md")
