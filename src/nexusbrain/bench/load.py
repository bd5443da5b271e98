"""HTTP load against the child server: timed calls from N client threads, and an RSS sampler.

Each client thread has its own connection and takes the next call from a shared queue, so
`clients=1` is a sequential run and `clients=8` keeps eight requests in flight. A latency is
what the client sees: request written, whole response read."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nexusbrain.errors import BrainError, MissingExtra
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
    httpx = _httpx()
    shared = _Shared(iter(calls), keep_bodies)
    urls = [url] if isinstance(url, str) else list(url)

    def client(n: int) -> None:
        with httpx.Client(base_url=urls[n % len(urls)], timeout=300) as http:
            while (call := shared.next()) is not None and not shared.errors:
                try:
                    _one(http, call, shared, total, progress)
                except httpx.HTTPError as exc:
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


def _one(http: Any, call: Call, shared: _Shared, total: int, progress: Progress | None) -> None:
    started = time.perf_counter()
    response = http.request(call.method, call.path, params=call.params, json=call.body)
    elapsed = (time.perf_counter() - started) * 1000
    with shared.lock:
        shared.statuses[response.status_code] += 1
        if not response.is_success:
            hint = " (the rate limit tripped)" if response.status_code == 429 else ""
            shared.errors.append(f"{call.path}: {response.status_code}{hint} {response.text}")
            return
        shared.milliseconds.append(elapsed)
        if shared.keep:
            shared.bodies.append(response.json())
        done = len(shared.milliseconds)
    if progress is not None and (done % 50 == 0 or done == total):
        progress("requests", done, total)


def _httpx() -> Any:
    try:
        import httpx
    except ImportError:
        raise MissingExtra("bench", "httpx") from None
    return httpx


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
    httpx = _httpx()
    deadline = time.perf_counter() + timeout
    with httpx.Client(base_url=url, timeout=timeout) as http:
        while True:
            try:
                response = http.request(call.method, call.path, params=call.params)
                if response.is_success:
                    return time.perf_counter()
                raise BrainError(f"the server answered {response.status_code}: {response.text}")
            except httpx.TransportError:
                if not alive() or time.perf_counter() > deadline:
                    raise BrainError("the server did not answer in time") from None
                time.sleep(0.005)
