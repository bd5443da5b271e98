"""Rerankers: (query, text) pairs to scores, behind one small interface (base.py). The search
re-orders its fused top candidates by them (retrieval/rerank.py)."""

from __future__ import annotations

import functools

from nexusbrain.config import ModelSettings, Reranking
from nexusbrain.rerankers.base import Reranker

__all__ = ["Reranker", "load_reranker"]


@functools.cache
def load_reranker(models: ModelSettings) -> Reranker | None:
    """The reranker the settings name, loaded once per process (None: no reranker)."""
    chosen = models.reranker
    if chosen is Reranking.NONE:
        return None
    if chosen in (Reranking.QUALITY, Reranking.HASHING):
        from nexusbrain.config import Profile
        from nexusbrain.embeddings import load_embedder
        from nexusbrain.rerankers.cosine import CosineReranker

        profile = Profile.QUALITY if chosen is Reranking.QUALITY else Profile.HASHING
        embedder = load_embedder(profile)
        assert embedder is not None
        return CosineReranker(embedder)
    if chosen is Reranking.ONNX:
        from nexusbrain.rerankers.onnx import CrossEncoder

        assert models.rerank_folder is not None, "onnx needs its folder (config.parse_reranker)"
        return CrossEncoder(models.rerank_folder)
    from nexusbrain.embeddings.http import ModelServer
    from nexusbrain.rerankers.http import HttpReranker

    server = models.rerank_server
    assert server is not None, "http needs its server (config.model_settings)"
    return HttpReranker(
        ModelServer(server.url, "reranking server", api_key=server.api_key),
        server.model,
        timeout=models.timeout,
    )
