"""`explain` runs the very search `search` runs: for random queries and documents, in every mode,
with and without best-per-document, its rank is the document's place among search's hits and
it names the chunk search returned."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings
from nexusbrain.records import SearchFilters, SearchMode
from nexusbrain.retrieval.explain import Verdict

WORDS = (
    "deploy vault key rotate backup bucket river stone cloud engine piano violin orbit comet"
    " harbor ship bridge tunnel forest maple cedar lantern garden tomato summer water service"
).split()


@pytest.fixture(scope="module")
def brain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Brain]:
    path = tmp_path_factory.mktemp("explain") / "b.db"
    with Brain.open(settings=Settings(db=path, embedder=Profile.HASHING)) as brain:
        for i in range(40):
            words = [WORDS[(i * 5 + j * 3) % len(WORDS)] for j in range(30)]
            body = "\n\n".join(" ".join(words[p : p + 10]) for p in range(0, 30, 10))
            domain = "ops" if i % 3 else "home"
            brain.ingest_markdown(f"# Note {i}\n\n{body}", uri=f"n/{i}.md", domain=domain)
        brain.add_memory("the vault key rotates every ninety days")
        yield brain


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    document=st.integers(1, 41),
    mode=st.sampled_from(list(SearchMode)),
    best=st.booleans(),
    k=st.sampled_from([None, 1, 3, 10]),
    domain=st.sampled_from([None, "ops"]),
)
def test_explain_agrees_with_search(
    brain: Brain,
    query: str,
    document: int,
    mode: SearchMode,
    best: bool,
    k: int | None,
    domain: str | None,
) -> None:
    filters = SearchFilters(domain=domain)
    hits = brain.search(query, k=k, filters=filters, mode=mode, best_per_document=best)
    found = brain.explain(query, document, k=k, filters=filters, mode=mode, best_per_document=best)
    mine = [(i, h) for i, h in enumerate(hits, 1) if h.document_id == document]
    if mine:
        rank, hit = mine[0]
        assert (found.rank, found.chunk_id, found.verdict) == (rank, hit.chunk_id, Verdict.RETURNED)
        assert found.fused_rank == hit.trace.fused_rank
        assert found.fused_score == pytest.approx(hit.score)
    else:
        assert found.rank is None and not found.returned
        assert found.verdict is not Verdict.RETURNED
        if found.verdict is Verdict.BELOW_K:
            assert found.fused_rank is not None and found.fused_rank > len(hits)
    if domain == "ops" and brain.get_document(document).domain != "ops":
        assert found.verdict is Verdict.FILTERED and found.excluded_by == ("domain=ops",)


def test_a_retired_document_says_so(tmp_path: Path) -> None:
    with Brain.open(settings=Settings(db=tmp_path / "b.db", embedder=Profile.HASHING)) as brain:
        done = brain.ingest_markdown("# Bees\n\nThe hive needs a queen.", uri="bees.md")
        brain.delete_document(done.document_id)
        found = brain.explain("hive queen", "bees.md")
        assert found.verdict is Verdict.RETIRED and found.retired and found.rank is None
