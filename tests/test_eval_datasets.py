"""The evaluation commands of docs/evaluation.md on the shared dev datasets (slow; skipped
without them).

Each figure must stay plausible against published ones: a number far outside these bands is a
bug to find, not a result. Bands, and the published figures behind them:
- SciFact nDCG@10: Anserini BM25 reaches 0.679 on the test split (train behaves similarly).
- LoCoMo recall@5 over turns: a plain BM25 reaches about 0.49.
- Cranfield graded nDCG@10: plain BM25 runs land around 0.3-0.4.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nexusbrain.cli.main import cli
from tests.conftest import DATASETS

pytestmark = pytest.mark.slow


def figures(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(cli, ["eval", *args, "--json"])
    assert result.exit_code == 0, result.output
    value: dict[str, object] = json.loads(result.stdout)
    return value


def needs(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is not present")
    return path


def test_scifact_train_lexical() -> None:
    folder = needs(DATASETS / "scifact")
    run = figures("beir", str(folder), "--split", "train", "--lexical-only")
    metrics = run["metrics"]
    assert isinstance(metrics, dict)
    assert 0.62 <= metrics["ndcg@10"] <= 0.76
    assert 0.75 <= metrics["recall@10"] <= metrics["recall@100"] <= 0.97
    assert run["counts"] == {"documents": 5183, "empty_documents_skipped": 0, "queries": 809}


def test_cranfield_graded_lexical() -> None:
    folder = needs(DATASETS / "cranfield")
    run = figures("beir", str(folder), "--split", "test", "--lexical-only")
    metrics = run["metrics"]
    assert isinstance(metrics, dict)
    assert 0.28 <= metrics["ndcg@10"] <= 0.45
    assert run["counts"] == {"documents": 1398, "empty_documents_skipped": 2, "queries": 225}


def test_locomo_dev_lexical() -> None:
    path = needs(DATASETS / "locomo" / "locomo_dev.json")
    run = figures("locomo", str(path), "--lexical-only")
    metrics = run["metrics"]
    assert isinstance(metrics, dict)
    assert 0.42 <= metrics["recall@5"] <= 0.70
    assert run["counts"] == {
        "conversations": 5,
        "questions": 999,
        "scored": 760,
        "adversarial_reported_apart": 237,
        "skipped_no_evidence": 2,
        "normalised_ids": 2,
        "unparseable_ids": 1,
        "unknown_ids": 1,
    }


def test_locomo_dev_as_longmemeval(tmp_path: Path) -> None:
    path = needs(DATASETS / "locomo" / "locomo_dev.json")
    converted, log = tmp_path / "locomo_lme.json", tmp_path / "locomo_lme.jsonl"
    made = CliRunner().invoke(cli, ["eval", "convert-locomo", str(path), "-o", str(converted)])
    assert made.exit_code == 0, made.output
    run = figures("longmemeval", str(converted), "--output", str(log), "--lexical-only")
    metrics = run["metrics"]
    assert isinstance(metrics, dict)
    assert metrics["recall_all@5"] <= metrics["recall_any@5"]
    assert 0.45 <= metrics["recall_any@5"] <= 0.8
    assert len(log.read_text().splitlines()) == 760
