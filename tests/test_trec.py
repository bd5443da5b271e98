"""Tests for nexusbrain.evals.trec: parsing, trec_eval conventions, agreement with ir-measures."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from nexusbrain.evals.metrics import parse_metric
from nexusbrain.evals.trec import (
    Qrels,
    QrelsFormat,
    Run,
    TrecFormatError,
    detect_qrels_format,
    ranked_docids,
    read_qrels,
    read_run,
    score_run,
)

# ours -> ir-measures name
METRIC_PAIRS = {
    "ndcg@10": "nDCG@10",
    "ndcg@5": "nDCG@5",
    "recall@5": "R@5",
    "recall@10": "R@10",
    "recall@100": "R@100",
    "precision@5": "P@5",
    "precision@10": "P@10",
    "mrr": "RR",
    "mrr@10": "RR@10",
}


def _random_collection(seed: int, ties: bool) -> tuple[list[str], list[str]]:
    """Run and qrels lines: 30 qrels queries, graded rels -1..3, shuffled ranks, some qrels
    queries without run entries, some run queries without qrels, some queries with no relevant
    document; with ``ties``, scores have one decimal so many tie."""
    rng = random.Random(seed)
    pool = [f"doc{i:03d}" for i in range(150)]
    qrels_lines: list[str] = []
    run_lines: list[str] = []
    for q in range(34):
        qid = f"q{q}"
        if q < 30:
            judged = rng.sample(pool, rng.randint(1, 25))
            no_relevant = q % 7 == 3
            for doc in judged:
                grade = rng.choice([0, -1]) if no_relevant else rng.choice([-1, 0, 0, 1, 2, 3])
                qrels_lines.append(f"{qid} 0 {doc} {grade}")
        if q % 10 == 5:
            continue  # in qrels, missing from the run
        docs = rng.sample(pool, rng.randint(0, 120))
        ranks = list(range(1, len(docs) + 1))
        rng.shuffle(ranks)  # the rank column must not matter
        for doc, rank in zip(docs, ranks, strict=True):
            score = round(rng.uniform(0, 3), 1) if ties else rng.uniform(0, 3)  # 31 values
            run_lines.append(f"{qid} Q0 {doc} {rank} {score} seed{seed}")
    rng.shuffle(run_lines)
    return run_lines, qrels_lines


def _expected(ir_scores: dict[str, float], ir_name: str, ties: bool) -> float:
    # ir-measures computes RR@k with its msmarco provider, which breaks score ties by docid
    # ASCENDING, unlike trec_eval (descending) that we follow for every metric. With ties,
    # check mrr@10 against trec_eval's own RR instead: RR@10 = RR if RR >= 1/10 else 0.
    if ir_name == "RR@10" and ties:
        rr = ir_scores["RR"]
        return rr if rr >= 0.1 - 1e-12 else 0.0
    return ir_scores[ir_name]


@pytest.mark.parametrize("ties", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_ir_measures(seed: int, ties: bool, tmp_path: Path) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    run_lines, qrels_lines = _random_collection(seed, ties)
    run_path, qrels_path = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run_path.write_text("\n".join(run_lines) + "\n")
    qrels_path.write_text("\n".join(qrels_lines) + "\n")

    ours = score_run(read_run(run_path), read_qrels(qrels_path), list(METRIC_PAIRS))
    measures = [ir_measures.parse_measure(name) for name in METRIC_PAIRS.values()]
    theirs_run = list(ir_measures.read_trec_run(str(run_path)))
    theirs_qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))

    per_query: dict[str, dict[str, float]] = {}
    for row in ir_measures.iter_calc(measures, theirs_qrels, theirs_run):
        per_query.setdefault(row.query_id, {})[str(row.measure)] = row.value
    assert set(per_query) == set(ours.per_query) == {f"q{q}" for q in range(30)}
    for qid, scores in ours.per_query.items():
        for key, ir_name in METRIC_PAIRS.items():
            expected = _expected(per_query[qid], ir_name, ties)
            assert scores[key] == pytest.approx(expected, abs=1e-6), (qid, key)

    aggregate = ir_measures.calc_aggregate(measures, theirs_qrels, theirs_run)
    for key, ir_name in METRIC_PAIRS.items():
        if ties and ir_name == "RR@10":
            theirs = sum(_expected(s, ir_name, ties) for s in per_query.values()) / len(per_query)
        else:
            theirs = aggregate[ir_measures.parse_measure(ir_name)]
        assert ours.mean[key] == pytest.approx(theirs, abs=1e-6), key
    # the data really exercises the conventions
    assert 0.0 < ours.mean["ndcg@10"] < 1.0


def test_ties_broken_by_docid_descending_and_rank_ignored() -> None:
    run = read_run(
        [
            "q1 Q0 a 1 2.0 t",
            "q1 Q0 c 2 1.0 t",
            "q1 Q0 b 3 1.0 t",
            "q1 Q0 z 4 0.5 t",
        ]
    )
    assert ranked_docids(run["q1"]) == ["a", "c", "b", "z"]
    # relevant b: ranked a, c, b -> RR 1/3 even though its rank column says 3 and c's says 2
    scores = score_run(run, {"q1": {"b": 1}}, ["mrr"])
    assert scores.per_query["q1"]["mrr"] == pytest.approx(1 / 3)


def test_query_sets_follow_qrels() -> None:
    run: Run = {"q1": [("a", 1.0)], "extra": [("a", 1.0)]}
    qrels: Qrels = {"q1": {"a": 2}, "q2": {"b": 1}, "q3": {"c": 0}}
    scores = score_run(run, qrels, ["r5", "ndcg@5", parse_metric("mrr")])
    assert set(scores.per_query) == {"q1", "q2", "q3"}  # "extra" ignored
    assert scores.per_query["q1"] == {"recall@5": 1.0, "ndcg@5": 1.0, "mrr": 1.0}
    assert scores.per_query["q2"] == {"recall@5": 0.0, "ndcg@5": 0.0, "mrr": 0.0}  # no run
    assert scores.per_query["q3"] == {"recall@5": 0.0, "ndcg@5": 0.0, "mrr": 0.0}  # no rel
    assert scores.mean == {"recall@5": 1 / 3, "ndcg@5": 1 / 3, "mrr": 1 / 3}
    assert [m.key for m in scores.metrics] == ["recall@5", "ndcg@5", "mrr"]


def test_graded_ndcg_in_run_scoring() -> None:
    run = read_run(["q 0 x 1 3 t", "q 0 y 2 2 t", "q 0 w 3 1 t"])
    qrels: Qrels = {"q": {"x": 1, "y": 0, "w": 3, "v": -2}}
    # gains [1, 0, 3] -> 1 + 3/log2(4) = 2.5; ideal [3, 1] -> 3 + 1/log2(3)
    expected = 2.5 / (3 + 1 / math.log2(3))
    assert score_run(run, qrels, ["ndcg@3"]).mean["ndcg@3"] == pytest.approx(expected)


def test_score_run_dedupes_metrics_and_rejects_empty_qrels() -> None:
    scores = score_run({}, {"q": {"a": 1}}, ["r5", "recall@5", "R_5"])
    assert [m.key for m in scores.metrics] == ["recall@5"]
    with pytest.raises(ValueError, match="no query"):
        score_run({}, {}, ["r5"])


def test_read_run_from_path_and_lines(tmp_path: Path) -> None:
    lines = ["q1 Q0 d1 1 1.5 tag", "", "q1 Q0 d2 2 -0.5e1 tag", "q2\tQ0\td1\t1\t3\ttag"]
    path = tmp_path / "run"
    path.write_text("\n".join(lines))
    expected = {"q1": [("d1", 1.5), ("d2", -5.0)], "q2": [("d1", 3.0)]}
    assert read_run(lines) == expected
    assert read_run(path) == expected
    assert read_run(str(path)) == expected
    assert read_run([]) == {}


@pytest.mark.parametrize(
    ("lines", "pattern"),
    [
        (["q1 Q0 d1 1 1.0 t", "q1 Q0 d2 2 1.0"], r"run line 2: expected 6 fields"),
        (["q1 Q0 d1 1 high t"], r"run line 1: score 'high' is not a number"),
        (["q1 Q0 d1 1 nan t"], r"run line 1: score is NaN"),
        (["", "q1 Q0 d1 1 1 t", "q1 Q0 d1 2 0.5 t"], r"run line 3: docid 'd1' repeated"),
    ],
)
def test_read_run_errors_name_the_line(lines: list[str], pattern: str) -> None:
    with pytest.raises(TrecFormatError, match=pattern):
        read_run(lines)
    with pytest.raises(ValueError, match=pattern):
        read_run(lines)


def test_read_qrels_trec_and_beir_agree(tmp_path: Path) -> None:
    trec = ["q1 0 d1 2", "q1 0 d2 0", "q2 0 d9 1"]
    beir = ["query-id\tcorpus-id\tscore", "q1\td1\t2", "q1\td2\t0", "q2\td9\t1"]
    expected = {"q1": {"d1": 2, "d2": 0}, "q2": {"d9": 1}}
    assert read_qrels(trec) == expected
    assert read_qrels(beir) == expected
    assert read_qrels(beir[1:]) == expected  # BEIR without its header
    path = tmp_path / "test.tsv"
    path.write_text("\n".join(beir) + "\n")
    assert read_qrels(path) == expected
    assert read_qrels(beir[1:], fmt=QrelsFormat.BEIR) == expected
    assert read_qrels([]) == {}


def test_detect_qrels_format() -> None:
    assert detect_qrels_format("q 0 d 1") is QrelsFormat.TREC
    assert detect_qrels_format("query-id\tcorpus-id\tscore") is QrelsFormat.BEIR
    with pytest.raises(ValueError, match="cannot tell"):
        detect_qrels_format("q d")


@pytest.mark.parametrize(
    ("lines", "fmt", "pattern"),
    [
        (["q1 0 d1 1", "q1 0 d2"], None, r"qrels line 2: expected trec qrels"),
        (["q1 0 d1 1", "q1 0 d2 high"], None, r"qrels line 2: relevance 'high' is not an int"),
        (["q1 0 d1 1", "q1 0 d1 2"], None, r"qrels line 2: docid 'd1' judged twice"),
        (["q1 0 d1 1.5"], None, r"qrels line 1: relevance '1.5'"),
        (["h1\th2\th3", "q1\td1\t1", "q1\td2\t1\textra"], None, r"qrels line 3: expected beir"),
        (["q1 0 d1 1"], QrelsFormat.BEIR, r"qrels line 1: expected beir"),
        (["a b"], None, r"cannot tell"),
    ],
)
def test_read_qrels_errors_name_the_line(
    lines: list[str], fmt: QrelsFormat | None, pattern: str
) -> None:
    with pytest.raises(ValueError, match=pattern):
        read_qrels(lines, fmt)
