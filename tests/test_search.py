"""Lexical search: natural-language questions work, any text is safe, hits explain themselves."""

from __future__ import annotations

from dataclasses import asdict

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nexusbrain import views
from nexusbrain.brain import Brain
from nexusbrain.errors import InvalidInput
from nexusbrain.retrieval.filters import make_filters
from nexusbrain.retrieval.terms import query_terms
from nexusbrain.retrieval.tokens import count_tokens
from nexusbrain.summaries import recall_summary


def seed(brain: Brain) -> None:
    brain.ingest_markdown("# Cats\n\nCats sleep most of the day.", title="Cats", uri="pets/cats.md")
    brain.ingest_markdown(
        "# Dogs\n\nDogs need a daily walk.", title="Dogs", uri="pets/dogs.md", domain="dogs"
    )
    brain.ingest_markdown('# Quotes\n\nHe said "AND" OR (NEAR) * ^ :', title="Q", uri="q.md")


def test_a_question_finds_the_answer_even_when_not_every_word_matches(brain: Brain) -> None:
    seed(brain)
    hits = brain.search("How long do cats usually sleep?")
    assert hits[0].uri == "pets/cats.md"
    assert hits[0].rank == 1 and hits[0].score > 0


def test_every_hit_cites_its_source_and_traces_its_rank(brain: Brain) -> None:
    seed(brain)
    hit = brain.search("walk", k=5)[0]
    doc = brain.get_document(hit.document_id)
    assert (hit.uri, hit.domain, hit.revision) == ("pets/dogs.md", "dogs", doc.revision)
    assert doc.content[hit.char_start : hit.char_end] == hit.text
    assert (hit.line_start, hit.line_end, hit.heading_path) == (1, 3, ("Dogs",))
    bm25 = next(r for r in hit.trace.retrievers if r.retriever == "bm25")
    assert bm25.rank == 1 and bm25.score > 0
    assert hit.trace.fused_rank == 1
    assert hit.score == pytest.approx(sum(c.contribution for c in hit.trace.fusion))


def test_filters_narrow_the_results(brain: Brain) -> None:
    seed(brain)
    assert [h.uri for h in brain.search("cats dogs", filters=make_filters(domain="dogs"))] == [
        "pets/dogs.md"
    ]
    assert {
        h.uri for h in brain.search("cats dogs", filters=make_filters(path_prefix="pets/"))
    } == {
        "pets/cats.md",
        "pets/dogs.md",
    }
    assert brain.search("cats", filters=make_filters(path_prefix="other/")) == []


def test_fts_syntax_in_a_query_is_just_words(brain: Brain) -> None:
    seed(brain)
    assert brain.search('"AND" OR (NEAR) *')[0].uri == "q.md"
    assert brain.search("^ : * ( ) \" '") == []


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(min_size=1, max_size=60))
def test_no_text_can_break_the_full_text_query(brain: Brain, query: str) -> None:
    if not brain.stats().store.documents:  # seed once per brain
        seed(brain)
    if not query.strip():
        with pytest.raises(InvalidInput):
            brain.search(query)
        return
    hits = brain.search(query, k=3)
    assert all(h.rank == i for i, h in enumerate(hits, start=1))


def test_query_terms_drop_stopwords_unless_nothing_is_left() -> None:
    assert query_terms("What is the cause of the outage?") == ["what", "cause", "outage"]
    assert query_terms("to be or not to be") == ["to", "be", "or", "not", "to", "be"]
    assert query_terms("Deploy the deploy key") == ["deploy", "deploy", "key"]  # repeats count


def test_token_count_is_words_and_punctuation() -> None:
    assert count_tokens("") == 0
    assert count_tokens("hello, world!") == 4
    assert count_tokens("retrieval") == 2  # 9 characters: two six-character pieces


def test_bad_search_arguments_are_refused(brain: Brain) -> None:
    with pytest.raises(InvalidInput, match="empty"):
        brain.search("   ")
    with pytest.raises(InvalidInput, match="k=0"):
        brain.search("cats", k=0)
    with pytest.raises(InvalidInput, match="not an ISO-8601"):
        make_filters(updated_after="yesterday")


def test_recall_keeps_to_its_budget(brain: Brain) -> None:
    for i in range(6):
        brain.add_memory(f"memory {i}: the server room key is in drawer {i} " + "pad " * 20)
    result = brain.recall("server room key drawer", k=6, budget_tokens=60)
    assert result.tokens_used <= 60
    assert result.tokens_used == sum(count_tokens(h.text) for h in result.hits)
    assert len(result.hits) + result.left_out == 6
    assert result.left_out > 0


def test_recall_cuts_the_best_hit_to_fit_rather_than_drop_it(brain: Brain) -> None:
    policy = (
        "# Security policy\n\nReport vulnerabilities to the security team by email. "
        "We answer within two days. We publish an advisory once a fix ships. "
        + "Details follow about the disclosure process and its timeline. "
        * 20
    )
    doc = brain.ingest_markdown(policy, uri="node/SECURITY.md").document_id
    brain.add_memory("the security team meets on Fridays")  # short, and ranked below the policy
    whole = brain.search("how to report security vulnerabilities", k=2)
    assert whole[0].document_id == doc
    result = brain.recall("how to report security vulnerabilities", k=2, budget_tokens=40)
    best = result.hits[0]
    assert best.document_id == doc and best.truncated and result.truncated
    assert len(result.hits) == 1 and result.left_out == 1  # not the lower hit in its place
    assert best.text.endswith(".") and count_tokens(best.text) <= 40
    assert result.tokens_used == count_tokens(best.text)
    content = brain.get_document(doc).content
    assert content[best.char_start : best.char_end] == best.text
    assert best.line_end == best.line_start + best.text.count("\n")
    said = (
        f"1 passage, {result.tokens_used} of 40 tokens; passage 1 cut to fit; 1 lower hit left out"
    )
    assert recall_summary(views.recall(result)) == said
    tiny = brain.recall("security vulnerabilities", k=2, budget_tokens=1)
    assert tiny.hits == () and "raise the budget" in recall_summary(views.recall(tiny))


def test_a_hit_s_trace_lists_every_field_of_its_scores(brain: Brain) -> None:
    """The trace's retriever and fusion entries are written out field by field (faster than
    asdict): each must still say every field, in the records' order."""
    brain.ingest_markdown("# Vault\n\nrotate the deploy key in the vault", uri="v.md")
    brain.ingest_markdown("# Garden\n\ntomatoes want water in summer", uri="g.md")
    hits = brain.search("deploy key vault", k=2)
    assert hits and hits[0].trace.fusion
    for h in hits:
        out = views.trace(h.trace)
        # the same bytes: the same keys in the same order, the same values
        assert orjson.dumps(out["retrievers"]) == orjson.dumps(
            [asdict(r) for r in h.trace.retrievers]
        )
        assert orjson.dumps(out["fusion"]) == orjson.dumps([asdict(f) for f in h.trace.fusion])
