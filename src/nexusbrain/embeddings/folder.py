"""A sentence-transformers model exported to ONNX, in a folder a user downloaded
(`BRAIN_EMBEDDER=onnx:DIR`): how to run it comes from the folder's own files.

    DIR/model.onnx (or DIR/onnx/model.onnx)  the graph
    DIR/tokenizer.json                       the tokenizer (its special tokens too)
    DIR/modules.json                         the pipeline: Transformer, Pooling, Normalize
    DIR/1_Pooling/config.json                pooling_mode_mean_tokens / _cls_token / _max_tokens
    DIR/sentence_bert_config.json            max_seq_length: the token limit
    DIR/config.json                          max_position_embeddings, when nothing else says

Vectors are stored unit length whatever modules.json says (the dense index ranks by cosine).
The model id names the folder and a digest of the graph and tokenizer, with the token limit,
so that vectors of other weights are never mixed with these.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nexusbrain.embeddings.digest import digest
from nexusbrain.embeddings.onnx import OnnxEncoder
from nexusbrain.errors import ConfigError

DEFAULT_TOKENS = 512


def graph_of(folder: Path) -> Path:
    """The folder's ONNX graph; ConfigError naming what is missing."""
    if not folder.is_dir():
        raise ConfigError(f"{folder} is not a folder: onnx:DIR names a model's folder")
    for candidate in (folder / "model.onnx", folder / "onnx" / "model.onnx"):
        if candidate.is_file():
            return candidate
    raise ConfigError(
        f"no model.onnx in {folder} (nor in {folder / 'onnx'}): export the model to ONNX, "
        "e.g. with optimum-cli export onnx --model NAME DIR"
    )


def tokenizer_of(folder: Path) -> Path:
    path = folder / "tokenizer.json"
    if not path.is_file():
        raise ConfigError(f"no tokenizer.json in {folder}: the model's fast tokenizer is needed")
    return path


def read_json(path: Path) -> Any:
    """A config file's contents, or None when it is not there."""
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} cannot be read as JSON: {exc}") from None


def pooling_of(folder: Path) -> str:
    """mean, cls or max, from the Pooling module's config (mean when there is none)."""
    modules = read_json(folder / "modules.json") or []
    where = next(
        (m.get("path") for m in modules if str(m.get("type", "")).endswith("Pooling")), None
    )
    config = read_json(folder / (where or "1_Pooling") / "config.json") or {}
    chosen = [
        how
        for how, key in (
            ("cls", "pooling_mode_cls_token"),
            ("mean", "pooling_mode_mean_tokens"),
            ("max", "pooling_mode_max_tokens"),
        )
        if config.get(key)
    ]
    if len(chosen) > 1:
        raise ConfigError(f"{folder}: pooling by {' and '.join(chosen)} at once is not supported")
    others = [k for k, v in config.items() if k.startswith("pooling_mode") and v]
    if not chosen and others:
        raise ConfigError(f"{folder}: the pooling {others[0]} is not supported (mean, cls, max)")
    return chosen[0] if chosen else "mean"


def token_limit(folder: Path) -> int:
    """max_seq_length (sentence_bert_config.json), else the tokenizer's truncation, else the
    model's max_position_embeddings, else 512."""
    bert = read_json(folder / "sentence_bert_config.json") or {}
    if bert.get("max_seq_length"):
        return int(bert["max_seq_length"])
    tokenizer = read_json(folder / "tokenizer.json") or {}
    if (tokenizer.get("truncation") or {}).get("max_length"):
        return int(tokenizer["truncation"]["max_length"])
    config = read_json(folder / "config.json") or {}
    return int(config.get("max_position_embeddings") or DEFAULT_TOKENS)


def folder_embedder(folder: Path, *, threads: int | None = None) -> OnnxEncoder:
    """The embedder of a sentence-transformers folder exported to ONNX."""
    folder = folder.resolve()
    graph, tokenizer = graph_of(folder), tokenizer_of(folder)
    pooling, tokens = pooling_of(folder), token_limit(folder)
    model_id = f"onnx:{folder.name}:{digest(graph, tokenizer)[:12]}:{pooling}:t{tokens}"
    return OnnxEncoder(
        graph, tokenizer, model_id=model_id, pooling=pooling, max_tokens=tokens, threads=threads
    )
