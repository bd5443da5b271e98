"""Model servers on loopback for the tests: a real `nexusbrain serve` as the provider, and a
small server that misbehaves on cue (slow, 429, 500, 401, an unknown model, the wrong
dimension, a dropped connection) and otherwise answers as an OpenAI-compatible embedder and a
/rerank server would, with the hashing model's vectors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from nexusbrain import discovery
from nexusbrain.embeddings.hashing import HashingEmbedder

PYTHON = sys.executable


def environment(**extra: str) -> dict[str, str]:
    """This process's environment without its BRAIN_ settings, on the hashing embedder and
    with no server started in the background (cli/autoserve.py), then `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    return env | {"BRAIN_EMBEDDER": "hashing", "BRAIN_AUTOSERVE": "0"} | extra


@dataclass
class Serve:
    """A real `nexusbrain serve` process."""

    db: Path
    process: subprocess.Popen[bytes]
    url: str

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.communicate(timeout=30)


@contextmanager
def serve(db: Path, **env: str) -> Iterator[Serve]:
    """`nexusbrain serve` on a free port for the brain at `db`, with these BRAIN_* settings."""
    process = subprocess.Popen(
        [PYTHON, "-m", "nexusbrain", "--db", str(db), "serve", "--port", "0"],
        env=environment(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while True:
        found = discovery.find(db)
        if found is not None and found.pid == process.pid:
            break
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"serve did not start: {process.communicate()[1].decode()}")
        time.sleep(0.05)
    served = Serve(db, process, found.url)
    try:
        yield served
    finally:
        served.stop()


class Misbehaving:
    """A model server on loopback. Each request takes the next behaviour of `script` (then
    "ok"): "ok", "slow" (sleeps `delay` seconds first), "429" (with Retry-After: 1), "500",
    "401", "404", "wrong-dim", "drop" (closes the connection unanswered). It counts the
    requests, and the most it had in flight at once."""

    def __init__(self, dim: int = 64, delay: float = 2.0) -> None:
        self.embedder = HashingEmbedder(dim)
        self.delay = delay
        self.script: deque[str] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.failing: str | None = None  # every request behaves so while set ("drop", "slow")
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> Misbehaving:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def next(self) -> str:
        with self._lock:
            if self.failing is not None:
                return self.failing
            return self.script.popleft() if self.script else "ok"

    def answer(self, path: str, body: dict[str, Any], behaviour: str) -> tuple[int, Any]:
        if behaviour in ("429", "500", "401"):
            return int(behaviour), {"error": {"message": f"told to answer {behaviour}"}}
        if path.endswith("/models"):
            return 200, {"object": "list", "data": [{"id": "hash-64"}, {"id": "hash-small"}]}
        if behaviour == "404" or body.get("model") not in ("hash-64", "hash-small"):
            return 404, {"error": {"message": f"model {body.get('model')!r} not found"}}
        if path.endswith("/rerank"):
            texts = [body["query"], *body["documents"]]
            vectors = self.embedder.encode(texts)
            scores = (vectors[1:] @ vectors[0]).tolist()
            order = sorted(range(len(scores)), key=lambda i: -scores[i])[: body.get("top_n")]
            return 200, {"results": [{"index": i, "relevance_score": scores[i]} for i in order]}
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = self.embedder.encode(texts) * 3.0  # not unit length: the client normalises
        if behaviour == "wrong-dim":
            vectors = np.zeros((len(texts), self.embedder.dim + 1), dtype=np.float32)
        data = [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
        data.reverse()  # out of order: the client sorts by index
        return 200, {"object": "list", "data": data, "model": body["model"]}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._reply({})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self._reply(json.loads(self.rfile.read(length) or b"{}"))

            def _reply(self, body: dict[str, Any]) -> None:
                behaviour = owner.next()
                with owner._lock:
                    owner.requests.append({"path": self.path, **body})
                    owner.headers.append(dict(self.headers))
                    owner.in_flight += 1
                    owner.most_in_flight = max(owner.most_in_flight, owner.in_flight)
                try:
                    if behaviour == "drop":
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    time.sleep(owner.delay if behaviour == "slow" else 0.02)
                    status, answer = owner.answer(self.path, body, behaviour)
                    data = json.dumps(answer).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    if status == 429:
                        self.send_header("Retry-After", "1")
                    self.end_headers()
                    self.wfile.write(data)
                finally:
                    with owner._lock:
                        owner.in_flight -= 1

        return Handler


def wait_for(condition: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def get(url: str, path: str) -> Any:
    return httpx.get(url + path, timeout=30).json()
