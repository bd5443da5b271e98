"""Accepting connections evenly over `serve --workers N`.

The workers share one listening socket. Left to the kernel and asyncio, whichever worker's
event loop wakes first takes every connection waiting, so eight clients that connect at once
and keep their connections alive could land five on one worker and three on the other, or
six and two, for as long as they stay connected; the busier worker then sets the tail of
every latency. Here each worker counts its open connections in a slot of memory shared by
all of them (an anonymous shared mapping made before the fork), and one that holds more than
the least loaded waits before it accepts, so that a sibling takes the connection. It waits
at most PATIENCE: a sibling that is busy, or stuck, never leaves a client unanswered."""

from __future__ import annotations

import asyncio
import errno
import logging
import mmap
import socket
import struct
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

# Longer than a few of Python's 5 ms GIL switch intervals: a sibling whose search thread
# holds the GIL may take that long to reach its accept.
PATIENCE = 0.02
RECHECK = 0.001  # how often a waiting worker looks at the counts again
_SLOT = struct.Struct("q")  # an aligned 8-byte store, which no reader sees half-written
# out of descriptors or memory: try again later, as asyncio's own accept does
_SCARCE = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


class Shares:
    """Each worker's count of open connections, in memory that the forked workers share:
    each writes its own slot and reads all of them. Make it before forking."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._memory = mmap.mmap(-1, _SLOT.size * workers)  # MAP_SHARED | MAP_ANONYMOUS

    def set(self, slot: int, count: int) -> None:
        _SLOT.pack_into(self._memory, _SLOT.size * slot, count)

    def counts(self) -> tuple[int, ...]:
        return struct.unpack_from(f"{self.workers}q", self._memory)


class Tally(set[Any]):
    """One worker's connections: uvicorn's set of the open ones (its protocols add and
    discard themselves), and a count of those accepted whose protocol is not made yet. Their
    sum is written to the worker's slot at every change."""

    def __init__(self, shares: Shares, slot: int) -> None:
        super().__init__()
        self.shares = shares
        self.slot = slot
        self._pending = 0

    def add(self, item: Any) -> None:
        super().add(item)
        self._publish()

    def discard(self, item: Any) -> None:
        super().discard(item)
        self._publish()

    def accepted(self) -> None:
        self._pending += 1
        self._publish()

    def made(self) -> None:
        """An accepted connection has its protocol (it is in the set), or failed."""
        self._pending -= 1
        self._publish()

    def _publish(self) -> None:
        self.shares.set(self.slot, len(self) + self._pending)


class Acceptor:
    """Accepts on `listener` for one worker's event loop, one connection at a time, and
    hands each to `protocol` as asyncio's own server would."""

    def __init__(
        self,
        listener: socket.socket,
        tally: Tally,
        protocol: Callable[[], asyncio.Protocol],
    ) -> None:
        self._listener = listener
        self._tally = tally
        self._protocol = protocol
        self._loop = asyncio.get_running_loop()
        self._waiting_since = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._open = True
        listener.setblocking(False)
        self._arm()

    def close(self) -> None:
        """Accept no more (the connections already made stay)."""
        self._open = False
        self._loop.remove_reader(self._listener.fileno())
        if self._timer is not None:
            self._timer.cancel()

    def _arm(self) -> None:
        if self._open:
            self._loop.add_reader(self._listener.fileno(), self._ready)

    def _ready(self) -> None:
        """The listener is readable: a connection waits (unless a sibling has taken it)."""
        self._loop.remove_reader(self._listener.fileno())
        self._waiting_since = self._loop.time()
        self._consider()

    def _consider(self) -> None:
        self._timer = None
        if not self._open:
            return
        counts = self._tally.shares.counts()
        patient = self._loop.time() - self._waiting_since < PATIENCE
        if patient and counts[self._tally.slot] > min(counts):
            self._timer = self._loop.call_later(RECHECK, self._consider)
            return
        try:
            conn, _ = self._listener.accept()
        except (BlockingIOError, InterruptedError):
            self._arm()  # nothing waits any more: a sibling took it
            return
        except OSError as exc:
            if exc.errno not in _SCARCE:
                log.warning("accept failed: %s", exc)
                self._arm()
                return
            log.error("cannot accept a connection (%s): trying again in a second", exc)
            self._timer = self._loop.call_later(1.0, self._arm)
            return
        self._tally.accepted()  # counted now, before its protocol exists
        conn.setblocking(False)
        task = self._loop.create_task(self._connect(conn))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self._arm()  # readable again at once if more connections wait

    async def _connect(self, conn: socket.socket) -> None:
        try:
            await self._loop.connect_accepted_socket(self._protocol, sock=conn)
        except OSError as exc:
            log.warning("a connection failed as it was accepted: %s", exc)
            conn.close()
        finally:
            self._tally.made()
