"""Every result set carries a confidence: a calibrated chance that one of its first five hits
is relevant, from the evidence its search holds: how much of the query's rare-word weight its
best hit holds, how near it is in meaning, whether the lists agree (SPEC §3)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import pytest
from click.testing import CliRunner

from nexusbrain import views
from nexusbrain.brain import Brain
from nexusbrain.cli.main import cli
from nexusbrain.config import Profile, Settings
from nexusbrain.mcp_server.tools import answer
from nexusbrain.records import Confidence, Evidence, SearchMode
from nexusbrain.retrieval.confidence import (
    GOOD_FROM,
    WEAK_BELOW,
    Band,
    Feature,
    band,
    band_of,
    chance,
    chosen_model,
    confidence,
    describe,
    features,
    held_weight,
)
from nexusbrain.retrieval.modes import CONFIDENCE, ConfidenceModel, ProfileConfidence, preset

NOTES = {
    "ops/deploy.md": "# Deploy\n\nThe deploy failed because the API key expired. Rotate the "
    "key in the vault, then redeploy the service.",
    "ops/backup.md": "# Backups\n\nNightly backups go to the cold storage bucket and are kept "
    "for thirty days.",
    "team/oncall.md": "# On call\n\nThe on-call engineer answers pages within fifteen minutes "
    "and writes up every incident.",
    "team/hiring.md": "# Hiring\n\nCandidates meet three engineers and one manager before an "
    "offer is made.",
}
NONSENSE = "zxqvor blenticular frumpish"


EVIDENCE = Evidence(
    coverage=0.5,
    matched=1.0,
    fused_margin=0.8,
    lexical_margin=0.25,
    lexical_rank=2,
    cosine=0.4,
    dense_margin=0.05,
    dense_rank=4,
    overlap=3,
)


def _model(intercept: float, **weights: float) -> ConfidenceModel:
    return ConfidenceModel(intercept, MappingProxyType(weights))


HAND = _model(-2.0, coverage=3.0, matched=1.0, cosine=2.0, overlap=1.0, dense_rank=0.5)


def test_the_features_are_the_evidence_as_the_model_reads_it() -> None:
    got = features(EVIDENCE)
    assert got[Feature.COVERAGE] == 0.5
    assert got[Feature.MATCHED] == pytest.approx(math.log(2.0))  # ln(1 + 1)
    assert got[Feature.COSINE] == 0.4
    assert got[Feature.LEXICAL_RANK] == 0.5 and got[Feature.DENSE_RANK] == 0.25  # 1 / rank
    assert got[Feature.OVERLAP] == pytest.approx(0.6)  # 3 of the first 5
    assert got[Feature.FUSED_MARGIN] == 0.8 and got[Feature.LEXICAL_MARGIN] == 0.25
    assert got[Feature.DENSE_MARGIN] == 0.05 and got[Feature.RERANK] == 0.0  # no reranker
    lexical = features(Evidence(0.0, 0.0, 0.0, 0.0, None))  # no dense list, nothing held
    assert set(lexical.values()) == {0.0}


def test_the_chance_matches_a_hand_computed_logit() -> None:
    # -2 + 3·0.5 + ln 2 + 2·0.4 + 0.6 + 0.5·0.25 = 1.718147...
    logit = -2.0 + 1.5 + math.log(2.0) + 0.8 + 0.6 + 0.125
    assert chance(HAND, EVIDENCE) == pytest.approx(1 / (1 + math.exp(-logit)))
    assert chance(_model(-800.0), EVIDENCE) == 0.0  # no overflow far out
    assert chance(_model(800.0), EVIDENCE) == 1.0


def test_the_model_is_chosen_by_what_ran() -> None:
    lexical, plain, reranked = _model(-1.0), _model(0.0), _model(1.0, rerank=2.0)
    table = {
        Profile.NONE: ProfileConfidence(lexical),
        Profile.EDGE: ProfileConfidence(plain),
        Profile.QUALITY: ProfileConfidence(plain, reranked),
    }
    without_dense = replace(EVIDENCE, cosine=None, dense_rank=None, overlap=None)
    assert chosen_model(Profile.EDGE, without_dense, table) is lexical
    assert chosen_model(Profile.EDGE, EVIDENCE, table) is plain
    scored = replace(EVIDENCE, rerank=0.9)
    assert chosen_model(Profile.EDGE, scored, table) is plain  # none fitted: the plain one
    assert chosen_model(Profile.QUALITY, scored, table) is reranked
    assert chosen_model(Profile.QUALITY, EVIDENCE, table) is plain  # no reranker ran
    assert chance(reranked, scored) == pytest.approx(1 / (1 + math.exp(-(1.0 + 1.8))))


def test_the_shipped_models_weigh_known_features_and_rise_with_the_evidence() -> None:
    for models in CONFIDENCE.values():
        for model in (models.plain, models.reranked):
            if model is not None:
                assert {Feature(name) for name in model.weights}  # each a known feature
    weak, strong = (
        replace(EVIDENCE, coverage=c, matched=m, cosine=v)
        for c, m, v in ((0.1, 0.1, 0.1), (1, 2, 0.6))
    )
    for profile in Profile:
        assert confidence(weak, profile).value < confidence(strong, profile).value


def test_held_weight_is_the_share_and_the_rare_words_worth() -> None:
    weights = {"deploy": 2.0, "vault": 3.0, "zebra": 5.0}  # zebra: in no chunk, idf 5
    assert held_weight(weights, 5.0, {"deploy", "vault", "other"}) == (0.5, 1.0)
    assert held_weight(weights, 5.0, set()) == (0.0, 0.0)
    assert held_weight({}, 5.0, {"deploy"}) == (0.0, 0.0)  # a query without tokens


def test_the_bands_are_the_chance_in_words() -> None:
    assert band_of(WEAK_BELOW - 0.01, weak=True) is Band.NONE
    assert band_of(WEAK_BELOW, weak=False) is Band.POSSIBLE
    assert band_of(GOOD_FROM - 0.01, weak=False) is Band.POSSIBLE
    assert band_of(GOOD_FROM, weak=False) is Band.GOOD
    sure = Confidence(0.9, False, EVIDENCE)
    assert band(sure) is Band.GOOD
    said = describe(sure, hits=3)
    assert said.startswith("Good match (confidence 0.90): the best hit holds 50%")
    assert "among the 5 closest in meaning" in said  # dense rank 4
    lexical = Confidence(0.5, False, replace(EVIDENCE, cosine=None))
    assert describe(lexical, hits=1).endswith("rare-word weight; check the hits.")


@pytest.fixture
def notes(brain: Brain) -> Brain:
    for uri, text in NOTES.items():
        brain.ingest_markdown(text, uri=uri)
    return brain


def test_a_real_question_is_confident_and_nonsense_is_not(notes: Brain) -> None:
    for mode in SearchMode:
        good = notes.search("why did the deploy fail", mode=mode)
        assert good and good[0].uri == "ops/deploy.md"
        sure = good[0].trace.confidence
        assert sure is not None and sure.value > 0.7 and sure.coverage == 1.0
        assert all(h.trace.confidence == sure for h in good)  # one per result set
    weak = notes.search(NONSENSE)
    assert weak  # balanced still shows its best guesses
    said = weak[0].trace.confidence
    assert said is not None and said.weak and said.value < 0.05 and said.coverage == 0.0


VAULT = {
    "team/oncall.md": "# On call\n\nThe on-call engineer answers pages within fifteen minutes "
    "and writes up every incident.",
    "home/bread.md": "# Sourdough\n\nFeed the starter the night before, then bake the loaf at "
    "230 degrees for forty minutes.",
    "git/undo.md": "# Undo the last commit\n\nTo take back the most recent commit and keep your "
    "changes in the working tree, run `git reset --soft HEAD~1`. The changes stay staged.",
    "ops/backup.md": "# Backups\n\nNightly backups go to the cold storage bucket and are kept "
    "for thirty days.",
    "travel/passport.md": "# Passport\n\nRenew the passport six months before it expires; the "
    "form needs two photos.",
}
# each shares one word with its note, and says the rest in other words
PARAPHRASES = {
    "how fast must on-call respond to a page": "team/oncall.md",
    "what oven heat for sourdough": "home/bread.md",
}


def test_a_paraphrase_is_a_possible_match_by_its_meaning_and_nonsense_is_not(
    tmp_path: Path,
) -> None:
    settings = Settings(db=tmp_path / "vault.db", embedder=Profile.EDGE)
    words_only = preset(SearchMode.BALANCED, dense=False)
    with Brain.open(settings=settings) as vault:
        for uri, text in VAULT.items():
            vault.ingest_markdown(text, uri=uri)
        for query, uri in PARAPHRASES.items():
            hits = vault.search(query)
            sure = hits[0].trace.confidence
            assert hits[0].uri == uri and sure is not None and sure.cosine is not None
            assert not sure.weak, (query, sure)
            assert not describe(sure, hits=len(hits)).startswith("No good match")
            assert vault.search(query, mode="conservative")[0].uri == uri
            lexical = vault.search(query, config=words_only)[0].trace.confidence
            assert lexical is not None and lexical.value < sure.value  # the meaning adds
        for nonsense in (NONSENSE, "what is the capital of France"):
            said = vault.search(nonsense)[0].trace.confidence
            assert said is not None and said.weak, (nonsense, said)
            assert vault.search(nonsense, mode="conservative") == []


def test_conservative_returns_nothing_when_nothing_matches_well(notes: Brain) -> None:
    assert notes.search(NONSENSE, mode="conservative") == []
    assert notes.search("backups cold storage", mode="conservative")[0].uri == "ops/backup.md"
    explained = notes.explain(NONSENSE, "ops/deploy.md", mode="conservative")
    assert explained.verdict.value in {"withheld", "not_a_candidate"}


def test_every_interface_says_how_good_a_match_it_is(notes: Brain) -> None:
    hits = notes.search(NONSENSE)
    view = views.search(NONSENSE, "balanced", hits)
    assert view["confidence"]["weak"] and view["match"].startswith("No good match (confidence")
    good = views.search("deploy", "balanced", notes.search("why did the deploy fail"))
    assert good["match"].startswith("Good match") and not good["confidence"]["weak"]
    empty = views.search(NONSENSE, "conservative", [])
    assert empty["confidence"] is None and empty["match"].startswith("No good match")
    assert describe(None, hits=0) == empty["match"]
    # MCP: search answers with the view, recall's text says it in words before the passages
    assert answer("search", notes, {"query": NONSENSE}).data["match"] == view["match"]
    text = answer("recall", notes, {"query": NONSENSE}).text
    assert text is not None and "No good match" in text.split("\n")[0]
    strict = answer("recall", notes, {"query": NONSENSE, "mode": SearchMode.CONSERVATIVE}).text
    assert (
        strict is not None and strict.startswith("No memory matched") and "No good match" in strict
    )


def test_the_cli_says_when_no_hit_is_a_good_match(notes: Brain) -> None:
    db = str(notes.settings.db)
    notes.close()
    runner = CliRunner()
    env = {"BRAIN_EMBEDDER": "hashing"}
    weak = runner.invoke(cli, ["--db", db, "search", NONSENSE], env=env)
    assert weak.exit_code == 0, weak.output
    assert weak.output.startswith("No good match (confidence")
    strict = runner.invoke(cli, ["--db", db, "search", NONSENSE, "--mode", "conservative"], env=env)
    assert strict.output.startswith("No good match: nothing in the brain matches")
    good = runner.invoke(cli, ["--db", db, "search", "why did the deploy fail"], env=env)
    assert good.output.startswith("Good match (confidence")
