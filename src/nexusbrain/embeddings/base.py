"""The embedder interface."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

Vectors = NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into unit-length float32 rows. `model_id` names the exact weights, so a
    stored vector is reused only with the model that made it."""

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> Vectors: ...


@runtime_checkable
class QueryEncoder(Protocol):
    """An embedder whose model runs elsewhere: a search's query goes through `encode_query`,
    which waits at most the search's timeout, once, and raises errors.ModelUnavailable
    rather than hold the search (texts of a write go through `encode`, with retries)."""

    def encode_query(self, text: str) -> NDArray[np.float32]: ...


def normalise_rows(matrix: Vectors) -> Vectors:
    """Scale each row to unit length; all-zero rows stay zero."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    out: Vectors = (matrix / norms).astype(np.float32, copy=False)
    return out
