"""An embedder on any server that answers OpenAI's `POST /v1/embeddings`: Ollama, LM Studio,
llama.cpp's server, vLLM, Text Embeddings Inference, OpenAI, or another `nexusbrain serve`.

A write's texts go in batches (`batch` texts a request, `concurrency` requests at once), each
tried again with backoff on 429, 5xx, timeouts and dropped connections (embeddings/http.py).
A search's query goes once, within the search's timeout (`encode_query`). Vectors come back
normalised; an answer of the wrong size or dimension is refused, in words.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from nexusbrain.embeddings.base import Vectors, normalise_rows
from nexusbrain.embeddings.http import ModelServer, Refused
from nexusbrain.errors import ModelUnavailable

BATCH = 32  # texts a request
CONCURRENCY = 4  # requests at once
QUERY_TIMEOUT = 2.0  # seconds a search waits for its query's vector


class RemoteEmbedder:
    def __init__(
        self,
        server: ModelServer,
        model: str,
        *,
        dimensions: int | None = None,
        dim: int | None = None,
        batch: int = BATCH,
        concurrency: int = CONCURRENCY,
        query_timeout: float = QUERY_TIMEOUT,
    ) -> None:
        """`dimensions`: asked of the server (models that can shorten their vectors); `dim`:
        the dimension known already (a brain's recorded model), else asked for once when it
        is first needed."""
        self.server = server
        self.model = model
        self.dimensions = dimensions
        self.batch = batch
        self.concurrency = concurrency
        self.query_timeout = query_timeout
        self._dim = dimensions or dim
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        shortened = f":d{dimensions}" if dimensions else ""
        self._model_id = f"openai:{model}{shortened}"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        """The vectors' dimension: as set or recorded, else from one request."""
        if self._dim is None:
            self._dim = int(self._vectors(["dimension"], retries=0).shape[1])
        return self._dim

    def knows_dim(self, dim: int) -> None:
        """The dimension the brain recorded for this model: no request to learn it, so that
        a brain opens (and takes writes, and searches by keywords) while the server is down."""
        if self._dim is None:
            self._dim = dim

    def encode(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [list(texts[i : i + self.batch]) for i in range(0, len(texts), self.batch)]
        if len(parts) == 1:
            return self._vectors(parts[0])
        return np.concatenate(list(self._workers().map(self._vectors, parts)))

    def encode_query(self, text: str) -> Vectors:
        """One try within the query timeout, none for a few seconds after a failure."""
        found = self._ask(
            [text], lambda body: self.server.ask_now("/embeddings", body, self.query_timeout)
        )
        vector: Vectors = found[0]
        return vector

    def interrupt(self) -> None:
        """Give up the retries of the requests under way, and any later request's (for good:
        the brain is closing; embeddings/http.py)."""
        self.server.interrupt()

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        self.server.close()

    def _workers(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.concurrency, "nexusbrain-embed")
            return self._pool

    def _vectors(self, texts: list[str], retries: int | None = None) -> Vectors:
        return self._ask(texts, lambda body: self.server.post("/embeddings", body, retries=retries))

    def _ask(self, texts: list[str], send: Any) -> Vectors:
        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        try:
            answer = send(body)
        except Refused as exc:
            if exc.status == 404:
                raise ModelUnavailable(self._unknown_model(exc.detail)) from None
            raise
        return normalise_rows(self._rows(answer, len(texts)))

    def _rows(self, answer: Any, count: int) -> Vectors:
        """The answer's vectors in the order of the texts, each checked."""
        where = f"the embedding server at {self.server.url}"
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list) or len(data) != count:
            got = len(data) if isinstance(data, list) else "no"
            raise ModelUnavailable(
                f"{where} answered {got} vectors for {count} texts: is it OpenAI-compatible?"
            )
        rows = sorted(data, key=lambda item: item.get("index", 0) if isinstance(item, dict) else 0)
        try:
            matrix = np.array([item["embedding"] for item in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError):
            raise ModelUnavailable(
                f"{where} answered vectors that are not lists of numbers"
            ) from None
        if matrix.ndim != 2 or not np.isfinite(matrix).all():
            raise ModelUnavailable(f"{where} answered vectors that are not lists of numbers")
        if self._dim is not None and matrix.shape[1] != self._dim:
            raise ModelUnavailable(
                f"{where} answered vectors of {matrix.shape[1]} dimensions for {self.model!r}, "
                f"but this brain's vectors of {self.model_id} have {self._dim}: the model behind "
                "that name has changed; give it another name (BRAIN_EMBED_MODEL) so that the "
                "brain makes new vectors for it"
            )
        return matrix

    def _unknown_model(self, detail: str) -> str:
        """The model is not there: say which models the server has (its /models list)."""
        said = f" ({detail})" if detail else ""
        try:
            listed = self.server.get("/models", timeout=5.0)
            names = [m["id"] for m in listed.get("data", []) if isinstance(m, dict) and "id" in m]
        except (ModelUnavailable, AttributeError, TypeError):
            names = []
        has = f"; it has: {', '.join(names)}" if names else ""
        return (
            f"the embedding server at {self.server.url} has no model {self.model!r}{said}{has}. "
            "Set BRAIN_EMBED_MODEL to one it has"
        )
