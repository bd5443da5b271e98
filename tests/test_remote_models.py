"""Models on a server (embeddings/http.py, embeddings/remote.py, rerankers/http.py), asked over
real HTTP on loopback: a real `nexusbrain serve` as the provider, and a server that misbehaves
on cue (tests/providers.py). No HTTP client is mocked; only the pause between tries is
recorded instead of slept."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from nexusbrain.brain import Brain
from nexusbrain.config import Settings, model_settings
from nexusbrain.embeddings.hashing import HashingEmbedder
from nexusbrain.embeddings.http import ModelServer
from nexusbrain.embeddings.remote import RemoteEmbedder
from nexusbrain.errors import ConfigError, ModelUnavailable
from nexusbrain.rerankers.cosine import CosineReranker
from nexusbrain.rerankers.http import HttpReranker

from .providers import Misbehaving, serve, wait_for

TEXTS = [f"note {i} about the deploy key and the vault {'word ' * i}" for i in range(23)]


def embedder(url: str, model: str = "hash-64", **kwargs: object) -> tuple[RemoteEmbedder, list]:
    pauses: list[float] = []
    server = ModelServer(
        url, "embedding server", sleep=pauses.append, api_key=kwargs.pop("key", None)
    )  # type: ignore[arg-type]
    return RemoteEmbedder(server, model, **kwargs), pauses  # type: ignore[arg-type]


def test_a_nexusbrain_serve_is_the_provider(tmp_path: Path) -> None:
    with serve(tmp_path / "host.db", BRAIN_RERANKER="hashing") as host:
        remote, _ = embedder(f"{host.url}/v1", "hashing")
        assert remote.dim == 256 and remote.model_id == "openai:hashing"
        local = HashingEmbedder()
        assert np.allclose(remote.encode(TEXTS), local.encode(TEXTS), atol=1e-6)
        assert np.allclose(remote.encode_query("deploy key"), local.encode(["deploy key"])[0])
        # the profile's name or the model's id: both name it
        assert np.allclose(
            embedder(f"{host.url}/v1", "hashing-256")[0].encode(TEXTS[:2]),
            local.encode(TEXTS[:2]),
            atol=1e-6,
        )
        with pytest.raises(ModelUnavailable) as unknown:
            embedder(f"{host.url}/v1", "nomic-embed-text")[0].encode(["x"])
        assert "has no model 'nomic-embed-text'" in unknown.value.message
        assert "it has: hashing-256" in unknown.value.message
        # the reranker, under /v1/rerank with a base URL with or without /v1
        query, docs = "deploy key", ["the deploy key expired", "soup for lunch", "the vault"]
        expected = CosineReranker(HashingEmbedder()).score(query, docs)
        for base in (host.url, f"{host.url}/v1"):
            reranker = HttpReranker(ModelServer(base, "reranking server"), "hashing")
            assert reranker.score(query, docs) == pytest.approx(expected, abs=1e-6)


def test_a_brain_embeds_through_another_server(tmp_path: Path) -> None:
    with serve(tmp_path / "host.db") as host:
        env = {
            "BRAIN_EMBEDDER": "openai",
            "BRAIN_EMBED_URL": f"{host.url}/v1",
            "BRAIN_EMBED_MODEL": "hashing",
        }
        settings = Settings.from_env(tmp_path / "brain.db", environ=env)
        with Brain.open(settings=settings) as brain:
            brain.ingest_markdown("# Keys\n\nThe deploy key lives in the vault.", uri="k.md")
            brain.ingest_markdown("# Lunch\n\nSoup and bread on Friday.", uri="l.md")
            brain.admin.embed_missing()
            assert brain.stats().embedder.embedded_chunks == 2
            hits = brain.search("where is the deploy key")
            assert hits[0].uri == "k.md"
            assert {r.retriever for r in hits[0].trace.retrievers} == {"bm25", "dense"}
            assert brain.models.report()["embedder"]["where"] == f"{host.url}/v1"


def test_failures_worth_another_try_are_tried_again_with_backoff() -> None:
    with Misbehaving() as server:
        server.script.extend(["drop", "429", "500", "ok"])
        remote, pauses = embedder(server.url)
        vectors = remote.encode(TEXTS[:3])
        assert np.allclose(vectors, HashingEmbedder(64).encode(TEXTS[:3]), atol=1e-6)
        assert len(server.requests) == 4
        assert pauses == [0.5, 1.0, 2.0]  # backoff, the server's Retry-After, backoff
        server.script.extend(["500"] * 5)
        with pytest.raises(ModelUnavailable) as failed:
            remote.encode(["x"])
        assert failed.value.message == (
            f"the embedding server at {server.url} failed: 500 (told to answer 500)"
        )


def test_an_interrupt_ends_the_pause_before_a_retry_and_any_later_retry() -> None:
    """The pause before a retry is a real one here (no recorder): `interrupt` ends it, the
    failure is raised at once, and later failures are not tried again."""
    with Misbehaving() as server:
        server.failing = "drop"
        remote = RemoteEmbedder(ModelServer(server.url, "embedding server"), "hash-64")
        failures: list[str] = []

        def write() -> None:
            try:
                remote.encode(["x"])
            except ModelUnavailable as exc:
                failures.append(exc.message)

        thread = threading.Thread(target=write)
        thread.start()
        wait_for(lambda: len(server.requests) == 2)  # in the second pause (1 s), or its try
        started = time.perf_counter()
        remote.interrupt()
        thread.join(5)
        assert not thread.is_alive() and time.perf_counter() - started < 0.5
        assert failures == [
            f"the embedding server at {server.url} cannot be reached: it closed the connection"
            " before answering"
        ]
        assert len(server.requests) <= 3
        tried = len(server.requests)
        with pytest.raises(ModelUnavailable):
            remote.encode(["y"])
        assert len(server.requests) == tried + 1  # one try, no retry
        server.failing = None
        assert remote.encode(["z"]).shape == (1, 64)  # a server that answers still does


def test_batches_go_a_few_at_a_time_and_come_back_in_order() -> None:
    with Misbehaving() as server:
        server.delay = 0.2
        server.script.extend(["slow"] * 12)
        remote, _ = embedder(server.url, batch=2, concurrency=3)
        vectors = remote.encode(TEXTS)
        assert np.allclose(vectors, HashingEmbedder(64).encode(TEXTS), atol=1e-6)
        assert len(server.requests) == 12  # 23 texts, 2 a request
        assert 1 < server.most_in_flight <= 3
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)  # normalised


def test_what_went_wrong_is_said_in_words(caplog: pytest.LogCaptureFixture) -> None:
    secret = "sk-this-is-the-secret-key"
    with Misbehaving() as server, caplog.at_level(logging.DEBUG):
        server.script.append("401")
        keyed, _ = embedder(server.url, key=secret)
        with pytest.raises(ModelUnavailable) as refused:
            keyed.encode(["x"])
        assert refused.value.message == (
            f"the embedding server at {server.url} refused the key (401 (told to answer 401))"
        )
        assert server.headers[-1]["Authorization"] == f"Bearer {secret}"
        server.script.extend(["drop"] * 5)
        with pytest.raises(ModelUnavailable):
            keyed.encode(["x"])
        server.script.append("404")
        with pytest.raises(ModelUnavailable) as unknown:
            keyed.encode(["x"])
        assert (
            "has no model 'hash-64' (model 'hash-64' not found); it has: hash-64, hash-small"
            in (unknown.value.message)
        )
        server.script.append("wrong-dim")
        known, _ = embedder(server.url, dim=64)
        with pytest.raises(ModelUnavailable) as wrong:
            known.encode(["x"])
        assert "answered vectors of 65 dimensions for 'hash-64'" in wrong.value.message
        assert "this brain's vectors of openai:hash-64 have 64" in wrong.value.message
        shown = [refused.value.message, unknown.value.message, repr(keyed.server), caplog.text]
        assert not any(secret in text for text in shown)
    env = {"BRAIN_EMBEDDER": "openai", "BRAIN_EMBED_URL": "http://h/v1", "BRAIN_EMBED_MODEL": "m"}
    settings = model_settings({**env, "BRAIN_EMBED_API_KEY": secret})
    assert settings.embed_server is not None and secret not in repr(settings)
    with pytest.raises(ConfigError, match="BRAIN_EMBEDDER=openai needs BRAIN_EMBED_MODEL"):
        model_settings({"BRAIN_EMBEDDER": "openai", "BRAIN_EMBED_URL": "http://h/v1"})
    with pytest.raises(ConfigError, match="not an http"):
        model_settings({**env, "BRAIN_EMBED_URL": "h/v1"})


def test_a_query_waits_once_within_its_timeout_then_leaves_the_server_alone() -> None:
    with Misbehaving(delay=3.0) as server:
        server.script.append("slow")
        remote, _ = embedder(server.url, query_timeout=0.3)
        started = time.perf_counter()
        with pytest.raises(ModelUnavailable, match=r"did not answer within 0\.3 s"):
            remote.encode_query("deploy key")
        assert time.perf_counter() - started < 0.45  # 1.5x the timeout
        started = time.perf_counter()
        with pytest.raises(ModelUnavailable, match="failed a moment ago"):
            remote.encode_query("deploy key")
        assert time.perf_counter() - started < 0.05 and len(server.requests) == 1


def test_a_reranking_server_that_is_down_or_answers_badly() -> None:
    with Misbehaving() as server:
        reranker = HttpReranker(ModelServer(server.url, "reranking server"), "hash-64")
        assert reranker.score("deploy key", ["the deploy key", "soup"])[0] > 0
        assert server.requests[-1]["path"] == "/v1/rerank"
        server.script.append("500")
        with pytest.raises(ModelUnavailable, match=r"reranking server .* failed: 500"):
            reranker.score("deploy key", ["a"])
        with pytest.raises(ModelUnavailable, match="failed a moment ago"):
            reranker.score("deploy key", ["a"])
