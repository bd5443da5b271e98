"""The static embedder's pooling, checked against a straightforward mean pooling."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from nexusbrain.config import Profile
from nexusbrain.embeddings.profiles import MODELS, load_embedder
from nexusbrain.embeddings.static import POOL, pooled_sums

EDGE = MODELS / "edge"


def reference_sums(table: np.ndarray, ids: list[list[int]]) -> np.ndarray:
    """One text at a time: add up its tokens' rows in float64."""
    out = np.zeros((len(ids), table.shape[1]))
    for i, tokens in enumerate(ids):
        for token in tokens:
            out[i] += table[token]
    return out


def reference_encode(texts: list[str]) -> np.ndarray:
    """Mean pooling straight from the model files: truncate, average the rows, normalise."""
    config = json.loads((EDGE / "config.json").read_text(encoding="utf-8"))
    table = load_file(str(EDGE / "model.safetensors"))["embeddings"].astype(np.float64)
    tokenizer = Tokenizer.from_file(str(EDGE / "tokenizer.json"))
    out = np.zeros((len(texts), table.shape[1]))
    for i, text in enumerate(texts):
        ids = tokenizer.encode(text, add_special_tokens=False).ids[: config["max_length"]]
        if ids:
            mean = table[ids].mean(axis=0)
            out[i] = mean / np.linalg.norm(mean)
    return out


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.integers(0, 19), max_size=30), min_size=1, max_size=3 * POOL))
def test_pooled_sums_match_adding_rows_one_by_one(ids: list[list[int]]) -> None:
    table = np.random.default_rng(7).standard_normal((20, 8)).astype(np.float32)
    got = np.concatenate([pooled_sums(table, ids[i : i + POOL]) for i in range(0, len(ids), POOL)])
    assert got.shape == (len(ids), 8) and got.dtype == np.float32
    np.testing.assert_allclose(got, reference_sums(table, ids), rtol=1e-5, atol=1e-5)
    assert not got[[i for i, tokens in enumerate(ids) if not tokens]].any()


def test_edge_vectors_equal_plain_mean_pooling() -> None:
    embedder = load_embedder(Profile.EDGE)
    assert embedder is not None
    long_text = " ".join(["harbour"] * 600 + ["volcano"] * 600)  # past max_length (512)
    texts = [
        "rotate the api key",
        "",
        long_text,
        "the the the cat",
        *(f"note {i} about bees, honey and the {i}th hive" for i in range(2 * POOL + 5)),
        "   ",
    ]
    got = embedder.encode(texts)
    np.testing.assert_allclose(got, reference_encode(texts), atol=1e-6)
    assert not got[1].any() and not got[-1].any()
    harbour = embedder.encode(["harbour"])[0]
    assert got[2] @ harbour > 0.999  # the truncated tail (volcano) is not pooled
