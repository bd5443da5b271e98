"""A deterministic hashing embedder for tests: no model, same vectors on every machine."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from nexusbrain.embeddings.base import Vectors, normalise_rows

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Each lower-cased word adds ±1 to two of `dim` buckets (signed feature hashing), so texts
    sharing words get similar vectors. Not a semantic model: it exists so that tests of the
    dense path are exact and fast."""

    def __init__(self, dim: int = 256) -> None:
        self._dim = dim

    @property
    def model_id(self) -> str:
        return f"hashing-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode("utf-8"), digest_size=16).digest()
                for part in (digest[:8], digest[8:]):  # two buckets: a clash rarely erases both
                    value = int.from_bytes(part, "little")
                    out[row, value % self._dim] += 1.0 if (value >> 32) & 1 else -1.0
        return normalise_rows(out)
