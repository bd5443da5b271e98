"""Searches in one process take turns: at most `searches_at_once` rank at the same time (the
rest wait), so that they do not share the GIL (config.SEARCHES_AT_ONCE)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings
from nexusbrain.errors import ConfigError
from nexusbrain.retrieval.pipeline import Searcher


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many searches were ranking at once, each time one started."""
    seen: list[int] = []
    running = [0]
    lock = threading.Lock()
    rank = Searcher.rank

    def slow_rank(self: Searcher, *args: Any, **kwargs: Any) -> Any:
        with lock:
            running[0] += 1
            seen.append(running[0])
        try:
            time.sleep(0.05)  # long enough that every thread has asked for its turn
            return rank(self, *args, **kwargs)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(Searcher, "rank", slow_rank)
    yield seen


def search_from_threads(tmp_path: Path, at_once: int, threads: int) -> None:
    settings = Settings(db=tmp_path / "b.db", embedder=Profile.HASHING, searches_at_once=at_once)
    with Brain.open(settings=settings) as brain:
        for i in range(5):
            brain.ingest_markdown(f"# Note {i}\n\ndeploy key vault rotation {i}", uri=f"{i}.md")
        answers: list[int] = []
        workers = [
            threading.Thread(target=lambda: answers.append(len(brain.search("deploy key"))))
            for _ in range(threads)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=30)
        assert answers == [5] * threads  # every search answered, whole


def test_one_search_ranks_at_a_time_by_default(tmp_path: Path, counted: list[int]) -> None:
    assert Settings(db=tmp_path / "x.db").searches_at_once == 1
    search_from_threads(tmp_path, 1, 6)
    assert len(counted) == 6 and max(counted) == 1


def test_more_may_rank_at_once_when_configured(tmp_path: Path, counted: list[int]) -> None:
    search_from_threads(tmp_path, 3, 6)
    assert len(counted) == 6 and max(counted) == 3


def test_the_setting_comes_from_the_environment(tmp_path: Path) -> None:
    env = {"BRAIN_SEARCHES_AT_ONCE": "2"}
    assert Settings.from_env(tmp_path / "x.db", env).searches_at_once == 2
    with pytest.raises(ConfigError, match="BRAIN_SEARCHES_AT_ONCE='0' is not a positive"):
        Settings.from_env(tmp_path / "x.db", {"BRAIN_SEARCHES_AT_ONCE": "0"})
