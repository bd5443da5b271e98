"""A cross-encoder exported to ONNX, in a folder a user downloaded (`BRAIN_RERANKER=onnx:DIR`:
ms-marco-MiniLM-L6-v2, bge-reranker-base...): `model.onnx` (or `onnx/model.onnx`),
`tokenizer.json`, and `config.json` for the token limit. Each (query, text) pair is one
input, cut at the limit, run in batches of similar length; the score is the graph's logit
(with two, the second's lead over the first: the "relevant" class)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nexusbrain.embeddings.digest import digest
from nexusbrain.embeddings.folder import graph_of, read_json, tokenizer_of
from nexusbrain.embeddings.onnx import cores, fix_mmap_threshold, length_batches, session_options
from nexusbrain.errors import ConfigError, MissingExtra

TOKENS = 512  # the pair's tokens when the folder does not say


class CrossEncoder:
    def __init__(self, folder: Path, *, threads: int | None = None) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise MissingExtra("quality", exc.name or "onnxruntime") from None
        from tokenizers import Tokenizer

        folder = folder.resolve()
        graph, tokenizer = graph_of(folder), tokenizer_of(folder)
        config = read_json(folder / "config.json") or {}
        self.max_tokens = min(int(config.get("max_position_embeddings") or TOKENS), TOKENS)
        fix_mmap_threshold()
        self._session: Any = ort.InferenceSession(
            str(graph), session_options(threads or cores()), providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.enable_truncation(self.max_tokens)
        self._tokenizer.no_padding()
        self._model_id = f"onnx:{folder.name}:{digest(graph, tokenizer)[:12]}"

    @property
    def model_id(self) -> str:
        return self._model_id

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        pairs = self._tokenizer.encode_batch([(query, t) for t in texts])
        out = np.zeros(len(texts), dtype=np.float32)
        for run in length_batches([len(p.ids) for p in pairs]):
            out[run] = self._run([pairs[i] for i in run])
        found: list[float] = out.tolist()
        return found

    def _run(self, pairs: Sequence[Any]) -> np.ndarray:
        width = max(len(p.ids) for p in pairs)
        ids = np.zeros((len(pairs), width), dtype=np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros_like(ids)
        for row, pair in enumerate(pairs):
            ids[row, : len(pair.ids)] = pair.ids
            types[row, : len(pair.type_ids)] = pair.type_ids
            mask[row, : len(pair.ids)] = 1
        given = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        feeds = {name: value for name, value in given.items() if name in self._inputs}
        logits = np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)
        if logits.ndim == 1:
            return logits
        if logits.ndim != 2 or logits.shape[1] not in (1, 2):
            raise ConfigError(
                f"{self._model_id}: the graph answers logits of shape {logits.shape}, not one or "
                "two a pair: is it a cross-encoder?"
            )
        scores: np.ndarray = logits[:, 0] if logits.shape[1] == 1 else logits[:, 1] - logits[:, 0]
        return scores
