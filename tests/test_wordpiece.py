"""The Python WordPiece for ASCII text (embeddings/wordpiece.py) against the tokenizers
library, on the tokenizer files the package ships, and the edge embedder that uses it."""

from __future__ import annotations

import json
import string
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from nexusbrain.embeddings.profiles import MODELS
from nexusbrain.embeddings.static import StaticEmbedder
from nexusbrain.embeddings.wordpiece import FEW_CHARS, AsciiWordPiece
from tests.conftest import DATASETS

FILES = [MODELS / "edge" / "tokenizer.json", MODELS / "minilm" / "tokenizer.json"]
LIBRARY = {path: Tokenizer.from_file(str(path)) for path in FILES}
for library in LIBRARY.values():  # as the embedder uses it: it cuts the ids itself
    library.no_padding()
    library.no_truncation()
OURS = {path: AsciiWordPiece.of(orjson.loads(path.read_bytes())) for path in FILES}
VOCAB = sorted(w for w in OURS[FILES[0]].vocab if w.isascii())  # type: ignore[union-attr]


def library_ids(path: Path, text: str) -> list[int]:
    return LIBRARY[path].encode(text, add_special_tokens=False).ids


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
@settings(max_examples=600, deadline=None)
@given(
    text=st.one_of(
        st.text(alphabet=st.characters(max_codepoint=127), max_size=120),
        st.lists(st.sampled_from(VOCAB + list(string.punctuation + " \t\n")), max_size=30).map(
            "".join
        ),
    )
)
@example(text="Rotate the API-key: ERR_4711 (see #12), then re-deploy!")
@example(text="a" * 101 + " " + "b" * 100)  # past and at the longest word that is not [UNK]
@example(text="tab\there\x0bform\x0cfeed\x00nul\x7fdel\rcr\nlf")
@example(text="unaffable ##ing xqzjvw q")
def test_ascii_text_gets_the_library_s_ids(path: Path, text: str) -> None:
    ours = OURS[path]
    assert ours is not None
    if any(token in text for token in ours.added):  # "[UNK]", "[PAD]", ...
        assert ours.ids(text) is None
    else:
        assert ours.ids(text) == library_ids(path, text)


@pytest.mark.parametrize("text", ["café au lait", "東京", "the [UNK] token", "[PAD]"])
def test_text_that_is_not_ascii_or_names_an_added_token_is_left_to_the_library(
    text: str,
) -> None:
    ours = OURS[FILES[0]]
    assert ours is not None and ours.ids(text) is None


def test_a_tokenizer_of_another_kind_is_not_taken() -> None:
    spec = orjson.loads(FILES[0].read_bytes())
    assert AsciiWordPiece.of(spec | {"pre_tokenizer": {"type": "Whitespace"}}) is None
    normal = spec["normalizer"] | {"lowercase": False}
    assert AsciiWordPiece.of(spec | {"normalizer": normal}) is None


@pytest.mark.slow
@pytest.mark.parametrize("name", ["scifact", "cranfield", "cisi", "med"])
def test_every_ascii_text_of_a_dataset_gets_the_library_s_ids(name: str) -> None:
    folder = DATASETS / name
    if not folder.exists():
        pytest.skip(f"{folder} is not here")
    texts = []
    for part in ("corpus.jsonl", "queries.jsonl"):
        for line in (folder / part).read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            texts += [record.get("title", ""), record["text"]]
    for path in FILES:
        ours = OURS[path]
        assert ours is not None
        taken = [(text, ours.ids(text)) for text in texts]
        assert sum(ids is not None for _, ids in taken) > len(texts) // 2
        assert all(ids == library_ids(path, text) for text, ids in taken if ids is not None)


QUERY = "Rotate the API-key: ERR_4711 (see #12), then re-deploy!"
ONE_QUERY = """
import sys
from pathlib import Path
from nexusbrain.embeddings.static import StaticEmbedder
vector = StaticEmbedder(Path(sys.argv[1]), name="edge").encode([sys.argv[2]])[0]
print("tokenizers" in sys.modules, vector.tobytes().hex())
"""


def test_the_edge_embedder_embeds_a_query_without_loading_the_library() -> None:
    done = subprocess.run(
        [sys.executable, "-c", ONE_QUERY, str(MODELS / "edge"), QUERY],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded, vector = done.stdout.split()
    assert loaded == "False"
    # A batch of more than FEW_CHARS is cut by the library: the same vector
    batch = StaticEmbedder(MODELS / "edge", name="edge").encode(
        [QUERY] * (FEW_CHARS // len(QUERY) + 1)
    )
    assert vector == batch[0].tobytes().hex()
    assert all((row == batch[0]).all() for row in batch)
