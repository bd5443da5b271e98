"""LongMemEval: the official metric conventions, the suite's log lines, and the LoCoMo converter.

`official_*` below restate xiaowu0162/LongMemEval src/retrieval/eval_utils.py, which takes a
full permutation of corpus indices; our functions take ranked ids and must agree with it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nexusbrain.cli.eval_targets import scratch_factory
from nexusbrain.evals import locomo, longmemeval
from nexusbrain.evals.locomo_to_longmemeval import convert, longmemeval_date
from nexusbrain.evals.runner import the_metrics
from nexusbrain.evals.targets import SearchRequest
from tests.conftest import DATASETS

LOCOMO_DEV = DATASETS / "locomo" / "locomo_dev.json"
LEXICAL = scratch_factory(lexical_only=True)


def official_dcg(relevances: Sequence[float], k: int) -> float:
    top = list(relevances)[:k]
    if not top:
        return 0.0
    return top[0] + sum(r / math.log2(i) for i, r in enumerate(top[1:], start=2))


def official_evaluate(
    rankings: Sequence[int], correct: Sequence[str], corpus_ids: Sequence[str], k: int
) -> tuple[float, float, float]:
    recalled = {corpus_ids[i] for i in rankings[:k]}
    relevances = [1 if doc in correct else 0 for doc in corpus_ids]
    ideal = official_dcg(sorted(relevances, reverse=True), k)
    actual = official_dcg([relevances[i] for i in rankings[:k]], k)
    return (
        float(any(doc in recalled for doc in correct)),
        float(all(doc in recalled for doc in correct)),
        actual / ideal if ideal else 0.0,
    )


def official_turn2session(
    rankings: Sequence[int], correct: Sequence[str], corpus_ids: Sequence[str], k: int
) -> tuple[float, float, float]:
    def strip(docid: str) -> str:
        return "_".join(docid.split("_")[:-1])

    sessions = [strip(x) for x in corpus_ids]
    wide = k
    while wide <= len(sessions) and len({sessions[i] for i in rankings[:wide]}) < k:
        wide += 1
    return official_evaluate(rankings, list({strip(x) for x in correct}), sessions, wide)


@st.composite
def turn_corpora(draw: st.DrawFn) -> tuple[list[str], list[int]]:
    """Turn corpus ids of a few sessions (some marked answer), and a permutation of them."""
    ids = []
    for s in range(draw(st.integers(1, 6))):
        answer = draw(st.booleans())
        for t in range(1, draw(st.integers(1, 5)) + 1):
            marked = answer and draw(st.booleans())
            ids.append(f"{'answer' if marked else ('noans' if answer else 'sess')}_{s}_{t}")
    order = draw(st.permutations(range(len(ids))))
    return ids, list(order)


@settings(max_examples=200, deadline=None)
@given(turn_corpora())
def test_metrics_agree_with_the_official_code(case: tuple[list[str], list[int]]) -> None:
    corpus, order = case
    ranked = [corpus[i] for i in order]
    correct = [doc for doc in dict.fromkeys(corpus) if "answer" in doc]
    turns = longmemeval.score_ranking(ranked, corpus)
    sessions = longmemeval.score_turns_as_sessions(ranked, corpus)
    for k in longmemeval.KS:
        expected = official_evaluate(order, correct, corpus, k)
        assert (turns[f"recall_any@{k}"], turns[f"recall_all@{k}"]) == expected[:2]
        assert turns[f"ndcg_any@{k}"] == pytest.approx(expected[2])
        expected = official_turn2session(order, correct, corpus, k)
        assert (sessions[f"recall_any@{k}"], sessions[f"recall_all@{k}"]) == expected[:2]
        assert sessions[f"ndcg_any@{k}"] == pytest.approx(expected[2])


def test_corpus_ids_follow_the_official_marking() -> None:
    turns = [
        {"role": "user", "content": "a", "has_answer": False},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c", "has_answer": True},
    ]
    ids = [i.corpus_id for i in longmemeval.turn_corpus("answer_s1", turns, "t")]
    assert ids == ["noans_s1_1", "answer_s1_3"]
    assert [i.corpus_id for i in longmemeval.turn_corpus("s2", turns, "t")] == ["s2_1", "s2_3"]
    assert longmemeval.session_corpus_id("answer_s1", turns) == "answer_s1"
    assert longmemeval.session_corpus_id("answer_s1", turns[:2]) == "noans_s1"


def entry(qid: str) -> dict[str, object]:
    return {
        "question_id": qid,
        "question_type": "single-session-user",
        "question": "What breed is my dog Pixel?",
        "answer": "greyhound",
        "question_date": "2023/05/20 (Sat) 02:21",
        "haystack_session_ids": ["s_a", "answer_b", "s_c"],
        "haystack_dates": ["2023/05/01 (Mon) 10:00", "2023/05/02 (Tue) 10:00", "d3"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "I bake sourdough on Sundays."},
                {"role": "assistant", "content": "Your dog Pixel sounds lovely."},
            ],
            [
                {"role": "user", "content": "Pixel is a greyhound, my dog.", "has_answer": True},
                {"role": "assistant", "content": "Greyhounds are fast."},
                {"role": "user", "content": "Pixel also likes naps.", "has_answer": False},
            ],
            [{"role": "user", "content": "My bike has a flat tyre."}],
        ],
        "answer_session_ids": ["answer_b"],
    }


@pytest.mark.parametrize("granularity", list(longmemeval.Granularity))
def test_suite_writes_official_log_lines(tmp_path: Path, granularity: str) -> None:
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([entry("q1"), entry("q2_abs")]))
    out = tmp_path / "out.jsonl"
    with out.open("wb") as handle:
        run = longmemeval.run_longmemeval(
            path, LEXICAL, SearchRequest(), handle, granularity=longmemeval.Granularity(granularity)
        )
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["question_id"] for line in lines] == ["q1"]
    assert run.counts == {"questions": 2, "scored": 1, "skipped_abstention": 1}
    result = lines[0]["retrieval_results"]
    assert result["query"] == "What breed is my dog Pixel?"
    assert set(lines[0]) >= set(longmemeval.REQUIRED) | {"answer", "retrieval_results"}
    first = result["ranked_items"][0]
    assert set(first) == {"corpus_id", "text", "timestamp"}
    if granularity == "turn":
        # the assistant's "Your dog Pixel" is not indexed; user turns only
        assert first == {
            "corpus_id": "answer_b_1",
            "text": "Pixel is a greyhound, my dog.",
            "timestamp": "2023/05/02 (Tue) 10:00",
        }
        assert "noans_b_3" in [i["corpus_id"] for i in result["ranked_items"]]
        assert set(result["metrics"]) == {"session", "turn"}
        assert result["metrics"]["session"]["recall_any@1"] == 1.0
    else:
        assert first["corpus_id"] == "answer_b" and result["metrics"]["turn"] == {}
    assert run.metrics["recall_any@1"] == 1.0 and len(run.metrics) == 18


def test_dates_convert_to_longmemeval_format() -> None:
    assert longmemeval_date("1:56 pm on 8 May, 2023") == "2023/05/08 (Mon) 13:56"
    assert longmemeval_date("sometime") == "sometime"


@pytest.mark.skipif(not LOCOMO_DEV.exists(), reason="shared LoCoMo data not present")
def test_converter_on_the_locomo_dev_conversations() -> None:
    samples = locomo.load_locomo(LOCOMO_DEV)
    questions = convert(samples)
    assert len(questions) == 997  # 999 minus the 2 without evidence
    assert sum(q["question_id"].endswith("_abs") for q in questions) == 237
    by_id = {s.sample_id: s for s in samples}
    for q in questions:
        sample = by_id[q["question_id"].rsplit("_q", 1)[0]]
        index = int(q["question_id"].rsplit("_q", 1)[1].removesuffix("_abs"))
        raw = sample.questions[index - 1]
        evidence = set(locomo.normalise_evidence(raw.evidence, sample.dia_ids()).ids)
        marked = {t["dia_id"] for turns in q["haystack_sessions"] for t in turns if t["has_answer"]}
        assert marked == evidence
        assert q["answer_session_ids"] == [s for s in q["haystack_session_ids"] if "answer" in s]
        assert len(q["haystack_sessions"]) == len(sample.sessions)


@pytest.mark.skipif(not LOCOMO_DEV.exists(), reason="shared LoCoMo data not present")
def test_converted_locomo_agrees_with_the_locomo_suite(tmp_path: Path) -> None:
    """On single-evidence questions, turn recall_all@5 of the converted data is LoCoMo's
    recall@5; the texts differ only by the role prefix, so nearly every question agrees."""
    sample = next(s for s in json.loads(LOCOMO_DEV.read_text()) if s["sample_id"] == "conv-30")
    sample["qa"] = [q for q in sample["qa"] if len(q["evidence"]) == 1 and q["category"] != 5]
    sample["qa"] = sample["qa"][:25]
    source = tmp_path / "conv30.json"
    source.write_text(json.dumps([sample]))
    converted = tmp_path / "conv30_lme.json"
    converted.write_text(json.dumps(convert(locomo.load_locomo(source))))
    with (tmp_path / "out.jsonl").open("wb") as handle:
        lme = longmemeval.run_longmemeval(converted, LEXICAL, SearchRequest(), handle)
    plain = locomo.run_locomo(source, LEXICAL, SearchRequest(10), the_metrics(["recall@5"]))
    ours = {q.id.split(":q")[1]: q.scores["recall@5"] for q in plain.per_query}
    theirs = {q.id.split("_q")[1]: q.scores["recall_all@5"] for q in lme.per_query}
    assert ours.keys() == theirs.keys() and len(ours) == 25
    agree = sum(ours[k] == theirs[k] for k in ours)
    assert agree >= 22, (agree, ours, theirs)
