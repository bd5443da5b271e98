"""The server's main loop stays asleep while nothing happens: it wakes once a second (uvicorn's
own wakes ten times), and a stop request wakes it at once rather than at its next tick."""

from __future__ import annotations

import signal
import threading
import time

from nexusbrain.api.server import _Server, listen, uvicorn_config
from nexusbrain.config import server_settings


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
