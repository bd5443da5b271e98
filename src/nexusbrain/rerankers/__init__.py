"""Rerankers: (query, text) pairs to scores, behind one small interface (base.py). The search
re-orders its fused top candidates by them (retrieval/rerank.py)."""

from __future__ import annotations

import functools

from nexusbrain.config import ModelSettings, Reranking
from nexusbrain.rerankers.base import Reranker

__all__ = ["QUALITY_TOKENS", "Reranker", "load_reranker"]

# The `quality` reranker reads a candidate's first 128 tokens, and the query's: MiniLM scores
# the fused top better from a passage's opening than from twice as much of it, at half the
# time a search waits (the sweep over the dev sets: docs/tuning.md, "Rerankers and your own
# models"). Its vectors are not the quality profile's (256 tokens), so its model id says so.
QUALITY_TOKENS = 128


@functools.cache
def load_reranker(models: ModelSettings) -> Reranker | None:
    """The reranker the settings name, loaded once per process (None: no reranker)."""
    chosen = models.reranker
    if chosen is Reranking.NONE:
        return None
    if chosen in (Reranking.QUALITY, Reranking.HASHING):
        from nexusbrain.config import Profile
        from nexusbrain.embeddings import load_embedder
        from nexusbrain.embeddings.profiles import minilm
        from nexusbrain.rerankers.cosine import CosineReranker

        if chosen is Reranking.QUALITY:
            return CosineReranker(minilm(QUALITY_TOKENS))
        hashing = load_embedder(Profile.HASHING)
        assert hashing is not None
        return CosineReranker(hashing)
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
