"""Tests for nexusbrain.evals.metrics: a hand-computed table plus hypothesis properties."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nexusbrain.errors import InvalidInput
from nexusbrain.evals.metrics import (
    Metric,
    MetricKind,
    evaluate,
    graded_ndcg_at_k,
    mean,
    ndcg_any_at_k,
    ndcg_at_k,
    parse_floor,
    parse_metric,
    precision_at_k,
    recall_all_at_k,
    recall_any_at_k,
    recall_at_k,
    reciprocal_rank,
)

L2 = math.log2
ABCDE = ["a", "b", "c", "d", "e"]
BD_X = frozenset({"b", "d", "x"})  # "x" is relevant but never retrieved
DUP = ["a", "a", "b"]  # "a" retrieved twice
A = frozenset({"a"})
NONE: frozenset[str] = frozenset()

# (metric, ranked, relevant, k, expected) -- k is ignored by reciprocal rank (k=None there).
CASES: list[tuple[str, Sequence[str], AbstractSet[str], int | None, float]] = [
    # ---- recall = |relevant ∩ top-k| / |relevant| ----
    ("recall", ABCDE, BD_X, 1, 0 / 3),  # top-1 {a}: no hit
    ("recall", ABCDE, BD_X, 2, 1 / 3),  # top-2 {a,b}: b
    ("recall", ABCDE, BD_X, 5, 2 / 3),  # b, d; x never retrieved
    ("recall", ABCDE, BD_X, 50, 2 / 3),  # k > len: the whole list
    ("recall", DUP, A, 2, 1 / 1),  # a twice still counts once
    ("recall", [], A, 5, 0.0),  # empty list
    ("recall", ABCDE, NONE, 5, 0.0),  # no relevant ids: 0.0 by convention
    # ---- precision = distinct relevant in top-k / k ----
    ("precision", ABCDE, BD_X, 2, 1 / 2),  # b
    ("precision", ABCDE, BD_X, 5, 2 / 5),  # b, d
    ("precision", ABCDE, BD_X, 10, 2 / 10),  # k > len: still divide by 10
    ("precision", DUP, A, 2, 1 / 2),  # a, a: one distinct relevant id
    ("precision", DUP, A, 3, 1 / 3),
    ("precision", [], A, 3, 0.0),
    # ---- reciprocal rank = 1 / rank of first relevant ----
    ("rr", ABCDE, BD_X, None, 1 / 2),  # b at rank 2
    ("rr", ["c", "e", "d"], BD_X, None, 1 / 3),  # d at rank 3
    ("rr", DUP, A, None, 1 / 1),
    ("rr", ABCDE, frozenset({"z"}), None, 0.0),
    ("rr", [], A, None, 0.0),
    ("rr@2", ["c", "e", "d"], BD_X, 2, 0.0),  # d at rank 3 is past the cutoff
    # ---- binary nDCG: DCG = Σ rel_i/log2(i+1); IDCG over min(k, |relevant|) ones ----
    # hits at ranks 2 and 4; ideal: 3 relevant -> ranks 1..3
    ("ndcg", ABCDE, BD_X, 5, (1 / L2(3) + 1 / L2(5)) / (1 + 1 / L2(3) + 1 / L2(4))),  # ≈ 0.4982
    # k=2: hit at rank 2; ideal min(2,3)=2 -> ranks 1..2
    ("ndcg", ABCDE, BD_X, 2, (1 / L2(3)) / (1 + 1 / L2(3))),  # ≈ 0.3869
    # k > len: DCG as k=5, IDCG 3 terms (|relevant| = 3 < k)
    ("ndcg", ABCDE, BD_X, 10, (1 / L2(3) + 1 / L2(5)) / (1 + 1 / L2(3) + 1 / L2(4))),
    # duplicate rule: a graded at ranks 1 and 2, IDCG = one distinct id = 1 -> ABOVE 1
    ("ndcg", DUP, A, 2, (1 + 1 / L2(3)) / 1),  # ≈ 1.6309
    ("ndcg", DUP, A, 1, 1.0),  # only rank 1 counted
    ("ndcg", [], A, 5, 0.0),  # DCG 0
    ("ndcg", ABCDE, NONE, 5, 0.0),  # IDCG 0 -> 0.0
    # ---- LongMemEval recall_any / recall_all over set(top-k) ----
    ("recall_any", ABCDE, BD_X, 1, 0.0),  # {a}
    ("recall_any", ABCDE, BD_X, 2, 1.0),  # b
    ("recall_all", ABCDE, BD_X, 50, 0.0),  # x never retrieved
    ("recall_all", ABCDE, frozenset({"b", "d"}), 3, 0.0),  # d at rank 4
    ("recall_all", ABCDE, frozenset({"b", "d"}), 4, 1.0),
    ("recall_any", ABCDE, NONE, 5, 0.0),  # any([]) is False
    ("recall_all", ABCDE, NONE, 5, 1.0),  # all([]) is True: official vacuous truth
    ("recall_all", [], NONE, 5, 1.0),
    ("recall_any", [], A, 5, 0.0),
    # ---- LongMemEval ndcg_any: DCG = rel_1 + Σ_{i≥2} rel_i / log2(i) (note log2(i)) ----
    # relevant {b,d}, k=3: gains [0,1,0] -> 0 + 1/log2(2) + 0 = 1; ideal [1,1] -> 1 + 1/log2(2)
    ("ndcg_any", ABCDE, frozenset({"b", "d"}), 3, 1 / 2),  # standard nDCG@3 would be ≈ 0.3869
    # k=4: gains [0,1,0,1] -> 1/log2(2) + 1/log2(4) = 1.5; ideal 2
    ("ndcg_any", ABCDE, frozenset({"b", "d"}), 4, 1.5 / 2),
    # 3 relevant, ideal min(5,3)=3 ones -> 1 + 1/log2(2) + 1/log2(3)
    ("ndcg_any", ABCDE, BD_X, 5, (1 / L2(2) + 1 / L2(4)) / (1 + 1 / L2(2) + 1 / L2(3))),
    # duplicates, no corpus: gains [1,1] -> 1 + 1/log2(2) = 2; ideal one id -> 1
    ("ndcg_any", DUP, A, 2, 2.0),
    ("ndcg_any", [], A, 3, 0.0),
    ("ndcg_any", ABCDE, NONE, 3, 0.0),
]


def _run_case(name: str, ranked: Sequence[str], relevant: AbstractSet[str], k: int | None) -> float:
    if name.startswith("rr"):
        return reciprocal_rank(ranked, relevant, k)
    assert k is not None
    funcs: dict[str, Callable[[Sequence[str], AbstractSet[str], int], float]] = {
        "recall": recall_at_k,
        "precision": precision_at_k,
        "ndcg": ndcg_at_k,
        "recall_any": recall_any_at_k,
        "recall_all": recall_all_at_k,
        "ndcg_any": ndcg_any_at_k,
    }
    return funcs[name](ranked, relevant, k)


@pytest.mark.parametrize(("name", "ranked", "relevant", "k", "expected"), CASES)
def test_hand_computed(
    name: str, ranked: Sequence[str], relevant: AbstractSet[str], k: int | None, expected: float
) -> None:
    assert _run_case(name, ranked, relevant, k) == pytest.approx(expected, abs=1e-12)


def test_ndcg_with_duplicates_exceeds_one_unclamped() -> None:
    # documented behaviour, checked by hand: (1 + 1/log2(3)) / 1 ≈ 1.6309 is not clamped to 1
    assert ndcg_at_k(["a", "a"], {"a"}, 2) == pytest.approx(1.6309297535714575)
    assert ndcg_at_k(["a", "a"], {"a"}, 2) > 1.0


def test_graded_ndcg_hand_computed() -> None:
    grades = {"a": 1, "c": 3, "d": 0, "z": 2, "n": -1}
    # gains [a=1, b=0, c=3] -> 1/log2(2) + 0 + 3/log2(4) = 1 + 1.5 = 2.5
    # ideal positive grades desc [3, 2, 1] -> 3 + 2/log2(3) + 1/log2(4) ≈ 4.7619
    expected = 2.5 / (3 + 2 / L2(3) + 1 / L2(4))  # ≈ 0.5250
    assert graded_ndcg_at_k(["a", "b", "c", "d"], grades, 3) == pytest.approx(expected)
    # negative grade earns 0, not -1: gains [0, 3/log2(3)]; ideal [3, 2] -> 3 + 2/log2(3)
    expected_neg = (3 / L2(3)) / (3 + 2 / L2(3))  # ≈ 0.4441
    assert graded_ndcg_at_k(["n", "c"], grades, 2) == pytest.approx(expected_neg)
    # duplicates graded at each position: c twice -> 3 + 3/log2(3); ideal [3] -> 3 -> ≈ 1.6309
    assert graded_ndcg_at_k(["c", "c"], {"c": 3}, 2) == pytest.approx(1 + 1 / L2(3))
    assert graded_ndcg_at_k(["a"], {"a": 0, "b": -2}, 5) == 0.0  # no positive grade


def test_ndcg_any_with_corpus_follows_official_ideal() -> None:
    # turn->session style: corpus holds session s1 twice (two turns), s2 once
    corpus = ["s1", "s2", "s1"]
    ranked = ["s2", "s1", "s1"]  # a full ranking of the corpus
    # gains [0,1,1] -> 0 + 1/log2(2) + 1/log2(3); ideal: two s1 entries -> [1,1] -> 1 + 1/log2(2)
    expected = (1 + 1 / L2(3)) / 2  # ≈ 0.8155
    assert ndcg_any_at_k(ranked, {"s1"}, 3, corpus=corpus) == pytest.approx(expected)
    # without the corpus the ideal has one entry only: (1 + 1/log2(3)) / 1 > 1
    assert ndcg_any_at_k(ranked, {"s1"}, 3) == pytest.approx(1 + 1 / L2(3))
    # relevant ids absent from the corpus do not enter the official ideal
    assert ndcg_any_at_k(["s1"], {"s1", "zz"}, 2, corpus=["s1"]) == 1.0
    assert ndcg_any_at_k(["s1"], {"s1", "zz"}, 2) == pytest.approx(1 / 2)


def test_mean_and_mrr() -> None:
    rrs = [reciprocal_rank(["x", "a"], A), reciprocal_rank(["a"], A), reciprocal_rank([], A)]
    assert mean(rrs) == pytest.approx((1 / 2 + 1 + 0) / 3)
    with pytest.raises(ValueError, match="zero values"):
        mean([])


@pytest.mark.parametrize("k", [0, -3])
def test_bad_cutoff_rejected(k: int) -> None:
    for func in (recall_at_k, precision_at_k, ndcg_at_k, recall_any_at_k, recall_all_at_k):
        with pytest.raises(ValueError, match="at least 1"):
            func(ABCDE, BD_X, k)
    with pytest.raises(ValueError, match="at least 1"):
        reciprocal_rank(ABCDE, BD_X, k)


# ---------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("r5", "recall@5"),
        ("r10", "recall@10"),
        ("recall@100", "recall@100"),
        ("R@5", "recall@5"),
        ("p5", "precision@5"),
        ("p@5", "precision@5"),
        ("P_10", "precision@10"),
        ("ndcg10", "ndcg@10"),
        ("nDCG@10", "ndcg@10"),
        ("ndcg_cut_10", "ndcg@10"),
        ("mrr", "mrr"),
        ("MRR@10", "mrr@10"),
        ("rr", "mrr"),
        ("recip_rank", "mrr"),
        (" recall_any@5 ", "recall_any@5"),
        ("recall_all10", "recall_all@10"),
        ("ndcg_any@3", "ndcg_any@3"),
    ],
)
def test_parse_metric(name: str, key: str) -> None:
    assert parse_metric(name).key == key


@pytest.mark.parametrize(
    "name", ["", "foo@5", "ndcg", "r", "recall@0", "r5x", "@5", "ndcg@-1", "mrr_", "5"]
)
def test_parse_metric_rejects(name: str) -> None:
    with pytest.raises(InvalidInput):
        parse_metric(name)
    with pytest.raises(ValueError):
        parse_metric(name)


@given(st.sampled_from(list(MetricKind)), st.integers(1, 10_000))
def test_key_round_trips(kind: MetricKind, k: int) -> None:
    metric = Metric(kind, k)
    assert parse_metric(metric.key) == metric
    assert parse_metric(str(metric)) == metric


def test_parse_floor() -> None:
    assert parse_floor("r5=0.85") == (Metric(MetricKind.RECALL, 5), 0.85)
    assert parse_floor("ndcg@10=1") == (Metric(MetricKind.NDCG, 10), 1.0)
    for bad in ["r5", "r5=", "r5=abc", "r5=1.5", "r5=-0.1", "r5=nan", "zz=0.5"]:
        with pytest.raises(ValueError):
            parse_floor(bad)


def test_evaluate_dispatch() -> None:
    grades = {"a": 1, "c": 3}
    ndcg3 = parse_metric("ndcg@3")
    ranked = ["a", "b", "c"]
    assert evaluate(ndcg3, ranked, grades) == graded_ndcg_at_k(ranked, grades, 3)
    assert evaluate(ndcg3, ranked, {"a", "c"}) == ndcg_at_k(ranked, {"a", "c"}, 3)
    assert evaluate(ndcg3, ranked, grades) != evaluate(ndcg3, ranked, {"a", "c"})
    # other metrics treat grade > 0 as relevant
    assert evaluate(parse_metric("p@2"), ranked, {"a": 0, "b": 2}) == 1 / 2
    assert evaluate(parse_metric("mrr"), ranked, {"a": 0, "c": 1}) == 1 / 3
    assert evaluate(parse_metric("mrr@2"), ranked, {"c": 1}) == 0.0
    assert evaluate(parse_metric("recall_all@2"), ranked, {"a": 1, "c": 1}) == 0.0
    assert evaluate(parse_metric("ndcg_any@3"), ranked, {"c": 1}) == 1 / L2(3)


# ---------------------------------------------------------------- properties

IDS = [f"d{i}" for i in range(12)]
unique_lists = st.lists(st.sampled_from(IDS), unique=True, max_size=12)
any_lists = st.lists(st.sampled_from(IDS), max_size=20)
id_sets = st.frozensets(st.sampled_from(IDS))
cutoffs = st.integers(1, 15)
grade_maps = st.dictionaries(st.sampled_from(IDS), st.integers(-1, 3))

SET_METRICS: list[Callable[[Sequence[str], AbstractSet[str], int], float]] = [
    recall_at_k,
    precision_at_k,
    ndcg_at_k,
    recall_any_at_k,
    recall_all_at_k,
    ndcg_any_at_k,
    lambda ranked, relevant, k: reciprocal_rank(ranked, relevant, k),
]


@given(unique_lists, id_sets, cutoffs, grade_maps)
def test_metrics_in_unit_interval_without_duplicates(
    ranked: list[str], relevant: frozenset[str], k: int, grades: dict[str, int]
) -> None:
    for func in SET_METRICS:
        assert 0.0 <= func(ranked, relevant, k) <= 1.0 + 1e-12
    assert 0.0 <= reciprocal_rank(ranked, relevant) <= 1.0
    assert 0.0 <= graded_ndcg_at_k(ranked, grades, k) <= 1.0 + 1e-12


@given(any_lists, id_sets, cutoffs, grade_maps, st.permutations(IDS))
def test_invariant_under_relabelling(
    ranked: list[str], relevant: frozenset[str], k: int, grades: dict[str, int], perm: list[str]
) -> None:
    relabel = dict(zip(IDS, perm, strict=True))
    new_ranked = [relabel[d] for d in ranked]
    new_relevant = frozenset(relabel[d] for d in relevant)
    for func in SET_METRICS:
        assert func(new_ranked, new_relevant, k) == func(ranked, relevant, k)
    new_grades = {relabel[d]: g for d, g in grades.items()}
    assert graded_ndcg_at_k(new_ranked, new_grades, k) == graded_ndcg_at_k(ranked, grades, k)


@given(any_lists, id_sets, cutoffs)
def test_recall_non_decreasing_in_k(ranked: list[str], relevant: frozenset[str], k: int) -> None:
    for func in (recall_at_k, recall_any_at_k, recall_all_at_k):
        assert func(ranked, relevant, k) <= func(ranked, relevant, k + 1)


@given(any_lists, id_sets, cutoffs, st.data())
def test_appending_relevant_never_lowers_recall(
    ranked: list[str], relevant: frozenset[str], k: int, data: st.DataObject
) -> None:
    extra = data.draw(st.sampled_from(sorted(relevant))) if relevant else "d0"
    longer = [*ranked, extra]
    for func in (recall_at_k, recall_any_at_k, recall_all_at_k):
        assert func(longer, relevant, k) >= func(ranked, relevant, k)
        full = max(k, len(longer))
        assert func(longer, relevant, full) >= func(ranked, relevant, full)


@given(any_lists, id_sets, cutoffs)
def test_binary_ndcg_is_graded_ndcg_with_unit_grades(
    ranked: list[str], relevant: frozenset[str], k: int
) -> None:
    graded = graded_ndcg_at_k(ranked, dict.fromkeys(relevant, 1), k)
    assert ndcg_at_k(ranked, relevant, k) == pytest.approx(graded, abs=1e-12)


@given(unique_lists, id_sets, cutoffs)
def test_precision_times_k_counts_hits(ranked: list[str], relevant: frozenset[str], k: int) -> None:
    hits = sum(1 for d in ranked[:k] if d in relevant)
    assert precision_at_k(ranked, relevant, k) * k == pytest.approx(hits)


def _official_style_ndcg(
    rankings: list[int], correct: frozenset[str], corpus_ids: list[str], k: int
) -> float:
    """LongMemEval's ndcg restated over corpus indices: relevance per corpus entry, ideal = all
    corpus relevances sorted, DCG with position 1 undiscounted and position i>=2 over log2(i)."""

    def dcg(rels: list[int]) -> float:
        total = 0.0
        for pos, rel in enumerate(rels[:k], start=1):
            total += rel if pos == 1 else rel / math.log2(pos)
        return total

    relevance = [int(cid in correct) for cid in corpus_ids]
    ideal = dcg(sorted(relevance, reverse=True))
    return 0.0 if ideal == 0 else dcg([relevance[i] for i in rankings]) / ideal


@given(st.lists(st.sampled_from(IDS[:6]), min_size=1, max_size=15), id_sets, cutoffs, st.data())
def test_ndcg_any_matches_official_convention(
    corpus: list[str], relevant: frozenset[str], k: int, data: st.DataObject
) -> None:
    rankings = data.draw(st.permutations(range(len(corpus))))
    ranked = [corpus[i] for i in rankings]
    official = _official_style_ndcg(rankings, relevant, corpus, k)
    assert ndcg_any_at_k(ranked, relevant, k, corpus=corpus) == pytest.approx(official)
    assert ndcg_any_at_k(ranked, relevant, k, corpus=corpus) <= 1.0 + 1e-12
    if len(set(corpus)) == len(corpus) and relevant <= set(corpus):
        assert ndcg_any_at_k(ranked, relevant, k) == pytest.approx(official)
