"""Embedders: text to L2-normalised float32 vectors, behind one small interface."""

from nexusbrain.embeddings.base import Embedder
from nexusbrain.embeddings.profiles import load_embedder

__all__ = ["Embedder", "load_embedder"]
