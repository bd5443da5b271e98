"""HTTP load against the child server: timed calls from N client threads, and an RSS sampler.

Each client thread has its own kept-alive connection and takes the next call from a shared
queue, so `clients=1` is a sequential run and `clients=8` keeps eight requests in flight. A
latency is what the client sees: request written, whole response read.

The client is the standard library's http.client: on a machine of two cores the load runs
beside the server, and every millisecond of CPU the client spends is taken from the server
(docs/design/bench.md compares it with httpx)."""

from __future__ import annotations

import http.client
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from nexusbrain.errors import BrainError
from nexusbrain.records import Progress


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    path: str
    params: Mapping[str, str | int] | None = None
    body: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class LoadResult:
    milliseconds: tuple[float, ...]
    wall_seconds: float
    statuses: Mapping[int, int]
    bodies: tuple[Any, ...] = ()


@dataclass
class _Shared:
    calls: Iterator[Call]
    keep: bool
    lock: threading.Lock = field(default_factory=threading.Lock)
    milliseconds: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    bodies: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def next(self) -> Call | None:
        with self.lock:
            return next(self.calls, None)


def run_calls(
    url: str | Sequence[str],
    calls: Iterable[Call],
    *,
    clients: int = 1,
    keep_bodies: bool = False,
    total: int = 0,
    progress: Progress | None = None,
) -> LoadResult:
    """Send every call; fail on the first answer that is not 2xx (a 429 names the limit).
    Given several urls (replicas of one brain), client n talks to url n mod their count."""
    shared = _Shared(iter(calls), keep_bodies)
    urls = [url] if isinstance(url, str) else list(url)

    def client(n: int) -> None:
        with Connection(urls[n % len(urls)], timeout=300) as conn:
            while (call := shared.next()) is not None and not shared.errors:
                try:
                    _one(conn, call, shared, total, progress)
                except (OSError, http.client.HTTPException) as exc:
                    with shared.lock:
                        shared.errors.append(f"{call.path}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    if shared.errors:
        raise BrainError(f"the bench got an error answer: {shared.errors[0]}")
    return LoadResult(tuple(shared.milliseconds), wall, dict(shared.statuses), tuple(shared.bodies))


class Connection:
    """One kept-alive HTTP/1.1 connection to a server at `url` (http://host:port)."""

    def __init__(self, url: str, timeout: float) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or parts.hostname is None:
            raise BrainError(f"the bench talks plain http to a host: got {url!r}")
        self._conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
        self._kept = False  # the connection is open from an earlier exchange

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.close()

    def request(self, call: Call) -> tuple[int, bytes]:
        """The answer's status and body. A kept-alive connection that the server has closed
        meanwhile is made again once, as any HTTP client does: the server read nothing."""
        path = call.path
        if call.params:
            path += "?" + urllib.parse.urlencode(call.params)
        body = None if call.body is None else orjson.dumps(call.body)
        headers = {} if body is None else {"Content-Type": "application/json"}
        reused = self._kept
        try:
            return self._exchange(call.method, path, body, headers)
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            if not reused:
                raise
            self._conn.close()
            return self._exchange(call.method, path, body, headers)

    def _exchange(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes]:
        self._kept = False
        self._conn.request(method, path, body=body, headers=headers)
        response = self._conn.getresponse()
        content = response.read()
        self._kept = not response.will_close
        return response.status, content


def _one(
    conn: Connection, call: Call, shared: _Shared, total: int, progress: Progress | None
) -> None:
    started = time.perf_counter()
    status, content = conn.request(call)
    elapsed = (time.perf_counter() - started) * 1000
    with shared.lock:
        shared.statuses[status] += 1
        if not 200 <= status < 300:
            hint = " (the rate limit tripped)" if status == 429 else ""
            text = content.decode("utf-8", "replace")
            shared.errors.append(f"{call.path}: {status}{hint} {text}")
            return
        shared.milliseconds.append(elapsed)
        if shared.keep:
            shared.bodies.append(orjson.loads(content))
        done = len(shared.milliseconds)
    if progress is not None and (done % 50 == 0 or done == total):
        progress("requests", done, total)


class RssSampler:
    """The peak of `read()` (a process's RSS) while the block runs, sampled every 20 ms."""

    def __init__(self, read: Callable[[], int], every: float = 0.02) -> None:
        self.read = read
        self.every = every
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssSampler:
        self.peak = self.read()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()

    def _sample(self) -> None:
        try:
            self.peak = max(self.peak, self.read())
        except Exception:  # the process may be gone at the very end
            return


def wait_for_answer(url: str, call: Call, timeout: float, alive: Callable[[], bool]) -> float:
    """Poll until `call` gets a 2xx answer; the perf_counter time it did."""
    deadline = time.perf_counter() + timeout
    while True:
        try:
            with Connection(url, timeout=timeout) as conn:
                status, content = conn.request(call)
            if 200 <= status < 300:
                return time.perf_counter()
            text = content.decode("utf-8", "replace")
            raise BrainError(f"the server answered {status}: {text}")
        except (OSError, http.client.HTTPException):
            if not alive() or time.perf_counter() > deadline:
                raise BrainError("the server did not answer in time") from None
            time.sleep(0.005)
