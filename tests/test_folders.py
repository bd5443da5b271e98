"""Your folders: `ls` lists what is stored (uri, title, kind, chunks, last update)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from nexusbrain.cli.main import cli


@pytest.fixture
def run(tmp_path: Path):  # type: ignore[no-untyped-def]
    db = tmp_path / "cli.db"

    def invoke(*args: str) -> click.testing.Result:
        return CliRunner().invoke(cli, ["--local", "--db", str(db), *args], env=ENV)

    return invoke


ENV = {"BRAIN_EMBEDDER": "hashing", "BRAIN_URL": None}


def test_ls_lists_the_live_documents_under_a_prefix(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    notes = tmp_path / "notes"
    (notes / "ops").mkdir(parents=True)
    (notes / "a.md").write_text("# Alpha\n\nThe alpha release shipped in May.\n")
    (notes / "ops" / "b.txt").write_text("Paging rota.\n\nAlice then Bob.\n")
    (notes / "ops" / "c.md").write_text("# Gone\n\nSoon deleted.\n")
    assert run("ingest-dir", str(notes)).exit_code == 0
    assert run("add", "buy oat milk").exit_code == 0
    assert run("delete", str(notes / "ops" / "c.md")).exit_code == 0

    everything = json.loads(run("ls", "--json").output)
    assert everything["total"] == 3 and everything["prefix"] == ""
    root = notes.resolve().as_posix()
    assert [(d["uri"], d["title"], d["kind"], d["chunks"]) for d in everything["documents"]] == [
        (f"{root}/a.md", "Alpha", "markdown", 1),
        (f"{root}/ops/b.txt", "b", "text", 1),
        (everything["documents"][2]["uri"], "buy oat milk", "memory", 1),
    ]
    assert everything["documents"][2]["uri"].startswith("memory:")

    text = run("ls", f"{root}/ops").output.splitlines()
    assert text[0].split() == ["updated", "(UTC)", "kind", "chunks", "uri", "title"]
    assert re.fullmatch(rf"\d{{4}}-\d\d-\d\d \d\d:\d\d  text +1  {root}/ops/b.txt  b", text[1])
    assert text[2:] == [f"1 document under {root}/ops"]

    first = run("ls", "--limit", "1").output.splitlines()
    assert len(first) == 3 and first[-1] == "3 documents, the first 1 shown (--limit)"
    assert run("ls", "nothing/").output == "0 documents under nothing/\n"
    refused = run("ls", "--limit", "0")
    assert refused.exit_code == 1 and "limit=0 must be at least 1" in refused.output
