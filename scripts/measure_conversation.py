"""Wall time of one `POST /ingest/conversation` of one session of N turns, through a real
`nexusbrain serve` on loopback: the answer's status, the seconds from sending the body to
reading the answer, and the CPU seconds the server process spent meanwhile (what the wall
time would be on an idle core: the figure a loaded machine inflates least).

    python scripts/measure_conversation.py --turns 16000 100000 --embedder hashing edge \
        [--tree /path/to/checkout/src ...] [--rounds 2]

Each --tree (a source folder put first on PYTHONPATH; none: the installed package) gets a
fresh brain and a server of its own for each measurement; the trees take turns within each
round, so that an A/B comparison is paired and interleaved.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import httpx
import psutil


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[16_000, 100_000])
    parser.add_argument("--embedder", nargs="+", default=["hashing", "edge"])
    parser.add_argument("--tree", action="append", default=[], help="a src folder to serve")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    for round_ in range(args.rounds):
        for turns in args.turns:
            body = _body(turns)
            for embedder in args.embedder:
                for tree in args.tree or [""]:
                    status, seconds, cpu = _measure(tree, embedder, body)
                    print(
                        f"round {round_ + 1} tree={tree or 'installed'} embedder={embedder} "
                        f"turns={turns} bytes={len(body)}: {status} in {seconds:.2f} s "
                        f"(server CPU {cpu:.2f} s)",
                        flush=True,
                    )


def _body(turns: int) -> bytes:
    said = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} about topic {i % 97}"}
        for i in range(turns)
    ]
    return json.dumps({"sessions": [{"id": "long", "turns": said}]}).encode()


def _measure(tree: str, embedder: str, body: bytes) -> tuple[int, float, float]:
    env = {**os.environ, "BRAIN_EMBEDDER": embedder, "OMP_NUM_THREADS": "1"}
    if tree:
        env["PYTHONPATH"] = tree
    with tempfile.TemporaryDirectory(prefix="nexusbrain-conversation-") as scratch:
        port = _free_port()
        command = [sys.executable, "-m", "nexusbrain", "--db", f"{scratch}/brain.db"]
        server = subprocess.Popen(
            [*command, "serve", "--port", str(port), "--workers", "1", "--log-level", "warning"],
            env=env,
            stdout=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait(url)
            process = psutil.Process(server.pid)
            cpu, started = sum(process.cpu_times()[:2]), time.perf_counter()
            answer = httpx.post(
                f"{url}/ingest/conversation",
                content=body,
                headers={"content-type": "application/json"},
                timeout=3600,
            )
            seconds = time.perf_counter() - started
            return answer.status_code, seconds, sum(process.cpu_times()[:2]) - cpu
        finally:
            server.terminate()
            server.wait(timeout=60)


def _wait(url: str) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/health", timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit(f"no server answered at {url}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


if __name__ == "__main__":
    main()
