"""The hybrid pipeline end to end on a real SQLite brain: vectors, fusion, PRF, modes, explain."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pytest

from nexusbrain import storage
from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings
from nexusbrain.embeddings import load_embedder
from nexusbrain.embeddings.base import Vectors
from nexusbrain.embeddings.hashing import HashingEmbedder
from nexusbrain.records import SearchMode
from nexusbrain.retrieval.filters import make_filters
from nexusbrain.retrieval.modes import (
    PRFConfig,
    SearchConfig,
    fusion_of,
    preset,
)

DOCS = {
    "ops/deploy.md": "# Deploy\n\nThe deploy failed because the API key expired.\n\n"
    "## Fix\n\nRotate the key in the vault, then redeploy the service.",
    "ops/backup.md": "# Backups\n\nNightly backups go to the cold storage bucket.",
    "home/garden.md": "# Garden\n\nWater the tomatoes every morning in summer.",
}


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the texts it is asked to encode."""

    def __init__(self) -> None:
        super().__init__()
        self.encoded: list[str] = []

    def encode(self, texts: Sequence[str]) -> Vectors:
        self.encoded.extend(texts)
        return super().encode(texts)


def seed(brain: Brain) -> None:
    for uri, text in DOCS.items():
        brain.ingest_markdown(text, uri=uri, domain=uri.split("/")[0])


def counting_brain(path: Path) -> tuple[Brain, CountingEmbedder]:
    """A brain composed by hand around an embedder that counts what it encodes."""
    embedder = CountingEmbedder()
    settings = Settings(db=path, embedder=Profile.HASHING)
    brain = Brain(storage.open(path), embedder, settings)
    embedder.encoded.clear()  # the model's reference texts (embeddings/reference.py)
    return brain, embedder


def test_every_hit_explains_its_fused_rank(brain: Brain) -> None:
    seed(brain)
    hits = brain.search("why did the deploy fail", k=3)
    top = hits[0]
    assert top.uri == "ops/deploy.md"
    names = {r.retriever for r in top.trace.retrievers}
    assert {"bm25", "dense"} <= names
    assert top.trace.fused_rank == 1
    assert top.trace.fusion_method == "zscore"
    assert top.score == pytest.approx(sum(c.contribution for c in top.trace.fusion))
    for c in top.trace.fusion:
        assert c.z is not None
        assert c.contribution == pytest.approx(c.weight * c.z)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    rrf = preset(SearchMode.BALANCED, fusion="rrf")
    strict = brain.search("why did the deploy fail", k=3, config=rrf)[0]
    assert strict.trace.fusion_method == "rrf"
    for c in strict.trace.fusion:
        assert c.rank is not None
        assert c.contribution == pytest.approx(c.weight / (rrf.rrf_k + c.rank))


def test_tokenmax_adds_prf_lists_and_the_others_do_not(brain: Brain) -> None:
    seed(brain)
    wide = brain.search("deploy failure", mode="tokenmax")[0]
    assert "dense_prf" in {r.retriever for r in wide.trace.retrievers}
    for mode in ("balanced", "conservative"):
        found = brain.search("why did the deploy fail", mode=mode)
        assert found and {r.retriever for r in found[0].trace.retrievers} <= {"bm25", "dense"}
    strict = brain.search("deploy failure", mode="conservative")
    assert len(strict) <= 5
    assert all(h.score >= 0.5 * strict[0].score for h in strict)
    rm3 = preset(
        SearchMode.TOKENMAX, prf_config=replace(PRFConfig(), expansion_terms=5)
    )  # RM3 terms on: a bm25_prf list, and the terms in the trace
    expanded = brain.search("deploy failure", k=5, config=rm3)[0]
    assert expanded.trace.prf_terms
    assert "bm25_prf" in {r.retriever for r in expanded.trace.retrievers}


def test_unchanged_text_is_never_embedded_twice(tmp_path: Path) -> None:
    brain, embedder = counting_brain(tmp_path / "b.db")
    seed(brain)
    first = len(embedder.encoded)
    assert first == 4  # deploy has two chunks, the others one each
    seed(brain)  # duplicates: nothing new to embed
    assert len(embedder.encoded) == first
    edited = DOCS["ops/deploy.md"].replace("redeploy the service", "restart it")
    brain.ingest_markdown(edited, uri="ops/deploy.md")
    assert len(embedder.encoded) == first + 1  # only the changed chunk
    brain.add_memory("Bring the umbrella.")
    brain.add_memory("Bring the umbrella.")
    assert len(embedder.encoded) == first + 2  # the memory once, the duplicate not at all
    brain.close()


def test_a_new_model_embeds_what_it_lacks_with_progress(tmp_path: Path) -> None:
    with Brain.open(settings=Settings(db=tmp_path / "b.db", embedder=Profile.NONE)) as lexical_only:
        seed(lexical_only)
    brain, embedder = counting_brain(tmp_path / "b.db")
    assert embedder.encoded == []
    seen: list[tuple[int, int]] = []
    assert brain.admin.embed_missing(lambda _, done, total: seen.append((done, total))) == 4
    assert seen[-1] == (4, 4)
    assert brain.admin.embed_missing() == 0
    assert "dense" in {r.retriever for r in brain.search("tomatoes")[0].trace.retrievers}
    brain.close()


def test_chunks_written_without_vectors_after_a_complete_check_are_still_found(
    tmp_path: Path,
) -> None:
    brain, embedder = counting_brain(tmp_path / "b.db")
    seed(brain)
    assert brain.admin.embed_missing() == 0  # complete: remembered for the next check
    with Brain.open(settings=Settings(db=tmp_path / "b.db", embedder=Profile.NONE)) as lexical_only:
        lexical_only.ingest_markdown("# Bees\n\nThe hive needs a new queen.", uri="home/bees.md")
    assert brain.admin.embed_missing() == 1
    assert embedder.encoded[-1].endswith("The hive needs a new queen.")
    assert brain.admin.embed_missing() == 0
    brain.close()


def test_imported_chunks_are_embedded_after_a_complete_check(tmp_path: Path) -> None:
    with Brain.open(settings=Settings(db=tmp_path / "a.db", embedder=Profile.NONE)) as source:
        seed(source)  # ids taken in the target too: these are skipped
        source.ingest_markdown("# Bees\n\nThe hive needs a new queen.", uri="home/bees.md")
        records = list(source.admin.export())
    brain, embedder = counting_brain(tmp_path / "b.db")
    seed(brain)
    assert brain.admin.embed_missing() == 0
    assert brain.admin.import_records(records).documents == 1
    assert embedder.encoded[-1].endswith("The hive needs a new queen.")
    assert brain.admin.embed_missing() == 0
    hit = brain.search("beehive queen")[0]
    assert hit.uri == "home/bees.md" and "dense" in {r.retriever for r in hit.trace.retrievers}
    brain.close()


def test_the_index_sees_writes_from_another_brain_on_the_same_file(tmp_path: Path) -> None:
    settings = Settings(db=tmp_path / "b.db", embedder=Profile.HASHING)
    with Brain.open(settings=settings) as server, Brain.open(settings=settings) as cli:
        seed(server)
        server.search("garden")  # loads the index
        cli.ingest_markdown("# Bees\n\nThe beehive needs a new queen.", uri="home/bees.md")
        hit = server.search("beehive queen")[0]
        assert hit.uri == "home/bees.md"
        assert "dense" in {r.retriever for r in hit.trace.retrievers}
        cli.delete_document(hit.document_id)
        assert all(h.uri != "home/bees.md" for h in server.search("beehive queen"))


def test_tokenmax_recall_brings_neighbouring_chunks(brain: Brain) -> None:
    seed(brain)
    result = brain.recall("expired API key", k=1, mode="tokenmax")
    deploy = [h for h in result.hits if h.uri == "ops/deploy.md"]
    assert len(deploy) == 2
    assert any(h.trace.context and h.trace.context.startswith("neighbour") for h in deploy)
    assert result.budget_tokens == 6000


def test_explain_says_where_a_document_ranked_or_what_excluded_it(brain: Brain) -> None:
    seed(brain)
    found = brain.explain("why did the deploy fail", "ops/deploy.md")
    assert found.returned and found.fused_rank == 1 and not found.excluded_by
    bm25 = next(p for p in found.positions if p.retriever == "bm25")
    assert bm25.rank == 1 and bm25.score and bm25.score > 0
    filtered = brain.explain(
        "why did the deploy fail", "ops/deploy.md", filters=make_filters(domain="home")
    )
    assert filtered.excluded_by == ("domain=home",) and not filtered.returned
    garden = brain.explain("why did the deploy fail", "home/garden.md", k=1)
    assert not garden.returned


def test_the_edge_model_ships_in_the_package_and_runs_offline() -> None:
    embedder = load_embedder(Profile.EDGE)
    assert embedder is not None and embedder.model_id.startswith("static:edge:")
    vectors = embedder.encode(["rotate the api key", "rotate the API key", ""])
    assert vectors.shape == (3, embedder.dim) and vectors.dtype == np.float32
    assert np.linalg.norm(vectors[0]) == pytest.approx(1.0, abs=1e-5)
    assert vectors[0] @ vectors[1] == pytest.approx(1.0, abs=1e-5)  # uncased vocabulary
    assert not vectors[2].any()
    related = embedder.encode(["the car would not start", "my automobile broke down"])
    unrelated = embedder.encode(["the car would not start", "a recipe for lemon cake"])
    assert related[0] @ related[1] > unrelated[0] @ unrelated[1]


def test_a_word_said_twice_pulls_harder(tmp_path: Path) -> None:
    settings = Settings(db=tmp_path / "b.db", embedder=Profile.NONE)
    with Brain.open(settings=settings) as brain:
        brain.ingest_markdown("# Keys\n\nRotate the vault key.", uri="keys.md")
        brain.ingest_markdown("# Deploys\n\nThe deploy failed.", uri="deploy.md")
        once = brain.search("deploy vault", k=2)
        twice = brain.search("deploy vault vault", k=2)
        assert [h.uri for h in once] == ["deploy.md", "keys.md"]
        assert [h.uri for h in twice] == ["keys.md", "deploy.md"]


def test_a_preset_fuses_with_its_profiles_constants_and_a_config_can_override_them(
    brain: Brain,
) -> None:
    seed(brain)
    for uri, text in {
        "ops/keys.md": "# Keys\n\nKeys and vaults: rotate them before they expire.",
        "ops/tls.md": "# TLS\n\nCertificates expire too; renew them in the vault.",
    }.items():
        brain.ingest_markdown(text, uri=uri)
    query = "the key expired in the vault"
    profile = fusion_of(brain.settings.embedder)
    own = preset(SearchMode.BALANCED, weights=profile.weights, min_z=profile.min_z)
    assert preset(SearchMode.BALANCED).weights is None  # the profile decides

    def scores(config: SearchConfig) -> list[tuple[str, float]]:
        return [(h.uri, round(h.score, 9)) for h in brain.search(query, k=5, config=config)]

    assert scores(preset(SearchMode.BALANCED)) == scores(own)
    heavier = MappingProxyType({**profile.weights, "dense": 4.0})
    assert scores(preset(SearchMode.BALANCED, weights=heavier)) != scores(own)
