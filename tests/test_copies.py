"""One hit per repeated text: copies of a text (the same words, or nearly, under the same
heading) are one hit that lists where else the text lives; pages a template makes stay apart;
`k` counts distinct texts; and it can be turned off. On both backends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings
from nexusbrain.records import SearchMode
from nexusbrain.retrieval.explain import Verdict
from nexusbrain.retrieval.modes import preset

from .conftest import LiveServer

BUILD = (
    "# Building from source\n\n"
    "Clone the repository, install the toolchain with `make deps`, then run `make build`. "
    "The binary lands in `out/bin`; run `make test` before you install it with `make install`. "
    "A build from source needs about two gigabytes of disk and takes ten minutes on a laptop.\n"
)
NIGHTLY = BUILD.replace("ten minutes", "eleven minutes")  # nearly the same text
TEMPLATE_C = (
    "# CheckCSourceRuns\n\n"
    "Check once if the given C source compiles and links into an executable and can run. "
    "The result is stored in the cache variable named by the caller, with the exit code kept. "
    "Use it to probe the toolchain before a build relies on a C feature at run time.\n"
)
TEMPLATE_CXX = (
    TEMPLATE_C.replace("CheckCSourceRuns", "CheckCXXSourceRuns")
    .replace("C source", "C++ source")
    .replace("C feature", "C++ feature")
)


@pytest.fixture(params=["sqlite", "postgres"])
def brain(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Brain]:
    db = tmp_path / "b.db" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    with Brain.open(settings=Settings(db=db, embedder=Profile.HASHING)) as opened:
        yield opened


def _fill(brain: Brain) -> None:
    brain.ingest_markdown(BUILD, title="Stable", uri="stable/README.md")
    brain.ingest_markdown(BUILD.replace("\n\n", "\n\n\n"), title="Copy", uri="copy/README.md")
    brain.ingest_markdown(NIGHTLY, title="Nightly", uri="nightly/README.md")
    brain.ingest_markdown(TEMPLATE_C, title="C", uri="modules/CheckCSourceRuns.md")
    brain.ingest_markdown(TEMPLATE_CXX, title="C++", uri="modules/CheckCXXSourceRuns.md")
    for n in range(6):
        brain.ingest_markdown(f"# Note {n}\n\nA note on build caches number {n}.", uri=f"n{n}.md")


def test_copies_are_one_hit_that_lists_the_others(brain: Brain) -> None:
    _fill(brain)
    hits = brain.search("how do I build from source with make", k=10)
    texts = [" ".join(h.text.casefold().split()) for h in hits]
    assert len(texts) == len(set(texts))
    readmes = [h for h in hits if h.uri.endswith("README.md")]
    assert len(readmes) == 1
    first = readmes[0]
    others = {c.uri for c in first.also_in}
    assert others == {"stable/README.md", "copy/README.md", "nightly/README.md"} - {first.uri}
    for copy in first.also_in:
        document = brain.find_document(copy.uri)
        assert document.content[copy.char_start : copy.char_end].strip()
        assert copy.line_start >= 1 and copy.document_id == document.id
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


def test_pages_a_template_makes_stay_apart(brain: Brain) -> None:
    _fill(brain)
    hits = brain.search("check that a source compiles and runs", k=10)
    modules = {h.uri for h in hits if h.uri.startswith("modules/")}
    assert modules == {"modules/CheckCSourceRuns.md", "modules/CheckCXXSourceRuns.md"}
    assert all(not h.also_in for h in hits if h.uri.startswith("modules/"))


def test_k_counts_distinct_texts_and_copies_can_be_kept(brain: Brain) -> None:
    _fill(brain)
    query = "build from source make install binary"
    distinct = brain.search(query, k=4)
    every = brain.search(query, k=4, distinct=False)
    assert len(distinct) == 4 and len(every) == 4
    assert sum(h.uri.endswith("README.md") for h in distinct) == 1
    assert sum(h.uri.endswith("README.md") for h in every) == 3
    assert all(not h.also_in for h in every)
    kept = preset(SearchMode.BALANCED, k=4, distinct=False)  # a config's choice stands
    assert [h.chunk_id for h in brain.search(query, config=kept)] == [h.chunk_id for h in every]
    recalled = brain.recall(query, k=4, budget_tokens=2000)
    assert sum(h.uri.endswith("README.md") for h in recalled.hits) == 1


def test_explain_says_a_document_is_a_copy_of_a_hit(brain: Brain) -> None:
    _fill(brain)
    query = "how do I build from source with make"
    shown = next(h for h in brain.search(query) if h.uri.endswith("README.md"))
    copy = shown.also_in[0]
    found = brain.explain(query, copy.uri)
    assert found.verdict is Verdict.COPY
    assert found.copy_of == shown.chunk_id
    assert brain.explain(query, copy.uri, distinct=False).verdict is Verdict.RETURNED


def test_every_interface_shows_where_else_the_text_lives(live_server: LiveServer) -> None:
    from click.testing import CliRunner

    from nexusbrain.cli.main import cli
    from nexusbrain.mcp_server import tools as mcp_tools

    _fill(live_server.brain)
    query = "how do I build from source with make"
    with live_server.client() as http:
        hit = next(h for h in http.get("/search", params={"q": query}).json()["hits"])
        assert hit["uri"].endswith("README.md") and len(hit["also_in"]) == 2
        assert {c["uri"] for c in hit["also_in"]} | {hit["uri"]} == {
            "stable/README.md",
            "copy/README.md",
            "nightly/README.md",
        }
        assert set(hit["also_in"][0]) == {"chunk_id", "document_id", "uri", "span", "page"}
        every = http.get("/search", params={"q": query, "distinct": "false"}).json()["hits"]
        assert sum(h["uri"].endswith("README.md") for h in every) == 3
        recalled = http.post("/recall", json={"query": query, "k": 3}).json()["hits"]
        assert recalled[0]["also_in"] == hit["also_in"]
    db = str(live_server.brain.settings.db)
    shown = CliRunner().invoke(cli, ["--db", db, "--local", "search", query, "-k", "3"]).output
    assert "\n     also in: copy/README.md:1-4, nightly/README.md:1-3\n" in shown
    recall = CliRunner().invoke(cli, ["--db", db, "--local", "recall", query, "-k", "1"]).output
    assert "\n(also in: copy/README.md:1-4, nightly/README.md:1-3)\n" in recall
    kept = CliRunner().invoke(cli, ["--db", db, "--local", "search", query, "--keep-copies"])
    assert "also in:" not in kept.output and kept.output.count("README.md") == 3
    text = mcp_tools.answer("recall", live_server.brain, {"query": query, "k": 1}).text
    assert text is not None and "(also in: " in text
