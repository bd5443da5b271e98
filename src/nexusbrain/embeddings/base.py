"""The embedder interface."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

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


def normalise_rows(matrix: Vectors) -> Vectors:
    """Scale each row to unit length; all-zero rows stay zero."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    out: Vectors = (matrix / norms).astype(np.float32, copy=False)
    return out
