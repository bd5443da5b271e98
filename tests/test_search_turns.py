"""Searches in one process take turns: at most `searches_at_once` rank at the same time (the
rest wait, first come first served), so that they do not share the GIL
(config.SEARCHES_AT_ONCE)."""

from __future__ import annotations

import signal
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
from nexusbrain.retrieval.turns import Turns


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


def wait_until(check: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_turns_are_served_in_the_order_they_were_asked_for() -> None:
    """A turn given back goes to the longest waiter, even when the thread giving it back asks
    again at once (threading.Semaphore let that thread take it again first)."""
    turns = Turns(1)
    order: list[object] = []
    turns.__enter__()
    waiters = []
    for n in range(5):
        waiter = threading.Thread(target=lambda n=n: _take_turn(turns, order, n))
        waiter.start()
        wait_until(lambda n=n: turns.waiting == n + 1)  # so that the arrival order is known
        waiters.append(waiter)
    turns.__exit__(None, None, None)
    with turns:
        order.append("again")
    for waiter in waiters:
        waiter.join(timeout=10)
    assert order == [0, 1, 2, 3, 4, "again"]


def _take_turn(turns: Turns, order: list[object], n: int) -> None:
    with turns:
        time.sleep(0.005)
        order.append(n)


def test_a_waiter_interrupted_while_waiting_leaves_the_queue_and_loses_no_turn() -> None:
    turns = Turns(1)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with turns:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(KeyboardInterrupt):
            turns.__enter__()  # the main thread's wait can be interrupted by a signal
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert turns.waiting == 0
    release.set()
    holder.join(timeout=10)
    taken = threading.Event()
    other = threading.Thread(target=lambda: (turns.__enter__(), taken.set()))
    other.start()
    assert taken.wait(10)  # the holder's turn was not handed to the waiter that left
    other.join(timeout=10)


def test_turns_need_at_least_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Turns(0)
