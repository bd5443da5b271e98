"""The server's main loop stays asleep while nothing happens: it wakes once a second (uvicorn's
own wakes ten times), and a stop request wakes it at once rather than at its next tick; and
it starts settled (warmed, its objects frozen), so that its first answers do not pay for that."""

from __future__ import annotations

import gc
import signal
import threading
import time
from pathlib import Path

import pytest

from nexusbrain.api.server import _Server, _settle, listen, uvicorn_config
from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings, server_settings


async def _app(scope: dict, receive: object, send: object) -> None:  # type: ignore[type-arg]
    """Never called: the test makes no request, and lifespan is off."""


def test_the_main_loop_ticks_once_a_second_and_wakes_for_a_stop() -> None:
    settings = server_settings("127.0.0.1", 0, None)
    listener = listen(settings.host, settings.port)
    config = uvicorn_config(_app, settings, "warning")
    config.lifespan = "off"
    server = _Server(config)
    ticks: list[float] = []
    on_tick = server.on_tick

    async def counted(counter: int) -> bool:
        ticks.append(time.monotonic())
        return await on_tick(counter)

    server.on_tick = counted  # type: ignore[method-assign]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]})
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.started
        time.sleep(2.5)
        assert 2 <= len(ticks) <= 4  # uvicorn's own loop: 25 in the same time
        seen = len(ticks)
        while len(ticks) == seen:  # just after a tick, the next is a second away
            assert time.monotonic() < deadline + 5, "the loop stopped ticking"
            time.sleep(0.005)
        idle_ticks = len(ticks)
        asked = time.monotonic()
        server.handle_exit(signal.SIGTERM, None)
        thread.join(10)
        assert not thread.is_alive()
        assert len(ticks) == idle_ticks + 1
        assert ticks[-1] - asked < 0.5  # woken by the stop, not by its next tick a second on
    finally:
        server.should_exit = True
        thread.join(10)
        listener.close()


def test_a_process_ready_to_answer_has_warmed_its_brain_and_frozen_what_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Objects a ready server holds stay out of the collector's full passes, which walked
    them all while the requests queued in that process waited."""
    with Brain.open(settings=Settings(db=tmp_path / "b.db", embedder=Profile.HASHING)) as brain:
        brain.ingest_markdown("# Keys\n\nthe deploy key rotates monthly", uri="k.md")
        warmed: list[bool] = []
        warm = brain.admin.warm
        monkeypatch.setattr(brain.admin, "warm", lambda: warmed.append(True) or warm())
        assert gc.get_freeze_count() == 0
        try:
            _settle(brain)
            assert warmed == [True]
            assert gc.get_freeze_count() > len(gc.get_objects()) // 2
        finally:
            gc.unfreeze()
