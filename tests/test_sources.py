"""Sources: named folders kept in sync. Added, listed, synced and removed through the brain on
both backends and through real `nexusbrain` processes; a removed source leaves nothing in
search, `ls` or `stats` while its history stays readable; `serve` follows every source,
including one added while it runs, and `serve --watch DIR` makes the folder one."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nexusbrain.brain import Brain
from nexusbrain.clock import FrozenClock
from nexusbrain.config import Profile, Settings
from nexusbrain.errors import Conflict, InvalidInput, NotFound
from nexusbrain.ingest.files import chosen

from .test_cli_client import cli_process, start, stop
from .test_formats_ingest import KINDS, OKAPI, QUOKKA
from .test_ingest_dir import write
from .test_watch import eventually


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    for name, contents, _, _ in KINDS:
        write(root / name, contents)
    write(root / "drafts" / "plan.md", "# Plan\n\nThe pangolin draft is not ready.\n")
    write(root / "broken.txt", b"\x89PNG\r\n\x1a\n\x00\x00")
    return root


def opened(request: pytest.FixtureRequest, tmp_path: Path, backend: str) -> Brain:
    db = request.getfixturevalue("postgres_url") if backend == "postgres" else tmp_path / "b.db"
    clock = FrozenClock(datetime(2026, 1, 2, tzinfo=UTC))
    return Brain.open(settings=Settings(db=db, embedder=Profile.HASHING), clock=clock)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_source_is_added_listed_synced_and_removed_on_either_backend(
    request: pytest.FixtureRequest, tmp_path: Path, folder: Path, backend: str
) -> None:
    with opened(request, tmp_path, backend) as brain:
        brain.ingest_markdown("# Elsewhere\n\nThe okapi lives elsewhere too.", uri="other/x.md")
        status, report = brain.sources.add(folder, exclude=("drafts/*",), domain="work")
        assert (report.added, [Path(p.path).name for p in report.errors]) == (
            len(KINDS),
            ["broken.txt"],
        )
        assert (status.source.name, status.source.root) == ("docs", folder.resolve().as_posix())
        assert (status.files, status.source.domain) == (len(KINDS), "work")
        assert status.chunks == sum(
            len(brain.document_chunks(d.id)) for d in brain.list_documents(f"{folder}/")[1]
        )
        assert not brain.search("pangolin draft")  # excluded
        [listed] = brain.sources.all()
        assert listed == status and listed.source.synced_at is not None
        assert listed.source.problems[0][1].endswith("NUL bytes, so it is a binary file, not text")

        (folder / "notes.md").unlink()
        write(folder / "extra.txt", "The capybara ledger balances.")
        [(after, again)] = brain.sources.update()
        assert (again.added, again.deleted, after.files) == (1, 1, len(KINDS))

        pdf = brain.search(QUOKKA, k=1)[0]
        source, retired = brain.sources.remove("docs")
        assert (source.name, retired) == ("docs", len(KINDS))
        assert brain.sources.all() == []
        under = f"{folder.resolve().as_posix()}/"
        for *_, sentence in KINDS:
            assert not [h.uri for h in brain.search(sentence, k=20) if h.uri.startswith(under)]
        assert brain.search(OKAPI, k=1)[0].uri == "other/x.md"
        assert brain.list_documents(f"{folder}/") == (0, [])
        stats = brain.stats().store
        assert (stats.documents, stats.chunks) == (1, len(brain.document_chunks(1)))
        history = [r["event"] for r in brain.document_history(pdf.document_id)]
        assert history == ["created", "retired"]
        assert brain.get_document(pdf.document_id).deleted_at is not None
        with pytest.raises(NotFound, match="no source named 'docs'"):
            brain.sources.update("docs")


def test_sources_may_not_share_a_name_or_nest(brain: Brain, folder: Path) -> None:
    brain.sources.add(folder, name="docs")
    (folder.parent / "elsewhere").mkdir()
    with pytest.raises(Conflict, match="has that name or folder already"):
        brain.sources.add(folder.parent / "elsewhere", name="docs")
    with pytest.raises(Conflict, match="has that name or folder already"):
        brain.sources.add(folder, name="again")
    with pytest.raises(Conflict, match=r"nest: a file may belong to one source only"):
        brain.sources.add(folder / "drafts")
    with pytest.raises(Conflict, match=r"nest"):
        brain.sources.add(folder.parent, name="outer")
    with pytest.raises(InvalidInput, match="source name 'a/b'"):
        brain.sources.add(folder.parent / "elsewhere", name="a/b")
    with pytest.raises(NotFound, match="no such folder"):
        brain.sources.add(folder / "missing")
    assert [s.source.name for s in brain.sources.all()] == ["docs"]


def test_globs_match_a_name_at_any_depth_or_a_path_from_the_root() -> None:
    assert chosen("a/b/c.md", include=("*.md",))
    assert not chosen("a/b/c.txt", include=("*.md",))
    assert not chosen("drafts/x/y.md", exclude=("drafts/*",))
    assert chosen("notes/drafts.md", exclude=("drafts/*",))
    assert chosen("docs/guide.rst", include=("docs/*", "*.md"), exclude=("*.pdf",))
    assert not chosen("docs/guide.pdf", include=("docs/*",), exclude=("*.pdf",))


def test_the_commands_answer_with_json_and_text(tmp_path: Path, folder: Path) -> None:
    db = tmp_path / "cli.db"

    def run(*args: str) -> str:
        done = cli_process(*args, db=db, BRAIN_EMBEDDER="hashing")
        assert done.code == 0, done.stderr
        return done.stdout.decode()

    added = json.loads(
        run("sources", "add", str(folder), "--name", "d", "--include", "*.md", "--json")
    )
    assert (added["source"]["files"], added["sync"]["added"]) == (2, 2)  # notes.md, plan.md
    text = run("sources", "list").splitlines()
    assert text[0].split() == ["name", "files", "chunks", "last", "sync", "(UTC)", "errors", "root"]
    assert text[1].split()[:3] == ["d", "2", str(added["source"]["chunks"])]
    assert text[1].endswith(f"{folder.resolve()}  (+*.md)")
    listed = json.loads(run("sources", "list", "--json"))["sources"]
    assert listed == [added["source"]]
    assert json.loads(run("sources", "show", "d", "--json")) == added["source"]
    shown = run("sources", "show", "d").splitlines()
    chunks = added["source"]["chunks"]
    assert shown[:2] == [f"d ({folder.resolve()})  (+*.md)", f"  2 files, {chunks} chunks"]
    assert shown[3:] == ["  0 files not read"]
    assert json.loads(run("sources", "update", "--json"))["synced"][0]["sync"]["unchanged"] == 2
    assert run("sources", "update", "d").startswith(
        f"d ({folder.resolve()}): 0 added, 0 updated, 2 unchanged, 0 deleted, now 2 files and"
    )
    assert json.loads(run("sources", "remove", "d", "--json")) == {
        "name": "d",
        "root": folder.resolve().as_posix(),
        "retired": 2,
    }
    assert run("sources", "list") == "no sources: add one with `nexusbrain sources add FOLDER`\n"
    assert json.loads(run("ls", "--json"))["total"] == 0
    missing = cli_process("sources", "remove", "d", db=db)
    assert missing.code != 0 and "no source named 'd'" in missing.stderr
    unknown = cli_process("sources", "show", "d", db=db)
    assert unknown.code != 0 and "no source named 'd'" in unknown.stderr


def test_serve_follows_every_source_and_one_added_while_it_runs(
    tmp_path: Path, folder: Path
) -> None:
    db = tmp_path / "served.db"
    watched = tmp_path / "watched"
    write(watched / "first.md", "# First\n\nThe ibis signal is green.\n")
    process = start(db, "--watch", str(watched))

    def found(words: str) -> set[str]:
        done = cli_process("search", words, "--json", db=db)
        assert done.code == 0, done.stderr
        return {Path(hit["uri"]).name for hit in json.loads(done.stdout)["hits"]}

    try:
        eventually(lambda: "first.md" in found("ibis signal"), "the --watch folder's first sync")
        sources = json.loads(cli_process("sources", "list", "--json", db=db).stdout)["sources"]
        assert [(s["name"], s["root"]) for s in sources] == [("watched", watched.as_posix())]
        added = cli_process("sources", "add", str(folder), "--name", "docs", db=db)
        assert added.code == 0, added.stderr
        write(folder / "late.txt", "The tapir relay came late.")
        eventually(lambda: "late.txt" in found("tapir relay"), "a file in a source added later")
        removed = cli_process("sources", "remove", "docs", db=db)
        assert removed.code == 0, removed.stderr
        write(folder / "later.txt", "The wombat relay came later.")
        write(watched / "second.md", "# Second\n\nThe egret signal is red.\n")
        eventually(lambda: "second.md" in found("egret signal"), "the source still kept")
        assert "later.txt" not in found("wombat relay")  # the removed source is let go
    finally:
        out = stop(process).decode()
    assert f"  watching  {watched}" in out
    assert f"added {folder / 'late.txt'}" in out


def test_a_missing_folder_is_an_error_of_its_source_and_retires_nothing(
    brain: Brain, folder: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    write(other / "a.md", "# A\n\nThe gecko ferry leaves at noon.\n")
    brain.sources.add(folder, name="docs")
    brain.sources.add(other, name="other")
    folder.rename(tmp_path / "unmounted")
    write(other / "b.md", "# B\n\nThe newt ferry leaves at one.\n")
    synced = {status.source.name: (status, report) for status, report in brain.sources.update()}
    status, report = synced["docs"]
    assert [(p.path, p.reason.split(":")[0]) for p in report.errors] == [
        (folder.resolve().as_posix(), "the folder is missing")
    ]
    assert (status.files, report.deleted) == (len(KINDS) + 1, 0)  # drafts/plan.md too
    assert status.source.problems == ((folder.resolve().as_posix(), report.errors[0].reason),)
    assert synced["other"][1].added == 1  # the others are synced all the same
