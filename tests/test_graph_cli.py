"""`nexusbrain graph ...`: help with examples, and the same answers as the HTTP API."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from nexusbrain import views
from nexusbrain.brain import Brain
from nexusbrain.cli.main import cli
from nexusbrain.cli.render import describe as describe_view
from nexusbrain.graph.model import describe
from nexusbrain.records import Relationship

from .conftest import LiveServer

WINDOW = ["--valid-at", "2020-01-01", "--invalid-at", "2023-01-01"]


def run(brain: Brain, *args: str) -> click.testing.Result:
    """The CLI over this very brain (and its frozen clock)."""
    return CliRunner().invoke(cli, ["graph", *args], obj={"brain": brain})


def run_json(brain: Brain, *args: str) -> Any:
    result = run(brain, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_every_graph_command_has_help_with_an_example() -> None:
    assert isinstance(cli, click.Group)
    graph = cli.get_command(click.Context(cli), "graph")  # made when first asked for
    assert isinstance(graph, click.Group)
    names = graph.list_commands(click.Context(graph))
    assert set(names) == {"add", "relations", "history", "traverse"}
    for name in names:
        result = CliRunner().invoke(cli, ["graph", name, "--help"])
        assert result.exit_code == 0, name
        example = result.output.split("Example:", 1)[1].split("Options:", 1)[0]
        assert any(
            line.strip().startswith(f"nexusbrain graph {name}") for line in example.splitlines()
        ), f"graph {name}'s example does not run it"


def test_the_cli_and_http_give_the_same_answers(live_server: LiveServer, tmp_path: Path) -> None:
    brain = live_server.brain
    edge = {"from": "alice", "type": "manages", "to": "bob"}
    with live_server.client() as http:
        created = run_json(brain, "add", "alice", "manages", "bob", *WINDOW)
        assert created["relationships"][0]["status"] == "created"
        body = {"relationships": [{**edge, "valid_at": "2020-01-01", "invalid_at": "2023-01-01"}]}
        duplicate = http.post("/ingest", json=body).json()
        assert duplicate == run_json(brain, "add", "alice", "manages", "bob", *WINDOW)
        assert duplicate["relationships"][0]["status"] == "duplicate"

        run_json(brain, "add", "alice", "works_at", "Acme", "--valid-at", "2019-01-01")
        facts = tmp_path / "facts.json"
        contradiction = {
            "entities": [{"name": "Globex", "type": "company"}],
            "relationships": [{"from": "alice", "type": "works_at", "to": "Globex"}],
        }
        facts.write_text(json.dumps(contradiction))
        dry = http.post("/ingest", json=contradiction, params={"dry_run": "true"}).json()
        assert dry == run_json(brain, "add", "--file", str(facts), "--dry-run")
        assert dry["relationships"][0]["retired"][0]["reason"] == "contradicted"

        [rel_id] = [r["id"] for r in created["relationships"]]
        pairs = [
            ("/graph/relations", {"from": "alice"}, ["relations", "--from", "alice"]),
            (
                "/graph/relations",
                {"to": "bob", "type": "manages", "as_of_valid": "2021-01-01"},
                ["relations", "--to", "bob", "--type", "manages", "--as-of-valid", "2021-01-01"],
            ),
            (f"/graph/relationships/{rel_id}/history", {}, ["history", str(rel_id)]),
            (
                "/graph/traverse",
                {"from": "alice", "depth": 2},
                ["traverse", "alice", "--depth", "2"],
            ),
        ]
        for path, params, args in pairs:
            assert http.get(path, params=params).json() == run_json(brain, *args), path


def test_readable_output_and_errors(brain: Brain) -> None:
    first = run(brain, "add", "alice", "manages", "bob", *WINDOW)
    assert first.output.splitlines()[0] == (
        "created: alice manages bob (valid 2020-01-01..2023-01-01) [relationship 1]"
    )
    second = run(brain, "add", "alice", "manages", "bob", "--valid-at", "2021-01-01")
    assert "  retires 1 (window_changed, replaced by 2)" in second.output
    assert run(brain, "relations", "--from", "alice").output == (
        "alice manages bob (valid from 2021-01-01) [relationship 2]\n"
    )
    history = run(brain, "history", "2").output.splitlines()
    assert history[0].startswith("1: alice manages bob (valid 2020-01-01..2023-01-01), known")
    assert history[0].endswith("(window_changed)") and history[1].endswith("current")
    assert run(brain, "traverse", "bob").output == "no current edges from 'bob'\n"
    dry = run(brain, "add", "x", "y", "z", "--dry-run").output
    assert "[would be created]" in dry and dry.endswith("dry run: nothing was changed\n")

    for args, message in [
        (["history", "999"], "error: no relationship with id 999"),
        (["add", "alice", "manages"], "error: give FROM TYPE TO (three words), got 2"),
        (["relations", "--from", "nobody"], "error: no entity named 'nobody'"),
        (["traverse", "alice", "--depth", "9"], "error: depth=9 must be between 1 and 5"),
        (["relations", "--from", "alice", "--as-of-known", "later"], "as_of_known='later'"),
    ]:
        result = run(brain, *args)
        assert result.exit_code == 1, args
        assert message in result.output and len(result.output.splitlines()) == 1, result.output


@given(
    valid=st.one_of(st.none(), st.datetimes(timezones=st.just(UTC))),
    invalid=st.one_of(st.none(), st.datetimes(timezones=st.just(UTC))),
    cite=st.booleans(),
)
def test_the_readable_graph_lines_come_from_the_view_as_from_the_record(
    valid: datetime | None, invalid: datetime | None, cite: bool
) -> None:
    """The CLI prints a relationship from its JSON view (a server's or its own), in the words
    graph.model.describe gives the record."""
    for start, end in ((valid, invalid), (_midnight(valid), _midnight(invalid))):
        record = Relationship(
            id=7,
            from_id=1,
            from_name="alice",
            type="manages",
            to_id=2,
            to_name="bob",
            valid_at=start,
            invalid_at=end,
            created_at=datetime(2026, 1, 2, tzinfo=UTC),
            superseded_at=None,
            reason=None,
            source=None,
            supersedes=None,
        )
        view = views.relationship(record)
        assert describe_view(view, cite=cite) == describe(record, cite=cite)


def _midnight(value: datetime | None) -> datetime | None:
    return value.replace(hour=0, minute=0, second=0, microsecond=0) if value else None
