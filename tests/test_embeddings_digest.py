"""The models' digests (embeddings/digest.py), remembered between processes: what is
remembered is used only while the files are as they were, and never for a file that changed."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from nexusbrain.embeddings.digest import digest, read_with_digest
from nexusbrain.embeddings.profiles import MODELS
from nexusbrain.embeddings.static import StaticEmbedder


def sha256(*paths: Path) -> str:
    return hashlib.sha256(b"".join(path.read_bytes() for path in paths)).hexdigest()


def entries(cache: Path) -> list[Path]:
    return sorted((cache / "digests").glob("*.json"))


def rewrite_in_place(path: Path, data: bytes) -> None:
    """New bytes of the same length, and the modification time set back as it was."""
    before = path.stat()
    time.sleep(0.05)  # past the file system clock's tick: the change time moves
    with path.open("r+b") as handle:
        handle.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    assert path.stat().st_size == before.st_size


def test_a_digest_is_remembered_and_used_while_the_file_is_unchanged(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"a" * 3000)
    assert digest(weights, cache=cache, settle=0) == sha256(weights)
    [entry] = entries(cache)
    # What is remembered is what a second process reads: a value planted in the entry
    # comes back, so the file was not hashed again.
    known = json.loads(entry.read_text(encoding="utf-8"))
    entry.write_text(json.dumps({**known, "sha256": "f" * 64}), encoding="utf-8")
    assert digest(weights, cache=cache, settle=0) == "f" * 64
    assert read_with_digest(weights, cache=cache, settle=0) == (weights.read_bytes(), "f" * 64)


@pytest.mark.parametrize("read", [False, True])
def test_a_file_changed_in_place_is_hashed_again(tmp_path: Path, read: bool) -> None:
    """Same path, same size, the modification time put back: the change time tells."""
    cache = tmp_path / "cache"
    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"a" * 3000)

    def digest_of() -> str:
        if read:
            return read_with_digest(weights, cache=cache, settle=0)[1]
        return digest(weights, cache=cache, settle=0)

    first = digest_of()
    assert entries(cache)
    rewrite_in_place(weights, b"b")
    second = digest_of()
    assert second == sha256(weights) != first


def test_a_replaced_file_is_hashed_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    graph, tokenizer = tmp_path / "model.onnx", tmp_path / "tokenizer.json"
    graph.write_bytes(b"graph")
    tokenizer.write_bytes(b"{}")
    first = digest(graph, tokenizer, cache=cache, settle=0)
    assert first == sha256(graph, tokenizer)
    new = tmp_path / "new.json"
    new.write_bytes(b"[]")
    new.replace(tokenizer)
    assert digest(graph, tokenizer, cache=cache, settle=0) == sha256(graph, tokenizer) != first


def test_a_file_changed_within_the_settling_time_is_not_remembered(tmp_path: Path) -> None:
    """A change in the same clock tick as the entry would leave every time as it was."""
    cache = tmp_path / "cache"
    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"fresh")
    assert digest(weights, cache=cache) == sha256(weights)
    assert read_with_digest(weights, cache=cache)[1] == sha256(weights)
    assert not entries(cache)


def test_a_cache_that_cannot_be_written_only_means_hashing(tmp_path: Path) -> None:
    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"a" * 10)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be", encoding="utf-8")
    assert digest(weights, cache=blocked, settle=0) == sha256(weights)
    assert read_with_digest(weights, cache=blocked, settle=0)[1] == sha256(weights)
    assert blocked.read_text(encoding="utf-8") == "a file where the cache folder would be"


def test_an_edge_model_with_other_weights_has_another_id(tmp_path: Path) -> None:
    """The guarantee the ids give: vectors are keyed by the model that made them. Weights
    changed in place, with the size and modification time kept, make another id and other
    vectors."""
    model = tmp_path / "edge"
    shutil.copytree(MODELS / "edge", model)
    shipped = StaticEmbedder(MODELS / "edge", name="edge")
    before = StaticEmbedder(model, name="edge")
    assert before.model_id == shipped.model_id  # the same bytes, the same id
    weights = model / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-256:] = bytes(255 - b for b in data[-256:])  # the last row of the int8 table
    rewrite_in_place(weights, bytes(data))
    after = StaticEmbedder(model, name="edge")
    assert after.model_id != before.model_id
    assert after.model_id == f"static:edge:{sha256(weights)[:12]}"
    last = max(
        json.loads((model / "tokenizer.json").read_text("utf-8"))["model"]["vocab"].items(),
        key=lambda item: item[1],
    )[0]
    assert np.array_equal(after.encode(["harbour"]), before.encode(["harbour"]))  # other rows
    assert not np.array_equal(after.encode([last]), before.encode([last]))
