"""What the server watches about itself: recent search latencies and its envelope status.

The status is a soft signal (see envelopes.py): /stats reports it, and a background check
every `ServerSettings.envelope_check_seconds` logs a warning when a limit is crossed."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from nexusbrain.envelopes import Envelope, EnvelopeWatch, Figures, status
from nexusbrain.latency import percentile

if TYPE_CHECKING:
    from nexusbrain.brain import Brain

log = logging.getLogger(__name__)

WINDOW = 1_000  # the p95 is over this many most recent searches and recalls
MIN_SAMPLES = 20  # fewer than this give no p95
TIMED_PATHS = frozenset({"/search", "/recall"})


class LatencyWindow:
    def __init__(self, size: int = WINDOW) -> None:
        self._samples: deque[float] = deque(maxlen=size)

    def record(self, milliseconds: float) -> None:
        self._samples.append(milliseconds)

    def p95(self) -> float | None:
        samples = list(self._samples)
        return percentile(samples, 95) if len(samples) >= MIN_SAMPLES else None


class Monitor:
    def __init__(self, brain: Brain, envelope: Envelope, latencies: LatencyWindow) -> None:
        self.brain = brain
        self.latencies = latencies
        self.watch = EnvelopeWatch(envelope)

    def observed(self, documents: int, db_bytes: int, rss_bytes: int) -> Figures:
        return Figures(documents, db_bytes, rss_bytes, self.latencies.p95())

    def envelope_status(self, documents: int, db_bytes: int, rss_bytes: int) -> dict[str, Any]:
        observed = self.observed(documents, db_bytes, rss_bytes)
        return status(self.watch.envelope, observed, self.watch.observe(observed))

    def check(self) -> None:
        stats = self.brain.stats()
        store = stats.store
        self.watch.observe(self.observed(store.documents, store.db_bytes, stats.rss_bytes))


def lifespan(monitor: Monitor, every: float) -> Callable[[Any], Any]:
    """A lifespan that checks the envelope every `every` seconds (0: never) in a thread."""

    @asynccontextmanager
    async def run(_: Any) -> AsyncIterator[None]:
        task = asyncio.create_task(_periodic(monitor, every)) if every > 0 else None
        try:
            yield
        finally:
            if task is not None:
                task.cancel()

    return run


async def _periodic(monitor: Monitor, every: float) -> None:
    while True:
        await asyncio.sleep(every)
        try:
            await asyncio.to_thread(monitor.check)
        except Exception:  # a failed check must never take the server down
            log.exception("envelope check failed")
