"""The load client's own CPU per request: the bench's (http.client) against httpx, over one
served brain, with one client and with several, rounds interleaved.

    python scripts/measure_client.py --db brain.db [--searches 200] [--concurrency 8] \
        [--rounds 2] [--workers 1]

On a machine of two cores the load runs beside the server, so what the client spends is taken
from the server: this says how much. --db is a brain that exists (for instance the one
scripts/measure_concurrency.py builds); its queries are the bench's. Needs httpx (the test
extra has it)."""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import httpx

from nexusbrain.bench.corpus import Corpus, CorpusSpec
from nexusbrain.bench.load import Call, run_calls, wait_for_answer
from nexusbrain.bench.server import ChildServer, child_env
from nexusbrain.envelopes import DEFAULT_ENVELOPE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True, help="a brain that exists")
    parser.add_argument("--documents", type=int, default=20_000, help="the bench scale it holds")
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=1, help="serve --workers")
    args = parser.parse_args()
    queries = Corpus(CorpusSpec()).queries(args.searches, args.documents)
    calls = [Call("GET", "/search", params={"q": q, "k": 10, "mode": "balanced"}) for q in queries]
    clients: dict[str, Callable[[str, list[Call], int], None]] = {
        "http.client": lambda url, todo, n: _check(run_calls(url, todo, clients=n).statuses),
        "httpx": _httpx_load,
    }
    rows: dict[tuple[str, int], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="nexusbrain-client-") as scratch:
        env = child_env(DEFAULT_ENVELOPE)
        log = Path(scratch) / "server.log"
        with ChildServer(args.db, env, log, workers=args.workers) as server:
            wait_for_answer(server.url, calls[0], 300, server.alive)
            run_calls(server.url, calls, clients=args.concurrency)  # warm every worker
            for round_ in range(args.rounds):
                for name, load in clients.items():
                    for n in (1, args.concurrency):
                        cpu, rate = _measured(load, server.url, calls, n)
                        rows.setdefault((name, n), []).append((cpu, rate))
                        print(
                            f"round {round_ + 1} {name}, {n} clients: {cpu:.2f} ms CPU a request,"
                            f" {rate:.1f} req/s",
                            flush=True,
                        )
    print(f"median of {args.rounds} rounds, --workers {args.workers}:")
    for (name, n), figures in rows.items():
        cpu = statistics.median(f[0] for f in figures)
        rate = statistics.median(f[1] for f in figures)
        print(f"  {name}, {n} clients: {cpu:.2f} ms of client CPU a request, {rate:.1f} req/s")


def _measured(
    load: Callable[[str, list[Call], int], None], url: str, calls: list[Call], clients: int
) -> tuple[float, float]:
    """The client process's CPU milliseconds a request (the server is a child: not counted),
    and the requests a second."""
    count = len(calls)
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    load(url, calls, clients)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return cpu * 1000 / count, count / wall


def _httpx_load(url: str, calls: list[Call], clients: int) -> None:
    todo = iter(calls)
    lock = threading.Lock()
    statuses: list[int] = []

    def client() -> None:
        with httpx.Client(base_url=url, timeout=300) as http:
            while True:
                with lock:
                    call = next(todo, None)
                if call is None:
                    return
                response = http.request(call.method, call.path, params=call.params)
                response.read()
                statuses.append(response.status_code)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    _check(statuses)


def _check(statuses: Iterable[int]) -> None:
    bad = [status for status in statuses if not 200 <= status < 300]
    if bad:
        raise SystemExit(f"the server answered {bad}")


if __name__ == "__main__":
    main()
