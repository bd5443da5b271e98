"""The judged-set markdown format, split selection, uri matching and set hygiene."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from nexusbrain.errors import InvalidInput
from nexusbrain.evals.judged import (
    UNLABELED,
    SetLabel,
    parse_judged_markdown,
    read_judged_markdown,
    require_tunable,
    select_splits,
    tunable,
    uri_matcher,
)
from nexusbrain.evals.scaffold import StoredDocument, scaffold
from nexusbrain.evals.targets import Retrieved

SMOKE = Path(__file__).parent / "data" / "smoke"

SAMPLE = """\
# Judged queries

> a note for judges: ignored

What port does the
admin console use?
Relevant: network.md

## dev

Q: How do I rotate keys?
Relevant: keys.md, vault.md
Id: rotate

<!-- a comment
spanning lines -->
## Final

Who is on call?
Relevant: oncall.md
"""


def test_parses_queries_labels_ids_and_relevant_lists() -> None:
    queries = parse_judged_markdown(SAMPLE)
    assert [(q.id, q.text, q.split, dict(q.judgments)) for q in queries] == [
        ("q1", "What port does the admin console use?", UNLABELED, {"network.md": 1}),
        ("rotate", "How do I rotate keys?", "dev", {"keys.md": 1, "vault.md": 1}),
        ("q3", "Who is on call?", "final", {"oncall.md": 1}),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("How do I deploy?\n", "has no 'Relevant: id, id' line"),
        ("How do I deploy?\nRelevant: ,\n", "names no document"),
        ("TODO: a question\nRelevant: a.md\n", "still a placeholder"),
        ("A?\nRelevant: a.md\nId: x\n\nB?\nRelevant: b.md\nId: x\n", "used twice"),
        ("A?\nRelevant: a.md\nmore words\n", "text after the Relevant:"),
        ("# only a title\n", "holds no query"),
    ],
)
def test_malformed_sets_fail_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        parse_judged_markdown(text, source="set.md")


def test_errors_name_the_line() -> None:
    with pytest.raises(InvalidInput, match=r"set\.md:3:"):
        parse_judged_markdown("# t\n\nA question\nRelevent: a.md\n", source="set.md")


def test_the_committed_smoke_set_is_large_enough_and_labelled() -> None:
    queries = read_judged_markdown(SMOKE / "judged.md")
    assert len(queries) >= 37
    assert {q.split for q in queries} == {"dev", "validation", "final"}
    documents = {p.relative_to(SMOKE / "docs").as_posix() for p in SMOKE.glob("docs/**/*.md")}
    assert 9 <= len(documents) <= 12
    judged = {doc for q in queries for doc in q.judgments}
    assert judged <= documents, judged - documents
    assert judged == documents  # every document is judged relevant somewhere


def test_select_splits() -> None:
    queries = parse_judged_markdown(SAMPLE)
    assert [q.id for q in select_splits(queries, ["dev", "final"])] == ["rotate", "q3"]
    assert len(select_splits(queries, [])) == 3
    with pytest.raises(InvalidInput, match="split validation is not in this set"):
        select_splits(queries, ["validation"])


def test_final_sets_are_never_tunable() -> None:
    require_tunable("dev")
    require_tunable("validation")
    with pytest.raises(InvalidInput, match="marked final"):
        require_tunable("Final", command="tune-weights")
    queries = parse_judged_markdown(SAMPLE)
    assert len(tunable(select_splits(queries, ["dev"]))) == 1
    with pytest.raises(InvalidInput, match="tune-weights tunes settings"):
        tunable(queries, command="tune-weights")


def _hit(uri: str) -> Retrieved:
    return Retrieved(chunk_id=1, uri=uri, unit=None, text="")


def test_uri_matcher_maps_absolute_paths_to_relative_ids() -> None:
    id_of = uri_matcher(parse_judged_markdown("A?\nRelevant: incidents/x.md, ./b.md, c.md\n"))
    assert id_of(_hit("/home/me/notes/incidents/x.md")) == "incidents/x.md"
    assert id_of(_hit("/home/me/notes/b.md")) == "./b.md"
    assert id_of(_hit("c.md")) == "c.md"
    assert id_of(_hit("/home/me/notes/other/x.md")) == "/home/me/notes/other/x.md"
    assert id_of(_hit("/home/me/notes/abc.md")) == "/home/me/notes/abc.md"  # not a "/" suffix


def test_scaffold_writes_a_skeleton_the_parser_refuses_until_judged() -> None:
    documents = [StoredDocument(f"/n/{i}.md", f"Doc {i} --> #x", "words") for i in range(5)]
    text = scaffold(documents, n=3, seed=4, split=SetLabel.VALIDATION)
    assert text == scaffold(documents, n=3, seed=4, split=SetLabel.VALIDATION)
    assert text.count("Relevant: /n/") == 3 and "## validation" in text
    with pytest.raises(InvalidInput, match="placeholder"):
        parse_judged_markdown(text)
    judged = text.replace("TODO: a question that", "Which doc is")
    queries = parse_judged_markdown(judged)
    assert len(queries) == 3 and {q.split for q in queries} == {"validation"}


def test_evals_never_import_the_interfaces() -> None:
    """Evals sit above the core, beside the interfaces: they never reach into one."""
    folder = Path(__file__).parents[1] / "src" / "nexusbrain" / "evals"
    for path in folder.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                assert not name.startswith(
                    ("nexusbrain.cli", "nexusbrain.api", "nexusbrain.mcp_server", "nexusbrain.web")
                ), f"{path.name} imports {name}"
