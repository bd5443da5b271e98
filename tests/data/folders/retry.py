"""Retrying calls to the card network."""

import time
from collections.abc import Callable


def backoff(attempt: int) -> float:
    """Seconds to wait before retry `attempt`: doubling from half a second, at most 30."""
    return min(30.0, 0.5 * 2**attempt)


def call_with_retries(send: Callable[[], bytes], attempts: int = 5) -> bytes:
    """Send, retrying a timeout up to `attempts` times with backoff; other errors are raised."""
    for attempt in range(attempts):
        try:
            return send()
        except TimeoutError:
            time.sleep(backoff(attempt))
    raise TimeoutError(f"no answer after {attempts} attempts")
