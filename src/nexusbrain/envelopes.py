"""Deployment envelopes: the size and resource limits a brain is expected to stay within.

An envelope is a soft signal. `nexusbrain bench --envelope NAME` fails when a measured figure
breaks one of its limits, and a running server reports its status in /stats and logs a warning
when a limit is crossed; nothing ever refuses a write because of it.

- desktop: a laptop or workstation. 50k documents, a 2 GiB database, 512 MB of RSS, search p95
  within 200 ms.
- edge: a 4 GB ARM board (a Raspberry Pi 4/5 class machine) that also runs the agent using the
  brain. The OS and the agent need most of the 4 GB, so the brain gets 256 MB of RSS, and its
  database must stay small enough to live in the page cache beside them (1 GiB), because
  random reads from SD cards and eMMC are slow. 20k documents of notes fit within both with
  room to spare (see docs/design/bench.md for the measured bytes per document). The board is
  several times slower than a desktop core, so the p95 limit is 300 ms.
- enterprise: one server-class machine. 1M documents, a 64 GiB database, 8 GB of RSS (the
  dense index of ~2.5M chunk vectors takes ~2.5 GB alone), p95 within 500 ms.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from nexusbrain.errors import ConfigError

log = logging.getLogger(__name__)

GIB = 1024**3
MB = 1000**2


class Limit(StrEnum):
    DOCUMENTS = "documents"
    DB_BYTES = "db_bytes"
    RSS_BYTES = "rss_bytes"
    P95_MS = "p95_ms"


@dataclass(frozen=True, slots=True)
class Figures:
    """A brain's figures that an envelope bounds, one field for each Limit: an envelope's
    maxima, or what was measured (None when not measured: a server with too few searches has
    no p95)."""

    documents: int | None = None
    db_bytes: int | None = None
    rss_bytes: int | None = None
    p95_ms: float | None = None

    def value(self, limit: Limit) -> float | None:
        value: float | None = getattr(self, limit.value)
        return value


@dataclass(frozen=True, slots=True)
class Envelope:
    name: str
    maxima: Figures

    def limits(self) -> dict[Limit, float]:
        """Each limit's maximum, in Limit's order (a figure left None bounds nothing)."""
        return {limit: most for limit in Limit if (most := self.maxima.value(limit)) is not None}


ENVELOPES: MappingProxyType[str, Envelope] = MappingProxyType(
    {
        "edge": Envelope("edge", Figures(20_000, 1 * GIB, 256 * MB, 300.0)),
        "desktop": Envelope("desktop", Figures(50_000, 2 * GIB, 512 * MB, 200.0)),
        "enterprise": Envelope("enterprise", Figures(1_000_000, 64 * GIB, 8_000 * MB, 500.0)),
    }
)
DEFAULT_ENVELOPE = "desktop"


def envelope_named(name: str) -> Envelope:
    try:
        return ENVELOPES[name.strip().lower()]
    except KeyError:
        choices = ", ".join(ENVELOPES)
        raise ConfigError(f"envelope {name!r} is not one of: {choices}") from None


@dataclass(frozen=True, slots=True)
class Breach:
    limit: Limit
    value: float
    maximum: float

    @property
    def message(self) -> str:
        value, maximum = _show(self.limit, self.value), _show(self.limit, self.maximum)
        return f"{self.limit.value} {value} > {maximum}"


def check(envelope: Envelope, observed: Figures) -> tuple[Breach, ...]:
    """The limits that the observed figures break, in a fixed order. Unmeasured figures pass."""
    breaches = []
    for limit, maximum in envelope.limits().items():
        value = observed.value(limit)
        if value is not None and value > maximum:
            breaches.append(Breach(limit, value, maximum))
    return tuple(breaches)


def status(envelope: Envelope, observed: Figures, breaches: Sequence[Breach]) -> dict[str, object]:
    """The JSON view of an envelope check, as /stats and the bench report show it."""
    return {
        "name": envelope.name,
        "ok": not breaches,
        "limits": {limit.value: maximum for limit, maximum in envelope.limits().items()},
        "observed": {limit.value: observed.value(limit) for limit in Limit},
        "breaches": [
            {"limit": b.limit.value, "value": b.value, "max": b.maximum, "message": b.message}
            for b in breaches
        ],
    }


class EnvelopeWatch:
    """Checks figures against an envelope and logs a warning once when a limit is crossed,
    and an info line when the figure is back within it."""

    def __init__(self, envelope: Envelope) -> None:
        self.envelope = envelope
        self._broken: set[Limit] = set()

    def observe(self, observed: Figures) -> tuple[Breach, ...]:
        breaches = check(self.envelope, observed)
        broken = {b.limit for b in breaches}
        for breach in breaches:
            if breach.limit not in self._broken:
                log.warning(
                    "envelope %s: %s (a soft limit: writes go on)",
                    self.envelope.name,
                    breach.message,
                )
        for limit in self._broken - broken:
            if observed.value(limit) is not None:
                log.info("envelope %s: %s is within its limit again", self.envelope.name, limit)
        self._broken = broken | {limit for limit in self._broken if observed.value(limit) is None}
        return breaches


def _show(limit: Limit, value: float) -> str:
    if limit is Limit.DB_BYTES:
        return f"{value / GIB:.2f} GiB"
    if limit is Limit.RSS_BYTES:
        return f"{value / MB:.0f} MB"
    if limit is Limit.P95_MS:
        return f"{value:.1f} ms"
    return f"{int(value):,}"
