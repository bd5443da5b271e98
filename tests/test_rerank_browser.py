"""The web page's "Why this hit?" with a reranker (issue 32): each hit's rank line says where
the reranker moved it from, and its explanation names the reranker, the move and its score,
in a real headless browser (skipped, with the reason, without Chromium or Playwright)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import pytest

from nexusbrain.brain import Brain, facade
from nexusbrain.config import Profile, ServerSettings, Settings
from nexusbrain.embeddings.hashing import HashingEmbedder
from nexusbrain.retrieval.modes import PRESETS
from nexusbrain.storage import open as open_backend

from .conftest import free_port, start_server
from .test_rerank import NOTES

pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

from playwright.sync_api import Page, expect

from .test_web_browser import browser, page

__all__ = ["browser", "page"]  # the fixtures, shared with the other browser tests


class Shortest:
    """A reranker that prefers short texts: it moves this search's hits."""

    model_id = "shortest"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [-float(len(text)) for text in texts]


def test_why_this_hit_names_the_reranker(
    tmp_path: Path, page: Page, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reranker's order alone (weight 1), so that this search's hits move whatever weight
    # the dev sets chose: the page's lines are the subject here, not the weight.
    whole = {m: replace(c, rerank=replace(c.rerank, weight=1.0)) for m, c in PRESETS.items()}
    monkeypatch.setattr(facade, "PRESETS", MappingProxyType(whole))
    settings = Settings(db=tmp_path / "brain.db", embedder=Profile.HASHING)
    reranker = Shortest()
    brain = Brain(
        open_backend(settings.db, settings.lexical), HashingEmbedder(), settings, reranker=reranker
    )
    for name, text in NOTES.items():
        brain.ingest_markdown(text, uri=name)
    hits = brain.search("deploy key vault")
    served = ServerSettings(port=free_port())
    server, thread = start_server(brain, served)
    try:
        page.goto(f"http://127.0.0.1:{served.port}/app?q=deploy+key+vault")
        first = page.locator(".hit").first
        change = hits[0].trace.rerank
        assert change is not None
        moved = (
            f"kept #{change.rank_after}"
            if change.rank_before == change.rank_after
            else f"#{change.rank_before} → #{change.rank_after}"
        )
        moved_hits = [
            (i, h.trace.rerank.rank_before)
            for i, h in enumerate(hits)
            if h.trace.rerank and h.trace.rerank.rank_before != h.trace.rerank.rank_after
        ]
        assert moved_hits
        for i, before in moved_hits:
            rank = page.locator(".hit").nth(i).locator(".rank")
            expect(rank).to_contain_text(f"reranked from #{before}")
        first.get_by_role("button", name="Why this hit?").click()
        expect(first.locator(".explain .rerank")).to_have_text(
            f"Reranked by shortest: {moved}, its score {change.score:.3f}."
        )
        expect(first.locator(".explain")).not_to_contain_text("No reranker ran.")
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        brain.close()
