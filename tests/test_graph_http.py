"""The knowledge graph over HTTP, against a real server on loopback and a scratch database."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from nexusbrain.brain import Brain
from nexusbrain.clock import FrozenClock
from nexusbrain.config import ServerSettings, Settings

from .conftest import LiveServer, _serve, free_port
from .test_api import assert_error

MANAGES = {"from": "alice", "type": "manages", "to": "bob"}
FIRST = {**MANAGES, "valid_at": "2020-01-01", "invalid_at": "2023-01-01"}
SECOND = {**MANAGES, "valid_at": "2021-01-01", "invalid_at": "2025-01-01"}


def ingest(http: httpx.Client, *edges: dict[str, Any], **params: Any) -> dict[str, Any]:
    response = http.post("/ingest", json={"relationships": list(edges)}, params=params)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def db_state(path: Path) -> tuple[int, int]:
    """(relationship rows, PRAGMA data_version) as another connection sees them."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT count(*) FROM relationships").fetchone()[0]
        return rows, conn.execute("PRAGMA data_version").fetchone()[0]


def test_the_seven_steps_end_to_end(live_server: LiveServer, clock: FrozenClock) -> None:
    db = live_server.brain.settings.db
    with live_server.client() as http:
        # 1. created, one relationship row
        [first] = ingest(http, FIRST)["relationships"]
        assert first["status"] == "created"
        assert db_state(db)[0] == 1
        # 2. the identical ingest: duplicate, 0 writes, the same id
        before = db_state(db)
        clock.advance(seconds=1)
        [again] = ingest(http, FIRST)["relationships"]
        assert (again["status"], again["id"]) == ("duplicate", first["id"])
        assert db_state(db) == before  # no row, and the file's data_version did not move
        # 3. a changed window: created, new id, old.superseded_at == new.created_at
        clock.advance(seconds=1)
        answer = ingest(http, SECOND)
        [second] = answer["relationships"]
        assert second["status"] == "created" and second["id"] != first["id"]
        assert second["supersedes"] == first["id"]
        assert second["retired"] == [
            {"id": first["id"], "reason": "window_changed", "replaced_by": second["id"]}
        ]
        # 4. history from either id: [old, new], current = new
        histories = [
            http.get(f"/graph/relationships/{i}/history").json()
            for i in (first["id"], second["id"])
        ]
        assert histories[0]["versions"] == histories[1]["versions"]
        old, new = histories[0]["versions"]
        assert (old["id"], new["id"]) == (first["id"], second["id"])
        assert old["superseded_at"] == new["created_at"] == answer["at"]
        assert old["current"] is False and old["reason"] == "window_changed"
        assert new["current"] is True and new["superseded_at"] is None
        assert histories[0]["current"] == histories[1]["current"] == new
        # 5. relations: only the current edge
        relations = http.get("/graph/relations", params={"from": "alice"}).json()["relationships"]
        assert [r["id"] for r in relations] == [second["id"]]
        # 6. traversal: a single current hop
        hops = http.get("/graph/traverse", params={"from": "alice", "depth": 2}).json()["hops"]
        assert [(h["depth"], h["path"]) for h in hops] == [(1, [second["id"]])]
        # 7. an unknown id: 404 in the standard error shape
        error = assert_error(http.get("/graph/relationships/999999/history"), 404, "not_found")
        assert "999999" in error["message"]


def test_a_functional_type_closes_the_old_fact_and_a_dry_run_changes_nothing(
    live_server: LiveServer, clock: FrozenClock
) -> None:
    db = live_server.brain.settings.db
    acme = {"from": "alice", "type": "works_at", "to": "Acme", "valid_at": "2019-01-01"}
    globex = {"from": "Alice", "type": "Works at", "to": "Globex", "valid_at": "2023-06-01"}
    with live_server.client() as http:
        [old] = ingest(http, acme, {"from": "alice", "type": "manages", "to": "bob"})[
            "relationships"
        ][:1]
        ingest(http, {"from": "carol", "type": "works_at", "to": "Acme"})  # another subject
        clock.advance(seconds=1)
        before = db_state(db)
        dry = ingest(http, globex, dry_run="true")
        assert dry["dry_run"] is True and db_state(db) == before
        [would] = dry["relationships"]
        assert (would["status"], would["id"]) == ("created", None)
        assert would["retired"] == [
            {"id": old["id"], "reason": "contradicted", "replaced_by": None}
        ]
        assert [e["name"] for e in dry["entities"]] == ["Globex"] and dry["entities"][0][
            "id"
        ] is None

        clock.advance(seconds=1)
        real = ingest(http, globex)
        [new] = real["relationships"]
        [retired] = new["retired"]
        assert (retired["id"], retired["reason"]) == (old["id"], "contradicted")
        history = http.get(f"/graph/relationships/{old['id']}/history").json()
        first, closed = history["versions"]
        assert first["superseded_at"] == closed["created_at"] == real["at"]
        assert closed["id"] == retired["replaced_by"] and closed["supersedes"] == old["id"]
        assert closed["invalid_at"] == new["valid_at"] == "2023-06-01T00:00:00.000000+00:00"
        assert closed["valid_at"] == first["valid_at"] and closed["source"] == first["source"]
        # scoped to that subject and type: nothing else was touched
        alice = http.get("/graph/relations", params={"from": "alice"}).json()["relationships"]
        assert sorted((r["type"], r["to"]) for r in alice) == [
            ("manages", "bob"),
            ("works_at", "Acme"),
            ("works_at", "Globex"),
        ]
        carol = http.get("/graph/relations", params={"from": "carol"}).json()["relationships"]
        assert [(r["to"], r["invalid_at"], r["supersedes"]) for r in carol] == [
            ("Acme", None, None)
        ]


def test_as_of_answers_on_both_time_axes(live_server: LiveServer, clock: FrozenClock) -> None:
    with live_server.client() as http:
        t1 = ingest(http, FIRST)["at"]
        clock.advance(days=1)
        t2 = ingest(http, SECOND)["at"]

        def relations(**params: str) -> list[int]:
            out = http.get("/graph/relations", params={"from": "alice", **params}).json()
            return [r["id"] for r in out["relationships"]]

        [old_id], [new_id] = relations(as_of_known=t1), relations()
        # valid time 2020-06: the old version held then; the current knowledge says it did not
        assert relations(as_of_valid="2020-06-01") == []
        assert relations(as_of_valid="2020-06-01", as_of_known=t1) == [old_id]
        assert relations(as_of_valid="2024-06-01", as_of_known=t1) == []
        assert relations(as_of_valid="2024-06-01", as_of_known=t2) == [new_id]
        assert relations(as_of_valid="2022-06-01") == [new_id]
        assert relations(as_of_known="2000-01-01") == []  # before the brain knew anything
        trav = http.get(
            "/graph/traverse",
            params={"from": "alice", "as_of_known": t1, "as_of_valid": "2020-06-01"},
        ).json()
        assert [h["path"] for h in trav["hops"]] == [[old_id]]
        assert_error(
            http.get("/graph/relations", params={"from": "alice", "as_of_valid": "soon"}),
            400,
            "invalid_input",
        )


def test_traversal_keeps_only_paths_whose_edges_hold_at_once(live_server: LiveServer) -> None:
    with live_server.client() as http:
        [ab, _, cd] = ingest(
            http,
            {
                "from": "a",
                "type": "knows",
                "to": "b",
                "valid_at": "2020-01-01",
                "invalid_at": "2021-01-01",
            },
            {"from": "b", "type": "knows", "to": "c", "valid_at": "2022-01-01"},
            {"from": "b", "type": "knows", "to": "d", "valid_at": "2020-06-01"},
        )["relationships"]
        hops = http.get("/graph/traverse", params={"from": "a", "depth": 3}).json()["hops"]
        assert [(h["path"], h["valid_from"], h["valid_until"]) for h in hops] == [
            ([ab["id"]], "2020-01-01T00:00:00.000000+00:00", "2021-01-01T00:00:00.000000+00:00"),
            (
                [ab["id"], cd["id"]],
                "2020-06-01T00:00:00.000000+00:00",
                "2021-01-01T00:00:00.000000+00:00",
            ),
        ]


def test_graph_errors_use_the_error_shape(live_server: LiveServer) -> None:
    with live_server.client() as http:
        bad_window = {**MANAGES, "valid_at": "2023-01-01", "invalid_at": "2020-01-01"}
        message = assert_error(
            http.post("/ingest", json={"relationships": [bad_window]}), 400, "invalid_input"
        )["message"]
        assert "invalid_at=2020-01-01" in message
        bad_date = {**MANAGES, "valid_at": "last tuesday"}
        message = assert_error(
            http.post("/ingest", json={"relationships": [bad_date]}), 400, "invalid_input"
        )["message"]
        assert "'last tuesday'" in message
        blank = {**MANAGES, "from": "   "}
        assert_error(http.post("/ingest", json={"relationships": [blank]}), 400, "invalid_input")
        odd_type = {**MANAGES, "type": "is/was"}
        assert_error(http.post("/ingest", json={"relationships": [odd_type]}), 400, "invalid_input")
        unknown = {**MANAGES, "weight": 3}
        assert_error(http.post("/ingest", json={"relationships": [unknown]}), 422, "invalid_input")
        assert_error(http.get("/graph/relations", params={"from": "nobody"}), 404, "not_found")
        assert_error(http.get("/graph/relations"), 400, "invalid_input")
        assert_error(
            http.get("/graph/traverse", params={"from": "x", "depth": 0}), 400, "invalid_input"
        )
        http.post("/ingest", json={"entities": [{"name": "Bob", "aliases": ["Robert"]}]})
        assert_error(
            http.post("/ingest", json={"entities": [{"name": "Rob", "aliases": ["bob"]}]}),
            409,
            "conflict",
        )
        # a bad item anywhere in a request changes nothing
        good_then_bad = {"relationships": [MANAGES, bad_window]}
        assert_error(http.post("/ingest", json=good_then_bad), 400, "invalid_input")
        assert http.get("/graph/relations", params={"from": "bob"}).json()["relationships"] == []
        assert_error(http.get("/graph/relations", params={"from": "alice"}), 404, "not_found")


def test_entities_aliases_and_types(live_server: LiveServer) -> None:
    with live_server.client() as http:
        body = {"entities": [{"name": "Bob Smith", "type": "person", "aliases": ["Robert", "bob"]}]}
        [created] = http.post("/ingest", json=body).json()["entities"]
        assert created["status"] == "created" and created["key"] == "bob smith"
        assert created["aliases"] == ["Robert", "bob"]
        [again] = http.post("/ingest", json=body).json()["entities"]
        assert again["status"] == "duplicate" and again["id"] == created["id"]
        retyped = {"entities": [{"name": "robert", "type": "engineer"}]}
        [updated] = http.post("/ingest", json=retyped).json()["entities"]
        assert (updated["status"], updated["id"], updated["type"]) == (
            "updated",
            created["id"],
            "engineer",
        )
        [edge] = ingest(http, {"from": "alice", "type": "manages", "to": "BOB"})["relationships"]
        assert edge["to"] == "Bob Smith"  # the alias resolves to the entity
        found = http.get("/graph/relations", params={"to": "robert"}).json()["relationships"]
        assert [r["id"] for r in found] == [edge["id"]]


def test_export_import_round_trips_the_graph(
    live_server: LiveServer, clock: FrozenClock, tmp_path: Path
) -> None:
    with live_server.client() as http:
        http.post("/ingest", json={"entities": [{"name": "Bob", "aliases": ["Robert"]}]})
        ingest(http, FIRST)
        clock.advance(seconds=1)
        ingest(http, SECOND)
        ingest(http, {"from": "alice", "type": "works_at", "to": "Acme", "valid_at": "2019-01-01"})
        ingest(
            http, {"from": "alice", "type": "works_at", "to": "Globex", "valid_at": "2023-01-01"}
        )
        http.post(
            "/ingest/markdown",
            json={"title": "Alice", "content": "# Alice\n\nWorks with [[Carol]].", "uri": "n/a.md"},
        )
        exported = http.get("/export").content
    types = [line.split(b'"type":"')[1].split(b'"')[0] for line in exported.splitlines()]
    assert types.count(b"relationship") == 6 and types.count(b"alias") == 1
    with Brain.open(settings=Settings(db=tmp_path / "other.db")) as other:
        for server in _serve(other, ServerSettings(port=free_port())):
            with server.client() as http:
                result = http.post("/import", content=exported).json()
                assert (result["relationships"], result["duplicates"]) == (6, 0)
                assert http.get("/export").content == exported
                again = http.post("/import", content=exported).json()
                assert (again["relationships"], again["duplicates"]) == (0, 4)
                assert http.get("/export").content == exported
                history = http.get("/graph/relationships/1/history").json()
                assert [v["current"] for v in history["versions"]] == [False, True]


def test_recall_and_search_add_graph_context(live_server: LiveServer) -> None:
    with live_server.client() as http:
        http.post(
            "/ingest/markdown",
            json={
                "title": "Team",
                "content": "# Team\n\nAlice leads the platform team.",
                "uri": "t.md",
            },
        )
        [edge] = ingest(http, FIRST)["relationships"]
        plain = http.post("/recall", json={"query": "who leads the platform team"}).json()
        assert plain["graph_context"] == []
        out = http.post(
            "/recall", json={"query": "who leads the platform team", "graph": True}
        ).json()
        [fact] = out["graph_context"]
        assert (
            fact["text"]
            == f"alice manages bob (valid 2020-01-01..2023-01-01) [relationship {edge['id']}]"
        )
        assert fact["trace"] == {"context": "graph", "entity": "alice", "hit_rank": 1}
        assert fact["relationship"]["id"] == edge["id"]
        tokenmax = http.post("/recall", json={"query": "platform team", "mode": "tokenmax"}).json()
        assert [f["text"] for f in tokenmax["graph_context"]] == [fact["text"]]
        tight = http.post(
            "/recall", json={"query": "platform team", "graph": True, "budget_tokens": 10}
        ).json()
        assert tight["tokens_used"] <= 10 and tight["graph_context"] == []
        search = http.get("/search", params={"q": "platform team", "graph": "true"}).json()
        assert [f["text"] for f in search["graph_context"]] == [fact["text"]]
        assert "graph_context" not in http.get("/search", params={"q": "platform team"}).json()


def test_openapi_lists_the_graph_routes(live_server: LiveServer) -> None:
    with live_server.client() as http:
        paths = http.get("/openapi.json").json()["paths"]
    for path in (
        "/ingest",
        "/graph/relations",
        "/graph/traverse",
        "/graph/relationships/{relationship_id}/history",
    ):
        assert path in paths, path


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")), reason="needs curl and jq")
def test_the_demo_script_runs_the_seven_steps(live_server: LiveServer) -> None:
    script = Path(__file__).resolve().parents[1] / "scripts" / "graph_demo.sh"
    db = live_server.brain.settings.db
    done = subprocess.run(
        ["bash", str(script), live_server.url, str(db)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("  ok: ") == 16
    assert done.stdout.endswith("all 7 steps answered as expected\n")
