"""Replay: capture (opt-in, capped), the NDJSON dump with stable ids, re-running captured
queries on the current brain, and its metrics against hand-computed values."""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner, Result

from nexusbrain.brain import Brain
from nexusbrain.captures import stable_id
from nexusbrain.cli.main import cli
from nexusbrain.clock import FrozenClock
from nexusbrain.config import CaptureConfig, Profile, ServerSettings, Settings
from nexusbrain.errors import ConfigError
from nexusbrain.evals.replay import (
    judged_mrr,
    judged_recall,
    overlap_at_k,
    rank_biased_overlap,
    read_captures,
)
from nexusbrain.evals.results_log import RunStatus, read_log
from tests.conftest import free_port, start_server

DOCS = {
    "keys.md": "# Keys\n\nRotate the webhook signing key every 90 days.\n",
    "deploy.md": "# Deploys\n\nRoll back a bad release with the deploy tool.\n",
    "oncall.md": "# On-call\n\nThe on-call rota hands over on Monday at noon.\n",
}


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"BRAIN_EMBEDDER": "hashing"})


def test_rbo_against_hand_computed_values() -> None:
    assert rank_biased_overlap(["a", "b", "c"], ["a", "b", "c"]) == pytest.approx(1.0)
    assert rank_biased_overlap(["a", "b"], ["c", "d"]) == 0.0
    # X1 = 0, X2 = 2: (0.1/0.9) * (2/2 * 0.81) + (2/2) * 0.81 = 0.09 + 0.81
    assert rank_biased_overlap(["a", "b"], ["b", "a"]) == pytest.approx(0.9)
    # uneven: S = [a], L = [a, b]: the short list is taken to continue as it agreed
    assert rank_biased_overlap(["a"], ["a", "b"]) == pytest.approx(1.0)
    # S = [a, b], L = [a, c, b]: X1 = 1, X2 = 1, X3 = 2 (s = 2, l = 3, p = 0.9)
    total = 1 * 0.9 + 1 / 2 * 0.81 + 2 / 3 * 0.729 + 1 * (3 - 2) / (2 * 3) * 0.729
    expected = 0.1 / 0.9 * total + ((2 - 1) / 3 + 1 / 2) * 0.729
    assert rank_biased_overlap(["a", "b"], ["a", "c", "b"]) == pytest.approx(expected)
    assert rank_biased_overlap([], []) == 1.0 and rank_biased_overlap([], ["a"]) == 0.0
    assert rank_biased_overlap(["a", "b"], ["a", "c"]) == rank_biased_overlap(
        ["a", "c"], ["a", "b"]
    )


def test_overlap_and_judged_metrics() -> None:
    assert overlap_at_k(["a", "b", "c", "d"], ["b", "x", "a", "y"], 4) == 0.5
    assert overlap_at_k(["a", "b", "c"], ["c", "b", "a", "z"], 2) == 0.5  # top 2 of each
    assert overlap_at_k(["a", "b"], ["c", "d", "a"], 2) == 0.0
    with pytest.raises(ValueError):
        overlap_at_k([], ["a"], 3)
    judged = frozenset({"notes/a.md", "notes/b.md#D1:2"})
    ranked = ["notes/c.md@0-10", "notes/a.md@40-90", "notes/b.md#D1:2"]
    assert judged_recall(ranked, judged, 2) == 0.5 and judged_recall(ranked, judged, 3) == 1.0
    assert judged_mrr(ranked, judged) == 0.5 and judged_mrr(["x"], judged) == 0.0
    assert stable_id("u", "D1:2", 0, 5) == "u#D1:2" and stable_id("u", None, 3, 9) == "u@3-9"


@pytest.fixture
def captured_db(tmp_path: Path, clock: FrozenClock) -> Path:
    """A brain with capture on, three documents, and a few searches and a recall made."""
    db = tmp_path / "brain.db"
    settings = Settings(db=db, embedder=Profile.HASHING, capture=CaptureConfig(enabled=True))
    with Brain.open(settings=settings, clock=clock) as brain:
        for name, text in DOCS.items():
            brain.ingest_markdown(text, uri=f"notes/{name}")
        brain.search("rotate the signing key", k=3)
        brain.search("roll back a release", mode="conservative")
        brain.recall("who is on call on monday", mode="tokenmax")
        brain.search("rota", filters=None, k=2)
    return db


def test_capture_is_opt_in_and_capped(tmp_path: Path, clock: FrozenClock) -> None:
    off = Settings(db=tmp_path / "off.db", embedder=Profile.HASHING)
    with Brain.open(settings=off, clock=clock) as brain:
        brain.ingest_markdown("# A\n\nalpha beta\n", uri="a.md")
        brain.search("alpha")
        assert list(brain.admin.captured()) == []
    capped = replace(off, db=tmp_path / "on.db", capture=CaptureConfig(True, max_rows=2))
    with Brain.open(settings=capped, clock=clock) as brain:
        brain.ingest_markdown("# A\n\nalpha beta\n", uri="a.md")
        for query in ("alpha", "beta", "alpha beta"):
            brain.search(query)
        assert [c["query"] for c in brain.admin.captured()] == ["beta", "alpha beta"]
    env = Settings.from_env(
        tmp_path / "x.db", {"BRAIN_CAPTURE": "1", "BRAIN_CAPTURE_MAX_ROWS": "7"}
    )
    assert env.capture == CaptureConfig(enabled=True, max_rows=7)
    with pytest.raises(ConfigError, match="BRAIN_CAPTURE_MAX_ROWS='lots'"):
        Settings.from_env(tmp_path / "x.db", {"BRAIN_CAPTURE_MAX_ROWS": "lots"})


def test_captures_dump_as_ndjson_with_stable_ids(captured_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "captured.ndjson"
    result = run("--db", str(captured_db), "eval", "captures", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "wrote 4 captured queries" in result.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(c["operation"], c["mode"]) for c in lines] == [
        ("search", "balanced"),
        ("search", "conservative"),
        ("recall", "tokenmax"),
        ("search", "balanced"),
    ]
    first = lines[0]["results"][0]
    assert first["uri"] == "notes/keys.md"
    assert first["id"] == f"notes/keys.md@{first['char_start']}-{first['char_end']}"
    assert set(lines[0]) >= {"at", "query", "filters", "latency_ms"}


def test_replay_on_the_same_brain_agrees_and_a_deletion_is_lost(
    captured_db: Path, tmp_path: Path, clock: FrozenClock
) -> None:
    out = tmp_path / "captured.ndjson"
    run("--db", str(captured_db), "eval", "captures", "-o", str(out))
    lines = out.read_text().splitlines()
    judged = json.loads(lines[0])
    judged["relevant"] = ["notes/keys.md"]
    out.write_text("\n".join([json.dumps(judged), *lines[1:], "{broken"]) + "\n")
    same = run("eval", "replay", "--against", str(out), "--db", str(captured_db), "--json")
    assert same.exit_code == 0, same.output
    view = json.loads(same.stdout)
    assert view["replayed"] == 4 and view["judged"] == 1
    # the first capture was made in balanced: replayed in balanced, it comes back whole
    assert view["metrics"]["recall@k"] == 1.0 and view["metrics"]["mrr"] == 1.0
    assert "line 5" in same.stderr
    captured, problems = read_captures(out)
    assert len(captured) == 4 and problems and captured[0].relevant == {"notes/keys.md"}
    with Brain.open(
        settings=Settings(db=captured_db, embedder=Profile.HASHING), clock=clock
    ) as brain:
        brain.delete_document(brain.find_document("notes/keys.md").id)
    after = json.loads(
        run("eval", "replay", "--against", str(out), "--db", str(captured_db), "--json").stdout
    )
    assert after["lost"] >= 1 and after["metrics"]["recall@k"] == 0.0
    assert after["metrics"]["overlap@k"] < view["metrics"]["overlap@k"]
    text = run("eval", "replay", "--against", str(out), "--db", str(captured_db)).stdout
    assert "overlap@k" in text and "rbo" in text and "latency ms: now p50" in text


def test_a_sweep_replays_against_a_copy_and_never_touches_the_brain(
    captured_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "captured.ndjson"
    run("--db", str(captured_db), "eval", "captures", "-o", str(out))
    before = hashlib.sha256(captured_db.read_bytes()).hexdigest()
    result = run(
        "eval",
        "run-all",
        "--suites",
        "replay",
        "--data",
        f"replay={out}",
        "--replay-db",
        str(captured_db),
        "--budget-usd-retrieval",
        "1",
    )
    assert result.exit_code == 0, result.output
    assert hashlib.sha256(captured_db.read_bytes()).hexdigest() == before
    records = read_log(tmp_path / ".nexusbrain-evals" / "eval-results.jsonl").records
    assert [(r.mode, r.status) for r in records] == [
        ("conservative", RunStatus.COMPLETED),
        ("balanced", RunStatus.COMPLETED),
        ("tokenmax", RunStatus.COMPLETED),
    ]
    balanced = records[1]
    assert len(balanced.per_question) == 4 and balanced.per_question[0].question_id == "capture-1"
    assert set(balanced.metrics) == {"overlap@k", "rbo"}
    assert balanced.details["summary"]["replayed"] == 4


def test_the_server_serves_the_same_captures_as_the_cli(
    captured_db: Path, clock: FrozenClock
) -> None:
    settings = Settings(db=captured_db, embedder=Profile.HASHING)
    with Brain.open(settings=settings, clock=clock) as brain:
        server, thread = start_server(brain, ServerSettings(port=free_port()))
        try:
            url = f"http://127.0.0.1:{server.config.port}/captures"
            with httpx.Client(timeout=30) as http:
                response = http.get(url)
        finally:
            server.should_exit = True
            thread.join(timeout=10)
        assert response.headers["content-type"].startswith("application/x-ndjson")
        served = [json.loads(line) for line in response.text.splitlines()]
        assert served == list(brain.admin.captured()) and len(served) == 4
