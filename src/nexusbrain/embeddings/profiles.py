"""Embedding profiles: `edge` (the default, a static model shipped in this package), `quality`
(a small transformer on ONNX Runtime, an install extra), `hashing` (tests), `none` (lexical only).
"""

from __future__ import annotations

import functools
from enum import StrEnum
from pathlib import Path

from nexusbrain.embeddings.base import Embedder
from nexusbrain.errors import ConfigError

MODELS = Path(__file__).resolve().parent.parent / "data" / "models"


class Profile(StrEnum):
    EDGE = "edge"
    QUALITY = "quality"
    HASHING = "hashing"
    NONE = "none"


def parse_profile(name: str) -> Profile:
    try:
        return Profile(name.strip().lower())
    except ValueError:
        choices = ", ".join(p.value for p in Profile)
        raise ConfigError(f"embedding profile {name!r} is not one of: {choices}") from None


def centred(profile: Profile) -> bool:
    """Whether dense similarities are taken around the corpus's mean vector. The edge model's
    vectors share one strong direction, and centring them helped on every dev set; MiniLM's
    do not, and centring them cost 0.01 nDCG@10 on SciFact (docs/tuning.md)."""
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
