"""Embedding profiles: `edge` (the default, a static model shipped in this package), `quality`
(a small transformer on ONNX Runtime, an install extra), `hashing` (tests), `none` (lexical only).
"""

from __future__ import annotations

import functools
from pathlib import Path

from nexusbrain.config import Profile
from nexusbrain.embeddings.base import Embedder

MODELS = Path(__file__).resolve().parent.parent / "data" / "models"


def centred(profile: Profile) -> bool:
    """Whether dense similarities are taken around the corpus's mean vector: the edge model's
    vectors share one strong direction, MiniLM's do not (docs/tuning.md)."""
    return profile is not Profile.QUALITY


@functools.cache
def load_embedder(profile: Profile) -> Embedder | None:
    """The embedder of a profile, loaded once per process (models are read-only)."""
    if profile is Profile.NONE:
        return None
    if profile is Profile.HASHING:
        from nexusbrain.embeddings.hashing import HashingEmbedder

        return HashingEmbedder()
    if profile is Profile.QUALITY:
        from nexusbrain.embeddings.onnx import OnnxEmbedder

        return OnnxEmbedder(tokenizer_dir=MODELS / "minilm")
    from nexusbrain.embeddings.static import StaticEmbedder

    return StaticEmbedder(MODELS / "edge", name="edge")


def embeds_in_background(profile: Profile) -> bool:
    """Whether writes leave embedding to a background thread (retrieval/background.py): only
    for a profile whose model takes longer than a write. The edge model embeds a chunk in
    ~0.03 ms and the hashing one faster, so they embed inside the write; the quality model takes
    ~25-50 ms a chunk on two cores (docs/design/embedding.md)."""
    return profile is Profile.QUALITY
