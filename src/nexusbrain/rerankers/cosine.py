"""A reranker from an embedder: the cosine of the query's vector and each candidate's.

`quality` is the quality profile's MiniLM over an `edge` brain: the fast static model ingests
and ranks, and MiniLM re-scores only the fused top candidates, not the whole brain. The
candidates' vectors are kept by the hash of their text (least recently used out first), so
a candidate seen by an earlier search is not embedded again; the query's too.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from nexusbrain.embeddings.base import Embedder, Vectors

CACHE = 20_000  # candidate vectors kept: ~30 MB of MiniLM's 384-dimension float32 rows


class CosineReranker:
    def __init__(self, embedder: Embedder, *, cache: int = CACHE) -> None:
        self.embedder = embedder
        self._kept: OrderedDict[bytes, Vectors] = OrderedDict()
        self._size = cache
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return f"cosine:{self.embedder.model_id}"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        keys = [_key(t) for t in [query, *texts]]
        vectors = self._vectors(keys, [query, *texts])
        found: list[float] = (vectors[1:] @ vectors[0]).tolist()
        return found

    def _vectors(self, keys: list[bytes], texts: list[str]) -> Vectors:
        with self._lock:
            known = {k: self._kept[k] for k in keys if k in self._kept}
            for k in known:
                self._kept.move_to_end(k)
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in known}
        if todo:
            made = self.embedder.encode(list(todo.values()))
            fresh = dict(zip(todo, made, strict=True))
            known.update(fresh)
            with self._lock:
                self._kept.update(fresh)
                while len(self._kept) > self._size:
                    self._kept.popitem(last=False)
        return np.array([known[k] for k in keys], dtype=np.float32)

    def cached(self) -> int:
        """How many vectors are kept."""
        return len(self._kept)


def _key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()
