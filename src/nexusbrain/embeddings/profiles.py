"""Embedding profiles: `edge` (the default, a static model shipped in this package), `quality`
(a small transformer on ONNX Runtime, an install extra), `hashing` (tests), `none` (lexical
only), and a user's own model: `openai` (any OpenAI-compatible server) or `onnx:DIR` (a
sentence-transformers folder exported to ONNX). docs/design/models.md.
"""

from __future__ import annotations

import functools
from pathlib import Path

from nexusbrain.config import ModelSettings, Profile
from nexusbrain.embeddings.base import Embedder

MODELS = Path(__file__).resolve().parent.parent / "data" / "models"
SHIPPED = ModelSettings()  # what the shipped profiles need: nothing beyond their names


def centred(profile: Profile) -> bool:
    """Whether dense similarities are taken around the corpus's mean vector: the edge model's
    vectors share one strong direction, MiniLM's do not (docs/tuning.md), nor do those of the
    transformers users bring."""
    return profile in (Profile.EDGE, Profile.HASHING)


@functools.cache
def minilm(max_tokens: int | None = None) -> Embedder:
    """The quality profile's MiniLM, loaded once per process for each cut: `max_tokens` tokens
    a text (None: the profile's own). The quality reranker reads a shorter cut."""
    from nexusbrain.embeddings.onnx import OnnxEmbedder

    if max_tokens is None:
        return OnnxEmbedder(tokenizer_dir=MODELS / "minilm")
    return OnnxEmbedder(tokenizer_dir=MODELS / "minilm", max_tokens=max_tokens)


@functools.cache
def load_embedder(
    profile: Profile, models: ModelSettings = SHIPPED, *, dim: int | None = None
) -> Embedder | None:
    """The embedder of a profile, loaded once per process (models are read-only). `dim`: a
    server model's dimension when it is known already (the brain's record of it)."""
    if profile is Profile.NONE:
        return None
    if profile is Profile.HASHING:
        from nexusbrain.embeddings.hashing import HashingEmbedder

        return HashingEmbedder()
    if profile is Profile.QUALITY:
        return minilm()
    if profile is Profile.ONNX:
        from nexusbrain.embeddings.folder import folder_embedder

        assert models.embed_folder is not None, "onnx needs its folder (config.parse_embedder)"
        return folder_embedder(models.embed_folder)
    if profile is Profile.OPENAI:
        from nexusbrain.embeddings.http import ModelServer
        from nexusbrain.embeddings.remote import RemoteEmbedder

        server = models.embed_server
        assert server is not None, "openai needs its server (config.model_settings)"
        return RemoteEmbedder(
            ModelServer(server.url, "embedding server", api_key=server.api_key),
            server.model,
            dimensions=models.dimensions,
            dim=dim,
            batch=models.batch,
            query_timeout=models.timeout,
        )
    from nexusbrain.embeddings.static import StaticEmbedder

    return StaticEmbedder(MODELS / "edge", name="edge")


def embeds_in_background(profile: Profile) -> bool:
    """Whether writes leave embedding to a background thread (retrieval/background.py): for a
    profile whose model takes longer than a write, and for a model on a server, which may be
    slow or down (a write never waits for it). The edge model embeds a chunk in ~0.03 ms and
    the hashing one faster, so they embed inside the write; the quality model takes ~25-50 ms
    a chunk on two cores (docs/design/embedding.md)."""
    return profile in (Profile.QUALITY, Profile.OPENAI, Profile.ONNX)
