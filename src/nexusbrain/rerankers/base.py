"""The reranker interface."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Reranker(Protocol):
    """Scores how well each text answers a query, higher better, on the model's own scale.
    `model_id` names the exact model, as an embedder's does."""

    @property
    def model_id(self) -> str: ...

    def score(self, query: str, texts: Sequence[str]) -> list[float]: ...
