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
# Bottom to top; a module may import from its own layer and those below, never above.
LAYERS = (
    (
        "ground",
        {
            "records",
            "errors",
            "clock",
            "dates",
            "config",
            "environment",
            "discovery",
            "wire",
            "envelopes",
            "latency",
            "captures",
            "jsonlines",
            "summaries",
        },
    ),
    ("storage", {"storage", "embeddings", "rerankers"}),
    ("domain", {"ingest", "retrieval", "graph"}),
    ("core", {"brain"}),
    ("operations", {"operations", "views"}),
    ("above", {"evals", "bench", "cli", "api", "mcp_server", "web"}),
)
# the package's face (__init__ exports Brain lazily) and `python -m nexusbrain`
FACE = {"__init__", "__main__"}


def test_search_and_recall_answer_the_same_over_cli_and_http(
    live_server: LiveServer, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("BRAIN_EMBEDDER", "hashing")
    brain = live_server.brain
    brain.ingest_markdown("# Deploy\n\nThe deploy failed: the key expired.", uri="n/deploy.md")
    brain.add_memory("the key lives in the vault")
    db = str(brain.settings.db)
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
    if parts[0] != "nexusbrain":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def _layer(package: str | None) -> int | None:
    return next((i for i, (_, members) in enumerate(LAYERS) if package in members), None)


def _imported(node: ast.AST) -> list[str]:
    """The modules an import statement reaches (`from nexusbrain import views` reaches
    nexusbrain.views)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module == "nexusbrain":
        return [f"nexusbrain.{alias.name}" for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        return [node.module]
    return []


def test_imports_point_down() -> None:
    """Every module of src/ is in a layer, and no import (lazy ones included) points up."""
    problems = []
    for path in SRC.rglob("*.py"):
        package = path.relative_to(SRC).parts[0].removesuffix(".py")
        if package in FACE:
            continue
        here = _layer(package)
        assert here is not None, f"{package} is in no layer: add it to LAYERS"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for module in _imported(node):
                there = _layer(_package_of(module))
                if there is not None and there > here:
                    problems.append(f"{path.relative_to(SRC)} imports {module}")
    assert problems == []
