"""The CLI: every command has help with an example, --json works, errors exit 1 in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from nexusbrain.brain import Brain
from nexusbrain.cli.main import LAZY, cli, load_lazy
from nexusbrain.config import Settings

from .test_dates import store_two_days


@pytest.fixture
def run(tmp_path: Path):  # type: ignore[no-untyped-def]
    db = tmp_path / "cli.db"

    def invoke(*args: str, input: str | None = None) -> click.testing.Result:
        return CliRunner().invoke(cli, ["--db", str(db), *args], input=input)

    return invoke


def test_every_command_has_help_with_an_example() -> None:
    assert isinstance(cli, click.Group)
    names = cli.list_commands(click.Context(cli))
    assert {"eval", "bench", "search", "graph"} <= set(names)
    for name in names:
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0, name
        assert "Example:" in result.output, f"{name} help has no example"
        example = result.output.split("Example:", 1)[1].split("Options:", 1)[0]
        assert any(
            line.strip().startswith("nexusbrain") and f" {name}" in line
            for line in example.splitlines()
        ), f"{name}'s example does not run it"


def test_ingest_search_get_with_json(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Alpha\n\nThe alpha release shipped in May.\n")
    first = json.loads(run("ingest-dir", str(notes), "--json").output)
    assert {k: first[k] for k in ("added", "updated", "unchanged", "deleted", "chunks")} == {
        "added": 1,
        "updated": 0,
        "unchanged": 0,
        "deleted": 0,
        "chunks": 1,
    }
    second = json.loads(run("ingest-dir", str(notes), "--json").output)
    assert second["unchanged"] == 1 and second["chunks"] == 0
    found = json.loads(run("search", "when did alpha ship", "--json").output)
    assert found["hits"][0]["uri"] == (notes / "a.md").resolve().as_posix()
    text = run("search", "alpha", "--explain").output
    assert "bm25: rank 1" in text
    doc = json.loads(run("get", str(notes / "a.md"), "--json").output)
    assert doc["title"] == "Alpha"
    assert (
        run("get", "1", "--lines", "3")
        .output.rstrip()
        .endswith("The alpha release shipped in May.")
    )
    stats = json.loads(run("stats", "--json").output)
    assert stats["documents"] == 1 and stats["chunks"] == 1


def test_add_recall_export_import(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert json.loads(run("add", "buy oat milk", "--tag", "home", "--json").output)["status"] == (
        "created"
    )
    assert "duplicate" in run("add", "buy oat milk").output
    recall = json.loads(run("recall", "milk", "--budget", "50", "--json").output)
    assert recall["hits"][0]["text"] == "buy oat milk"
    backup = tmp_path / "backup.jsonl"
    assert run("export", "-o", str(backup)).exit_code == 0
    other = tmp_path / "other.db"
    result = CliRunner().invoke(cli, ["--db", str(other), "import", str(backup), "--json"])
    assert json.loads(result.output)["documents"] == 1
    again = CliRunner().invoke(cli, ["--db", str(other), "export"])
    assert again.output == backup.read_text()


def test_errors_are_one_line_and_exit_1(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert run("add", "a first memory").exit_code == 0
    missing = run("get", "42")
    assert missing.exit_code == 1
    assert missing.output.strip() == "error: no document with id 42"
    empty = run("search", "  ")
    assert empty.exit_code == 1 and empty.output.startswith("error: query is empty")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.md").write_bytes(b"\xff\xfe")
    (bad / "ok.md").write_text("# Fine\n\nreadable")
    result = run("ingest-dir", str(bad))  # ingested what it could, and said what it skipped
    assert result.exit_code == 0 and "1 added" in result.output
    assert "1 skipped:" in result.output and "x.md: " in result.output
    assert "not valid UTF-8" in result.output
    strict = run("ingest-dir", str(bad), "--strict")
    assert strict.exit_code == 1 and "not valid UTF-8" in strict.output


def test_command_line_mistakes_are_one_line_with_the_fix_and_exit_1(tmp_path: Path) -> None:
    """Issue 35.10: click's own usage errors were three lines and exit code 2."""

    def run(*args: str) -> click.testing.Result:
        db = ["--db", str(tmp_path / "brain.db")]
        return CliRunner().invoke(cli, [*db, *args], prog_name="nexusbrain")

    assert run("add", "a first memory").exit_code == 0
    dash = run("search", "-foo")
    assert dash.exit_code == 1
    assert dash.output.strip().splitlines() == [
        "error: No such option '-f'. To give a value that begins with '-' ('-foo'), put it"
        " after '--': nexusbrain search -- -foo"
    ]
    assert run("search", "--", "-foo").exit_code == 0  # the fix works
    for args, told in [
        (("serch", "x"), "error: No such command 'serch'. Did you mean 'search'?"),
        (("graph", "relatons"), "error: No such command 'relatons'. Did you mean 'relations'?"),
        (("--bogus",), "error: No such option '--bogus'. See 'nexusbrain --help'."),
        (("search",), "error: Missing argument 'QUERY'. See 'nexusbrain search --help'."),
        (("zzzzqq",), "error: No such command 'zzzzqq'. See 'nexusbrain --help'."),
    ]:
        result = run(*args)
        assert (result.exit_code, result.output.strip().splitlines()) == (1, [told]), args


def test_summaries_say_where_what_was_left_out_and_count_right(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Issue 35.12: the ingest summary names the brain and the hidden entries it skipped, in
    the singular for one; a skipped file's path is said once; lines past a document's end are
    an error that says how many it has."""
    notes = tmp_path / "notes"
    (notes / ".git").mkdir(parents=True)
    (notes / ".git" / "x.md").write_text("# Hidden\n\ninside a hidden folder")
    (notes / ".draft.md").write_text("# Draft\n\nhidden file")
    (notes / "a.md").write_text("# A\n\nhello world")
    (notes / "bad.md").write_bytes(b"\xff\xfe")
    result = run("ingest-dir", str(notes))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert f"{notes}: 1 added, 0 updated, 0 unchanged, 0 deleted, 1 chunk written in" in lines[0]
    assert lines[1] == (
        f"into the brain at {tmp_path / 'cli.db'}; 2 hidden files and folders skipped"
        " (names that begin with '.')"
    )
    skipped = [line for line in lines if "bad.md" in line]
    assert skipped == [
        f"  {notes / 'bad.md'}: not valid UTF-8 (byte 0: invalid start byte); convert it to UTF-8"
    ]
    past = run("get", str(notes / "a.md"), "--lines", "99999-100000")
    assert (past.exit_code, past.output.splitlines()) == (
        1,
        [
            f"error: --lines 99999-100000 is past the end of {notes / 'a.md'}, which has"
            " 3 lines: ask for lines 1-3 or fewer"
        ],
    )


def test_lazy_commands_are_listed_with_their_own_help_without_being_imported() -> None:
    listing = CliRunner().invoke(cli, ["--help"]).output
    for name, (_, summary) in LAZY.items():
        command = load_lazy(name)
        assert summary == command.get_short_help_str(limit=1000), name
        assert f"  {name}  " in listing


def test_delete_takes_a_path_as_get_does(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "old-plan.md").write_text("# Old plan\n\nmove the office in March")
    assert run("ingest-dir", str(notes)).exit_code == 0
    path = str(notes / "old-plan.md")
    gone = json.loads(run("delete", path, "--json").output)
    assert (gone["uri"], gone["status"]) == (path, "retired")
    again = run("delete", str(gone["id"]))
    assert again.output.strip() == f"already_retired: document {gone['id']} ({path})"
    missing = run("delete", str(notes / "nope.md"))
    assert missing.exit_code == 1 and "no document with uri or path" in missing.output


def test_a_read_of_a_mistyped_db_says_no_brain_is_there_and_makes_none(
    tmp_path: Path,
) -> None:
    typo = tmp_path / "no-such-folder" / "brian.db"
    for command in (
        ["search", "deploy"],
        ["stats"],
        ["recall", "deploy"],
        ["get", "1"],
        ["export"],
        ["graph", "relations", "--from", "alice"],
        ["graph", "add", "alice", "knows", "bob", "--dry-run"],
    ):
        result = CliRunner().invoke(cli, ["--db", str(typo), "--local", *command])
        assert result.exit_code == 1, command
        assert result.output.startswith(f"error: no brain at {typo}: the file does not exist")
        assert "`add`, `ingest-dir` or `import` make a brain" in result.output
    assert not typo.parent.exists()
    made = CliRunner().invoke(cli, ["--db", str(typo), "add", "the first memory"])
    assert made.exit_code == 0 and typo.exists()


def test_every_command_but_six_takes_json_as_the_readme_says() -> None:
    def leaves(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
        found: dict[str, click.Command] = {}
        context = click.Context(group)
        for name in group.list_commands(context):
            command = group.get_command(context, name)
            assert command is not None
            if isinstance(command, click.Group):
                found |= leaves(command, f"{prefix}{name} ")
            else:
                found[prefix + name] = command
        return found

    assert isinstance(cli, click.Group)
    without = {
        name
        for name, command in leaves(cli).items()
        if not any("--json" in p.opts for p in command.params)
    }
    assert without == {"export", "eval captures", "eval compare", "eval scaffold", "serve", "mcp"}


def test_a_hit_says_it_was_said_on_the_day_asked(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with Brain.open(settings=Settings(db=tmp_path / "cli.db")) as brain:  # as the CLI opens it
        store_two_days(brain)
    shown = run("search", "What dish did Nate cook on 9 November, 2022?", "-k", "1").output
    assert "found by keywords #1" in shown and "; said on 2022-11-09, as asked" in shown
    assert "said on" not in run("search", "What dish did Nate cook?").output


def test_hits_say_where_they_ranked_and_explain_gives_the_raw_scores(run) -> None:  # type: ignore[no-untyped-def]
    assert run("add", "the okapi grazes at dawn", "--tag", "zoo", "--tag", "dawn").exit_code == 0
    assert run("add", "the harbor lantern is blue").exit_code == 0
    shown = run("search", "okapi", "--mode", "balanced").output.splitlines()
    # a memory is its id (which `get` takes) and its tags, not its uri's hash (issue 35.12)
    assert shown[1] == "  1. memory 1, tagged zoo, dawn" and shown[2].strip().startswith(
        "found by keywords #1"
    )
    assert "fused score" not in "\n".join(shown)
    explained = run("search", "okapi", "--explain").output
    assert "fused score " in explained and "bm25: rank 1, score " in explained


def test_one_shot_reads_run_without_the_cyclic_collector_and_others_with_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import gc
    import sys

    from nexusbrain.cli.answers import Local
    from nexusbrain.cli.main import main

    seen: dict[str, bool] = {}
    real = Local.call

    def spy(self: Local, operation: Any, args: Any) -> Any:
        seen[operation.name] = gc.isenabled()
        return real(self, operation, args)

    monkeypatch.setattr(Local, "call", spy)
    db = str(tmp_path / "b.db")
    try:
        for argv in (["add", "the cat sat on the mat"], ["search", "cat"]):
            monkeypatch.setattr(sys, "argv", ["nexusbrain", "--local", "--db", db, *argv])
            with pytest.raises(SystemExit) as ended:
                main()
            assert ended.value.code == 0
            assert gc.isenabled()  # as main found it
    finally:
        gc.unfreeze()
    assert seen == {"add": True, "search": False}
