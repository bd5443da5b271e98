"""A reranker on a server: `POST /rerank` (or `/v1/rerank`) with `{model, query, documents,
top_n}`, answered with `results: [{index, relevance_score}]`, the shape Text Embeddings
Inference, Jina, Cohere and llama.cpp's server share (a bare list of `{index, score}` is taken
too). A search cannot wait: each request is one try within the search's budget, and after a
failure the server is left alone for a few seconds (embeddings/http.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from nexusbrain.embeddings.http import ModelServer, Refused
from nexusbrain.errors import ModelUnavailable

TIMEOUT = 2.0  # seconds a request may take (the search's rerank budget, by default)


class HttpReranker:
    def __init__(self, server: ModelServer, model: str, *, timeout: float = TIMEOUT) -> None:
        self.server = server
        self.model = model
        self.timeout = timeout
        # the path that answered: a base URL with /v1 takes /rerank, one without may want
        # /v1/rerank (both are tried, in that order, until one answers)
        self._paths = ["/rerank"] if server.url.endswith("/v1") else ["/rerank", "/v1/rerank"]

    @property
    def model_id(self) -> str:
        return f"http:{self.model}"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        body = {"model": self.model, "query": query, "documents": list(texts), "top_n": len(texts)}
        for path in list(self._paths):
            try:
                answer = self.server.ask_now(path, body, self.timeout)
            except Refused as exc:
                if exc.status != 404 or path == self._paths[-1]:
                    raise
                self._paths.remove(path)  # that server has the other path
                continue
            return self._scores(answer, len(texts))
        raise AssertionError("unreachable")  # pragma: no cover

    def _scores(self, answer: Any, count: int) -> list[float]:
        rows = answer.get("results") if isinstance(answer, dict) else answer
        where = f"the reranking server at {self.server.url}"
        if not isinstance(rows, list):
            raise ModelUnavailable(f"{where} answered no results list: is it a /rerank server?")
        scores = [math.nan] * count
        for row in rows:
            try:
                index = int(row["index"])
                value = float(row.get("relevance_score", row.get("score")))
            except (KeyError, TypeError, ValueError):
                raise ModelUnavailable(
                    f"{where} answered a result without index and score"
                ) from None
            if 0 <= index < count:
                scores[index] = value
        if any(math.isnan(s) for s in scores):
            missing = sum(math.isnan(s) for s in scores)
            raise ModelUnavailable(f"{where} scored {count - missing} of the {count} texts")
        return scores
