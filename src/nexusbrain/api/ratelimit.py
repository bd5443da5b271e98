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
from collections.abc import Callable

from nexusbrain.config import RateLimit

MAX_CLIENTS = 10_000


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
