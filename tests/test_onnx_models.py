"""A user's ONNX models (embeddings/folder.py, embeddings/onnx.py's OnnxEncoder,
rerankers/onnx.py), checked with tiny graphs the tests build with the `onnx` package and a
word-level tokenizer: pooling as the folder's files say, the token limit, batches of mixed
lengths giving what each text gives alone, and a cross-encoder's scores."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers, processors  # noqa: E402

from nexusbrain.config import Profile, Reranking, model_settings  # noqa: E402
from nexusbrain.embeddings import load_embedder  # noqa: E402
from nexusbrain.embeddings.folder import folder_embedder  # noqa: E402
from nexusbrain.errors import ConfigError  # noqa: E402
from nexusbrain.rerankers import load_reranker  # noqa: E402
from nexusbrain.rerankers.onnx import CrossEncoder  # noqa: E402

WORDS = "the deploy key vault expired soup lunch bread friday rotates every month secret".split()
VOCAB = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3} | {w: i + 4 for i, w in enumerate(WORDS)}
DIM = 6
TABLE = np.random.default_rng(7).normal(size=(len(VOCAB), DIM)).astype(np.float32)


def tokenizer(folder: Path) -> None:
    made = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    made.pre_tokenizer = pre_tokenizers.Whitespace()
    made.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    made.save(str(folder / "tokenizer.json"))


def ids_of(text: str, limit: int = 512) -> list[int]:
    """What the tokenizer above gives, cut at `limit` tokens with [CLS] and [SEP] kept."""
    words = [VOCAB.get(w, 1) for w in text.split()][: limit - 2]
    return [2, *words, 3]


def save(graph: onnx.GraphProto, path: Path) -> None:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


def encoder_graph(*, with_types: bool) -> onnx.GraphProto:
    """Token vectors: each token's row of TABLE (a transformer with no layers)."""
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "t"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["b", "t"]),
    ]
    if with_types:
        inputs.append(
            helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["b", "t"])
        )
    return helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"], axis=0)],
        "encoder",
        inputs,
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["b", "t", DIM])],
        [numpy_helper.from_array(TABLE, "table")],
    )


def folder(root: Path, *, pooling: str, limit: int | None, nested: bool = False) -> Path:
    root.mkdir(parents=True)
    tokenizer(root)
    save(
        encoder_graph(with_types=not nested), root / ("onnx/model.onnx" if nested else "model.onnx")
    )
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
        {
            "idx": 2,
            "name": "2",
            "path": "2_Normalize",
            "type": "sentence_transformers.models.Normalize",
        },
    ]
    (root / "modules.json").write_text(json.dumps(modules))
    (root / "1_Pooling").mkdir()
    modes = {f"pooling_mode_{m}": m == pooling for m in ("cls_token", "mean_tokens", "max_tokens")}
    (root / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": DIM, **modes})
    )
    if limit is not None:
        (root / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": limit}))
    return root


def expected(text: str, how: str, limit: int = 512) -> np.ndarray:
    rows = TABLE[ids_of(text, limit)]
    vector = {"cls": rows[0], "mean": rows.mean(axis=0), "max": rows.max(axis=0)}[how]
    return vector / np.linalg.norm(vector)


TEXTS = [
    "the deploy key",
    "the vault keeps the secret key and the deploy key rotates every month",
    "soup",
    "lunch bread friday unknownword",
    *[" ".join(WORDS[: i % len(WORDS) + 1]) for i in range(40)],
]


@pytest.mark.parametrize(
    ("pooling", "how"), [("mean_tokens", "mean"), ("cls_token", "cls"), ("max_tokens", "max")]
)
def test_pooling_comes_from_the_folder(tmp_path: Path, pooling: str, how: str) -> None:
    embedder = folder_embedder(folder(tmp_path / "m", pooling=pooling, limit=None))
    assert embedder.pooling == how and embedder.dim == DIM and embedder.max_tokens == 512
    vectors = embedder.encode(TEXTS)
    for text, vector in zip(TEXTS, vectors, strict=True):
        assert np.allclose(vector, expected(text, how), atol=1e-5), text
    assert embedder.model_id.endswith(f":{how}:t512")


def test_batches_of_mixed_lengths_give_what_each_text_gives_alone(tmp_path: Path) -> None:
    embedder = folder_embedder(
        folder(tmp_path / "m", pooling="mean_tokens", limit=None, nested=True)
    )
    together = embedder.encode(TEXTS)
    alone = np.array([embedder.encode([t])[0] for t in TEXTS])
    assert np.allclose(together, alone, atol=1e-6)
    assert embedder.encode([]).shape == (0, DIM)


def test_the_token_limit_comes_from_sentence_bert_config(tmp_path: Path) -> None:
    embedder = folder_embedder(folder(tmp_path / "m", pooling="mean_tokens", limit=4))
    long = "the vault keeps the secret key"
    assert embedder.token_counts([long]) == [4]  # [CLS], two words, [SEP]
    assert np.allclose(embedder.encode([long])[0], expected(long, "mean", 4), atol=1e-5)
    assert embedder.model_id.endswith(":mean:t4")


def test_the_model_id_follows_the_weights_and_the_profile_loads_it(tmp_path: Path) -> None:
    first = folder(tmp_path / "a", pooling="mean_tokens", limit=None)
    settings = model_settings({"BRAIN_EMBEDDER": f"onnx:{first}"})
    loaded = load_embedder(Profile.ONNX, settings)
    assert loaded is not None and loaded.model_id == folder_embedder(first).model_id
    other = folder(tmp_path / "b", pooling="mean_tokens", limit=None)
    table = TABLE.copy()
    table[5] += 1.0
    graph = encoder_graph(with_types=True)
    graph.initializer[0].CopyFrom(numpy_helper.from_array(table, "table"))
    save(graph, other / "model.onnx")
    assert folder_embedder(other).model_id.split(":")[2] != loaded.model_id.split(":")[2]


def test_a_folder_that_is_not_a_model_says_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a folder"):
        folder_embedder(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"no model\.onnx in"):
        folder_embedder(tmp_path / "empty")
    bad = folder(tmp_path / "bad", pooling="mean_tokens", limit=None)
    (bad / "1_Pooling" / "config.json").write_text(
        json.dumps({"pooling_mode_weightedmean_tokens": True})
    )
    with pytest.raises(ConfigError, match="pooling_mode_weightedmean_tokens is not supported"):
        folder_embedder(bad)
    with pytest.raises(ConfigError, match="name the model's folder as onnx:DIR"):
        model_settings({"BRAIN_EMBEDDER": "onnx"})


def cross_encoder(root: Path, *, logits: int, positions: int = 512) -> Path:
    """A cross-encoder: each pair's logit is the sum of its second text's tokens' scores
    (SCORES), and with two logits the first is zero."""
    root.mkdir(parents=True)
    tokenizer(root)
    (root / "config.json").write_text(json.dumps({"max_position_embeddings": positions}))
    scores = np.linspace(-1.0, 2.0, len(VOCAB)).astype(np.float32)[:, None]
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["b", "t"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    nodes = [
        helper.make_node("Gather", ["scores", "input_ids"], ["token"], axis=0),  # b, t, 1
        helper.make_node("Cast", ["token_type_ids"], ["second"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["second", "last"], ["second3"]),
        helper.make_node("Mul", ["token", "second3"], ["kept"]),
        helper.make_node("ReduceSum", ["kept", "axis"], ["logit"], keepdims=0),  # b, 1
    ]
    initial = [
        numpy_helper.from_array(scores, "scores"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "last"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis"),
    ]
    if logits == 2:
        nodes.append(helper.make_node("Mul", ["logit", "zero"], ["nothing"]))
        nodes.append(helper.make_node("Concat", ["nothing", "logit"], ["logits"], axis=1))
        initial.append(numpy_helper.from_array(np.zeros((1, 1), dtype=np.float32), "zero"))
    else:
        nodes.append(helper.make_node("Identity", ["logit"], ["logits"]))
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["b", logits])
    save(helper.make_graph(nodes, "cross", inputs, [output], initial), root / "model.onnx")
    return root


def pair_score(query: str, text: str, limit: int = 512) -> float:
    scores = np.linspace(-1.0, 2.0, len(VOCAB))
    second = [VOCAB.get(w, 1) for w in text.split()]
    room = limit - 3 - len(query.split())
    return float(sum(scores[i] for i in second[: max(room, 0)]) + scores[3])  # its [SEP] too


@pytest.mark.parametrize("logits", [1, 2])
def test_a_cross_encoder_scores_each_pair(tmp_path: Path, logits: int) -> None:
    reranker = CrossEncoder(cross_encoder(tmp_path / "x", logits=logits))
    query = "deploy key"
    texts = [t for t in TEXTS if t]
    found = reranker.score(query, texts)
    assert found == pytest.approx([pair_score(query, t) for t in texts], abs=1e-4)
    assert reranker.score(query, []) == []
    settings = model_settings({"BRAIN_RERANKER": f"onnx:{tmp_path / 'x'}"})
    assert settings.reranker is Reranking.ONNX
    loaded = load_reranker(settings)
    assert loaded is not None and loaded.model_id == reranker.model_id


def test_a_cross_encoder_cuts_long_pairs(tmp_path: Path) -> None:
    reranker = CrossEncoder(cross_encoder(tmp_path / "x", logits=1, positions=8))
    long = "the vault keeps the secret key and the deploy key rotates every month"
    # longest first: the text loses words until the pair fits in 8 tokens
    assert reranker.max_tokens == 8
    assert reranker.score("deploy", [long])[0] == pytest.approx(
        pair_score("deploy", " ".join(long.split()[:4]), 512), abs=1e-4
    )
