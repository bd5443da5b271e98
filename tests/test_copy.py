"""Moving a brain between SQLite and PostgreSQL: `export` then `import` both ways, and
`nexusbrain copy`, losslessly and byte for byte; the same graph answers on both backends."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from nexusbrain import views
from nexusbrain.brain import Brain
from nexusbrain.cli.main import cli
from nexusbrain.clock import FrozenClock
from nexusbrain.config import Profile, Settings
from nexusbrain.graph import AsOf
from nexusbrain.ingest.conversation import Session, Turn
from nexusbrain.records import Capture, SearchMode

from .pgserver import Server

NOTES = {
    "ada.md": "---\nworks_at: Acme\n---\n# Ada\n\nAda writes the [[Engine]] notes.\n",
    "engine.md": "# Engine\n\nThe analytical engine, with café au lait and 東京.\n",
    "gone.md": "# Gone\n\nA note that will be deleted, about [[Ada]].\n",
}


def _fill(db: str | Path, root: Path, clock: FrozenClock) -> None:
    """Notes with edges (one of them later deleted), a memory, a conversation, a capture,
    and a graph with supersession and contradiction."""
    root.mkdir(exist_ok=True)
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    settings = Settings(db=db, embedder=Profile.HASHING)
    with Brain.open(settings=settings, clock=clock) as brain:
        brain.ingest_dir(root)
        clock.advance(seconds=5)
        (root / "gone.md").unlink()
        (root / "ada.md").write_text(NOTES["ada.md"].replace("Acme", "Globex"), encoding="utf-8")
        brain.ingest_dir(root)
        brain.add_memory("The staging database moved to db-2", tags=["infra"])
        turns = (
            Turn("user", "Where did we park?", "2024-05-01T10:00:00Z"),
            Turn("assistant", "Level 3, near the lift.", "2024-05-01T10:00:05Z"),
        )
        brain.ingest_conversation([Session("s1", turns)])
        brain.graph.relate("Ada", "lives_in", "London", valid_at=datetime(2019, 1, 1, tzinfo=UTC))
        clock.advance(days=1)
        brain.graph.relate("Ada", "lives_in", "Paris", valid_at=datetime(2021, 1, 1, tzinfo=UTC))
        brain.graph.relate("Ada", "knows", "Grace", valid_at=datetime(2018, 1, 1, tzinfo=UTC))
        capture = Capture(clock(), "search", "engine", "balanced", {}, (1, 2), 2.5)
        brain._store.record_capture(capture, 100)


def _cli(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _export(db: str | Path) -> bytes:
    return _cli("--db", str(db), "export").encode()


@pytest.fixture
def source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BRAIN_EMBEDDER", "hashing")
    db = tmp_path / "source.db"
    _fill(db, tmp_path / "notes", FrozenClock(datetime(2026, 1, 2, tzinfo=UTC)))
    return db


def test_export_import_round_trips_byte_for_byte_both_ways(
    source: Path, postgres: Server, tmp_path: Path
) -> None:
    exported = _export(source)
    kinds = {orjson.loads(line)["type"] for line in exported.splitlines()}
    assert {"document", "revision", "chunk", "capture", "entity", "relationship"} <= kinds
    dump = tmp_path / "source.jsonl"
    dump.write_bytes(exported)
    url = postgres.url()
    _cli("--db", url, "import", str(dump))
    assert _export(url) == exported
    (tmp_path / "pg.jsonl").write_bytes(_export(url))
    back = tmp_path / "back.db"
    _cli("--db", str(back), "import", str(tmp_path / "pg.jsonl"))
    assert _export(back) == exported


def test_copy_moves_a_brain_to_postgres_and_back(
    source: Path, postgres: Server, tmp_path: Path
) -> None:
    exported = _export(source)
    url = postgres.url()
    out = _cli("copy", str(source), url, "--json")
    assert orjson.loads(out)["documents"] == exported.count(b'"type":"document"')
    assert _export(url) == exported
    back = tmp_path / "back.db"
    _cli("copy", url, str(back))
    assert _export(back) == exported
    settings = Settings(db=source, embedder=Profile.HASHING)
    with Brain.open(settings=settings) as a, Brain.open(url, settings=settings) as b:
        for query, mode in itertools.product(
            ["engine notes", "where did we park", "staging database", "東京"], list(SearchMode)
        ):
            left = [(h.chunk_id, round(h.score, 9)) for h in a.search(query, mode=mode)]
            right = [(h.chunk_id, round(h.score, 9)) for h in b.search(query, mode=mode)]
            assert left == right, (query, mode)


def test_copy_refuses_a_brain_that_holds_anything(source: Path, postgres: Server) -> None:
    url = postgres.url()
    _cli("--db", url, "add", "already here")
    result = CliRunner().invoke(cli, ["copy", str(source), url])
    assert result.exit_code == 1
    assert "is not empty: copy into a new one" in result.output


def _graph_answers(brain: Brain) -> list[Any]:
    """Every graph answer the interfaces give, as the JSON they send."""
    graph = brain.graph
    known = datetime(2026, 1, 2, 0, 0, 1, tzinfo=UTC)
    answers: list[Any] = []
    for as_of in (
        AsOf(),
        AsOf(known=known),
        AsOf(valid=datetime(2020, 6, 1, tzinfo=UTC)),
        AsOf(valid=datetime(2022, 6, 1, tzinfo=UTC), known=known),
    ):
        answers.append(views.relations(graph.relations("Ada", as_of=as_of), as_of))
        answers.append(views.traversal(graph.traverse("Ada", depth=3, as_of=as_of)))
    for relationship in graph.relations("Ada", as_of=AsOf(known=datetime.now(UTC))):
        answers.append(views.relationship_history(graph.history(relationship.id)))
    answers.append(views.entity(graph.entity("Ada")))
    return answers


def test_the_graph_answers_alike_on_both_backends(
    tmp_path: Path, postgres: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAIN_EMBEDDER", "hashing")
    answers: list[list[Any]] = []
    databases: list[Callable[[], str]] = [lambda: str(tmp_path / "g.db"), postgres.url]
    for n, db in enumerate(databases):
        url = db()
        _fill(url, tmp_path / f"notes{n}", FrozenClock(datetime(2026, 1, 2, tzinfo=UTC)))
        with Brain.open(settings=Settings(db=url, embedder=Profile.HASHING)) as brain:
            answers.append(_graph_answers(brain))
    sqlite, postgres_answers = answers
    assert orjson.dumps(sqlite).replace(b"notes0", b"notes1") == orjson.dumps(postgres_answers)
    assert len(sqlite) > 10
