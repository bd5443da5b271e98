"""Per-client rate limiting: a token bucket for each client address.

A client may send `burst` requests at once and `rate` requests per second after that. Loopback
clients (the machine's own agents, the CLI, `nexusbrain bench`) are exempt unless
`limit_loopback` is set. The bucket table is bounded: the least recently seen clients are
forgotten first, which only ever gives a forgotten client a full bucket again.
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from nexusbrain.errors import ConfigError

DEFAULT_RATE = 50.0
DEFAULT_BURST = 100
MAX_CLIENTS = 10_000


@dataclass(frozen=True, slots=True)
class RateLimit:
    rate: float = DEFAULT_RATE  # requests per second per client; 0 turns limiting off
    burst: int = DEFAULT_BURST  # requests a client may send at once
    limit_loopback: bool = False  # loopback clients are exempt unless this is set

    def __post_init__(self) -> None:
        if self.rate < 0 or not math.isfinite(self.rate):
            raise ConfigError(f"rate limit {self.rate} must be a number >= 0 (0 turns it off)")
        if self.burst < 1:
            raise ConfigError(f"rate limit burst {self.burst} must be at least 1")

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> RateLimit:
        """BRAIN_RATE_LIMIT (requests/s, 0 = off), BRAIN_RATE_BURST and
        BRAIN_RATE_LIMIT_LOOPBACK (1 = limit loopback clients too)."""
        return cls(
            rate=_number(environ, "BRAIN_RATE_LIMIT", DEFAULT_RATE),
            burst=int(_number(environ, "BRAIN_RATE_BURST", DEFAULT_BURST)),
            limit_loopback=_flag(environ, "BRAIN_RATE_LIMIT_LOOPBACK"),
        )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class RateLimiter:
    def __init__(self, limit: RateLimit, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # tokens, at

    def exempt(self, client: str | None) -> bool:
        if not self.limit.enabled:
            return True
        # No address means a local transport (a unix socket), which counts as loopback.
        local = client is None or is_loopback(client)
        return local and not self.limit.limit_loopback

    def retry_after(self, client: str | None) -> float:
        """0 when the request may go ahead (it takes a token), else the seconds to wait."""
        if self.exempt(client):
            return 0.0
        key = client or ""
        now = self._clock()
        tokens, at = self._buckets.pop(key, (float(self.limit.burst), now))
        tokens = min(float(self.limit.burst), tokens + (now - at) * self.limit.rate)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / self.limit.rate
        self._buckets[key] = (tokens, now)
        if len(self._buckets) > MAX_CLIENTS:
            self._buckets.popitem(last=False)
        return wait


def retry_after_header(wait: float) -> str:
    """Retry-After takes whole seconds: round up, so that a client that waits gets through."""
    return str(max(1, math.ceil(wait)))


def _number(environ: Mapping[str, str], name: str, default: float) -> float:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None


def _flag(environ: Mapping[str, str], name: str) -> bool:
    raw = environ.get(name, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"{name}={raw!r} is not a boolean: use 1/0, true/false, yes/no or on/off")
