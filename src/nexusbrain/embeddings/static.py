"""Static embeddings (model2vec format): a token-embedding table, mean-pooled. numpy only.

A model directory holds `config.json`, `tokenizer.json` (Hugging Face tokenizers) and
`model.safetensors` with `embeddings` [vocab, dim] (float32, float16 or int8) and optionally
`weights` [vocab] (a per-token scale) and `mapping` [vocab] (rows shared between tokens).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import chain
from pathlib import Path

import numpy as np

from nexusbrain.embeddings.base import Vectors, normalise_rows
from nexusbrain.embeddings.digest import read_with_digest
from nexusbrain.embeddings.wordpiece import TokenIds
from nexusbrain.errors import ConfigError, MissingExtra

BATCH = 1024
POOL = 32  # texts pooled at once: their counts matrix and rows stay in cache


class StaticEmbedder:
    def __init__(self, path: Path, *, name: str | None = None) -> None:
        try:
            from safetensors.numpy import load
        except ImportError as exc:  # pragma: no cover - a core dependency
            raise MissingExtra("edge", exc.name or "safetensors") from None
        if not (path / "model.safetensors").exists():
            raise ConfigError(f"no static model at {path}: model.safetensors is missing")
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        # the id holds the digest of the very bytes loaded, remembered between processes
        weights, digest = read_with_digest(path / "model.safetensors")
        tensors = load(weights)
        # Kept in the stored dtype (int8 for the edge model, a quarter of float32's memory);
        # pooling converts only the rows a batch uses, to the same float32 values.
        table = tensors["embeddings"]
        if "mapping" in tensors:
            table = table[tensors["mapping"].astype(np.int64)]
        if "weights" in tensors:
            table = table.astype(np.float32) * tensors["weights"].astype(np.float32)[:, None]
        self._table = np.ascontiguousarray(table)
        self._tokens = TokenIds(path / "tokenizer.json")
        self._max_tokens = int(config.get("max_length") or 512)
        self._model_id = f"static:{name or path.name}:{digest[:12]}"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return int(self._table.shape[1])

    def encode(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), BATCH):
            out[start : start + BATCH] = self._encode_batch(texts[start : start + BATCH])
        return out

    def _encode_batch(self, texts: Sequence[str]) -> Vectors:
        ids = [found[: self._max_tokens] for found in self._tokens(texts)]
        sums = np.zeros((len(ids), self.dim), dtype=np.float32)
        for start in range(0, len(ids), POOL):
            sums[start : start + POOL] = pooled_sums(self._table, ids[start : start + POOL])
        return normalise_rows(sums)


def pooled_sums(table: np.ndarray, ids: Sequence[Sequence[int]]) -> Vectors:
    """The sum of each text's token rows, as `counts (texts x distinct tokens) @ table[distinct]`:
    one small gather per batch instead of one row per token."""
    lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    flat = np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum()))
    if not flat.size:
        return np.zeros((len(ids), table.shape[1]), dtype=np.float32)
    distinct, column = np.unique(flat, return_inverse=True)
    cell = np.repeat(np.arange(len(ids)) * len(distinct), lengths) + column
    counts = np.bincount(cell, minlength=len(ids) * len(distinct)).astype(np.float32)
    rows = table[distinct].astype(np.float32, copy=False)
    out: Vectors = counts.reshape(len(ids), len(distinct)) @ rows
    return out
