"""Every result set carries a confidence: a calibrated chance that one of its first five hits
is relevant, from how much of the query's rare-word weight its best hit holds (SPEC §3)."""

from __future__ import annotations

import math

import pytest
from click.testing import CliRunner

from nexusbrain import views
from nexusbrain.brain import Brain
from nexusbrain.cli.main import cli
from nexusbrain.mcp_server.tools import RecallArgs, SearchArgs, recall, search
from nexusbrain.records import SearchMode
from nexusbrain.retrieval.confidence import confidence, describe
from nexusbrain.retrieval.modes import ConfidenceModel

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


def test_confidence_matches_a_hand_computed_curve() -> None:
    model = ConfidenceModel(intercept=-6.0, coverage=6.0, matched=1.5, weak_below=0.3)
    weights = {"deploy": 2.0, "vault": 3.0, "zebra": 5.0}  # zebra: in no chunk, idf 5
    got = confidence(weights, 5.0, {"deploy", "vault", "other"}, model)
    assert got.coverage == pytest.approx(0.5)
    assert got.matched == pytest.approx(1.0)  # one rare word's worth
    logit = -6.0 + 6.0 * 0.5 + 1.5 * math.log(2.0)
    assert got.value == pytest.approx(1 / (1 + math.exp(-logit)))
    assert got.weak  # 0.05
    nothing = confidence(weights, 5.0, set(), model)
    assert nothing.coverage == 0 and nothing.matched == 0 and nothing.weak
    assert confidence({}, 5.0, {"deploy"}, model).coverage == 0  # a query without tokens
    assert confidence({"deploy": 5.0}, 5.0, {"deploy"}, model).value > 0.6  # 1 rare word


def test_more_of_the_query_held_means_more_confidence() -> None:
    model = ConfidenceModel()
    weights = {"a": 1.0, "b": 2.0, "c": 4.0}
    values = [confidence(weights, 4.0, h, model).value for h in ({"a"}, {"a", "b"}, set("abc"))]
    assert values == sorted(values) and values[0] < values[-1]


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
    answer = search(notes, SearchArgs(query=NONSENSE))
    assert answer.data["match"] == view["match"]
    text = recall(notes, RecallArgs(query=NONSENSE)).text
    assert text is not None and "No good match" in text.split("\n")[0]
    strict = recall(notes, RecallArgs(query=NONSENSE, mode=SearchMode.CONSERVATIVE)).text
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
