"""Turns at the search pipeline, taken in the order they were asked for.

`threading.Semaphore` lets a thread that arrives just as a turn is given back take it ahead
of the thread that was woken for it; the woken one then waits again at the back of the
queue. Under load (a server's request threads all asking at once) some searches waited many
turns that way while others waited none. Here a turn given back passes straight to the
longest waiter, so each search waits for the ones that asked before it, no more.
"""

from __future__ import annotations

import threading
from collections import deque
from types import TracebackType


class Turns:
    """At most `at_once` holders at a time, the others served first come, first served. Use
    as a context manager."""

    def __init__(self, at_once: int) -> None:
        if at_once < 1:
            raise ValueError(f"at_once must be at least 1, not {at_once}")
        self._free = at_once
        self._lock = threading.Lock()
        self._waiting: deque[threading.Lock] = deque()  # each waiter's own, held until its turn

    def __enter__(self) -> None:
        with self._lock:
            if self._free:
                self._free -= 1
                return
            mine = threading.Lock()
            mine.acquire()
            self._waiting.append(mine)
        try:
            mine.acquire()  # released by the holder whose turn passes to this waiter
        except BaseException:  # interrupted while waiting: leave the queue, or pass the turn on
            with self._lock:
                if mine in self._waiting:
                    self._waiting.remove(mine)
                    raise
            self._give_back()
            raise

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._give_back()

    def _give_back(self) -> None:
        with self._lock:
            if self._waiting:
                self._waiting.popleft().release()
            else:
                self._free += 1

    @property
    def waiting(self) -> int:
        """How many threads wait for a turn."""
        with self._lock:
            return len(self._waiting)
