"""Contract tests: the CLI and HTTP give the same answer to the same question, and imports
point down (interfaces -> brain -> domain packages -> storage)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from click.testing import CliRunner

from nexusbrain.cli.main import cli

from .conftest import LiveServer

SRC = Path(__file__).resolve().parents[1] / "src" / "nexusbrain"
LAYERS = {
    "interfaces": {"cli", "api", "mcp_server", "web"},
    "domain": {"ingest", "retrieval", "graph", "evals", "embeddings", "bench"},
    "storage": {"storage"},
}


def test_search_and_recall_answer_the_same_over_cli_and_http(
    live_server: LiveServer, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("BRAIN_EMBEDDER", "hashing")
    brain = live_server.brain
    brain.ingest_markdown("# Deploy\n\nThe deploy failed: the key expired.", uri="n/deploy.md")
    brain.add_memory("the key lives in the vault")
    db = str(brain.settings.db_path)
    with live_server.client() as http:
        for mode in ("conservative", "balanced", "tokenmax"):
            over_http = http.get("/search", params={"q": "deploy key", "mode": mode}).json()
            result = CliRunner().invoke(
                cli, ["--db", db, "search", "deploy key", "--mode", mode, "--json"]
            )
            assert json.loads(result.output) == over_http, mode
        body = {"query": "deploy key", "budget_tokens": 30}
        over_http = http.post("/recall", json=body).json()
        result = CliRunner().invoke(
            cli, ["--db", db, "recall", "deploy key", "--budget", "30", "--json"]
        )
        assert json.loads(result.output) == over_http


def _package_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "nexusbrain" else None


def _layer(package: str | None) -> str | None:
    return next((name for name, members in LAYERS.items() if package in members), None)


def test_imports_point_down() -> None:
    order = ["interfaces", "core", "domain", "storage"]
    problems = []
    for path in SRC.rglob("*.py"):
        package = path.relative_to(SRC).parts[0].removesuffix(".py")
        here = _layer(package) or ("core" if package == "brain" else None)
        if here is None:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                target = _package_of(node.module)
                there = _layer(target) or ("core" if target == "brain" else None)
                if there and order.index(there) < order.index(here):
                    problems.append(f"{path.relative_to(SRC)} imports {node.module}")
    assert problems == []
