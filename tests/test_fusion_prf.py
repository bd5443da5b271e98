"""Pure math of the hybrid pipeline: RRF and z-score fusion, RM3 terms and the Rocchio vector."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nexusbrain.retrieval.fusion import rrf, standardised, zscore
from nexusbrain.retrieval.prf import rm3_terms, rocchio


def test_rrf_matches_a_hand_computed_table() -> None:
    # a: bm25 rank 1, dense rank 3  -> 1/61 + 0.5/63 = 0.0163934 + 0.0079365 = 0.0243299
    # b: bm25 rank 2                -> 1/62           = 0.0161290
    # c: dense rank 1               -> 0.5/61         = 0.0081967
    # d: dense rank 2               -> 0.5/62         = 0.0080645
    fused = rrf({"bm25": [1, 2], "dense": [3, 4, 1]}, {"bm25": 1.0, "dense": 0.5})
    # ids: 1=a, 2=b, 3=c, 4=d
    assert [f.chunk_id for f in fused] == [1, 2, 3, 4]
    assert fused[0].score == pytest.approx(1 / 61 + 0.5 / 63)
    assert fused[1].score == pytest.approx(1 / 62)
    assert [(c.retriever, c.rank) for c in fused[0].contributions] == [("bm25", 1), ("dense", 3)]


def test_rrf_ties_break_by_best_rank_then_id() -> None:
    fused = rrf({"x": [7, 8], "y": [8, 7]})
    assert [f.chunk_id for f in fused] == [7, 8]  # equal scores, equal best rank: lower id


def test_rrf_counts_an_id_once_per_list() -> None:
    [only] = rrf({"x": [5, 5, 5]})
    assert only.score == pytest.approx(1 / 61)


lists_strategy = st.dictionaries(
    st.sampled_from(["bm25", "dense", "bm25_prf", "dense_prf"]),
    st.lists(st.integers(0, 30), max_size=15, unique=True),
    max_size=4,
)


@given(lists_strategy, st.randoms(use_true_random=False))
def test_rrf_does_not_depend_on_the_order_of_the_lists(lists, rnd) -> None:  # type: ignore[no-untyped-def]
    names = list(lists)
    rnd.shuffle(names)
    shuffled = {name: lists[name] for name in names}
    assert rrf(lists) == rrf(shuffled)


@given(lists_strategy)
def test_rrf_scores_exactly_the_ids_in_some_list(lists) -> None:  # type: ignore[no-untyped-def]
    fused = rrf(lists)
    assert {f.chunk_id for f in fused} == {i for ids in lists.values() for i in ids}
    scores = [f.score for f in fused]
    assert scores == sorted(scores, reverse=True)
    assert all(s > 0 for s in scores)


def test_zscore_matches_a_hand_computed_table() -> None:
    # bm25 scores 6, 4, 2 (ids 1, 2, 3): mean 4, std sqrt(8/3) = 1.63299
    # dense scores 0.9, 0.5 (ids 3, 4): mean 0.7, std 0.2; id 1 scored 0.8 outside the list,
    # id 2 has no dense score: it takes the list's lowest, 0.5
    fused = zscore(
        {"bm25": [(1, 6.0), (2, 4.0), (3, 2.0)], "dense": [(3, 0.9), (4, 0.5)]},
        {"bm25": 1.0, "dense": 0.5},
        {"dense": {1: 0.8}},
    )
    std = (8 / 3) ** 0.5
    expected = {
        1: 2 / std + 0.5 * (0.8 - 0.7) / 0.2,
        2: 0.0 + 0.5 * (0.5 - 0.7) / 0.2,
        3: -2 / std + 0.5 * (0.9 - 0.7) / 0.2,
        4: -2 / std + 0.5 * (0.5 - 0.7) / 0.2,  # no bm25 score: bm25's lowest
    }
    assert [f.chunk_id for f in fused] == sorted(expected, key=lambda i: -expected[i])
    for f in fused:
        assert f.score == pytest.approx(expected[f.chunk_id])
    one = next(f for f in fused if f.chunk_id == 1)
    assert [(c.retriever, c.rank) for c in one.contributions] == [("bm25", 1), ("dense", None)]
    assert one.contributions[1].z == pytest.approx(0.5)


def test_zscore_of_a_list_of_equal_scores_is_zero() -> None:
    fused = zscore({"x": [(1, 3.0), (2, 3.0)]})
    assert [(f.chunk_id, f.score) for f in fused] == [(1, 0.0), (2, 0.0)]


def test_a_short_list_is_standardised_over_the_depth_as_if_padded_with_zeros() -> None:
    # bm25 holds one exact match, 5.0; over 4 positions: 5, 0, 0, 0 -> mean 1.25,
    # std sqrt((3.75² + 3 · 1.25²) / 4) = sqrt(4.6875); id 2 holds no query word: 0.0
    # dense 0.9, 0.7, 0.5, 0.3 (ids 2, 3, 4, 1): mean 0.6, std sqrt(0.05)
    fused = zscore(
        {"bm25": [(1, 5.0)], "dense": [(2, 0.9), (3, 0.7), (4, 0.5), (1, 0.3)]},
        {"bm25": 1.0, "dense": 0.3},
        {"bm25": {2: 0.0, 3: 0.0, 4: 0.0}},
        positions=4,
    )
    std = 4.6875**0.5
    assert fused[0].chunk_id == 1  # the exact match stays first
    one = fused[0].contributions
    assert one[0].z == pytest.approx(3.75 / std)
    assert one[1].z == pytest.approx((0.3 - 0.6) / 0.05**0.5)
    assert fused[1].contributions[0].z == pytest.approx(-1.25 / std)
    # without the padding a one-item list gives z = 0 and the dense list decides
    assert zscore({"bm25": [(1, 5.0)], "dense": [(2, 0.9), (1, 0.3)]})[0].chunk_id == 2


def test_min_z_bounds_what_a_list_can_take_away() -> None:
    # BM25's first (id 1) has a dense cosine far below the dense list's: z = -15.9
    lists = {"bm25": [(1, 3.0), (2, 2.9), (3, 1.0)], "dense": [(2, 0.9), (3, 0.8), (4, 0.7)]}
    low = {"dense": {1: -0.5}}
    unbounded = zscore(lists, {"dense": 0.5}, low)
    bounded = zscore(lists, {"dense": 0.5}, low, min_z={"dense": -1.0})
    assert [f.chunk_id for f in unbounded] == [2, 3, 4, 1]
    assert [f.chunk_id for f in bounded] == [2, 1, 3, 4]
    one = next(f for f in bounded if f.chunk_id == 1)
    assert one.contributions[1].z == -1.0
    assert one.score == pytest.approx(0.7 / (0.8466667**0.5) - 0.5, rel=1e-6)
    assert all((c.z or 0.0) >= -1.0 for f in bounded for c in f.contributions[1:])


scored_strategy = st.dictionaries(
    st.sampled_from(["bm25", "dense", "bm25_prf", "dense_prf"]),
    st.lists(
        st.tuples(st.integers(0, 30), st.floats(-5, 5, allow_nan=False)),
        max_size=15,
        unique_by=lambda pair: pair[0],
    ),
    max_size=4,
)


@given(scored_strategy, st.randoms(use_true_random=False), st.integers(0, 30))
def test_zscore_does_not_depend_on_the_order_of_the_lists(lists, rnd, positions) -> None:  # type: ignore[no-untyped-def]
    names = list(lists)
    rnd.shuffle(names)
    shuffled = {name: lists[name] for name in names}
    assert zscore(lists, positions=positions) == zscore(shuffled, positions=positions)


@given(scored_strategy, st.integers(0, 30))
def test_zscore_scores_exactly_the_ids_in_some_list(lists, positions) -> None:  # type: ignore[no-untyped-def]
    fused = zscore(lists, positions=positions, min_z={"dense": -1.0})
    assert {f.chunk_id for f in fused} == {i for pairs in lists.values() for i, _ in pairs}
    scores = [f.score for f in fused]
    assert scores == sorted(scores, reverse=True)


def test_rm3_ranks_feedback_words_by_relevance_model() -> None:
    texts = ["apple banana apple", "banana cherry"]
    # P(w|R) = Σ P(w|d) P(d|q); weights 3:1 -> P(d1)=0.75, P(d2)=0.25
    # apple: 2/3*0.75 = 0.5; banana: 1/3*0.75 + 1/2*0.25 = 0.375; cherry: 1/2*0.25 = 0.125
    terms = rm3_terms(texts, [3.0, 1.0], query_terms=[], n_terms=3)
    assert [t for t, _ in terms] == ["apple", "banana", "cherry"]
    assert [w for _, w in terms] == pytest.approx([0.5, 0.375, 0.125])


def test_rm3_leaves_out_query_words_stopwords_and_numbers() -> None:
    terms = rm3_terms(["the 2024 outage outage of the database"], [1.0], ["database"], 5)
    assert [t for t, _ in terms] == ["outage"]


def test_rocchio_moves_the_query_towards_the_feedback() -> None:
    query = np.array([1.0, 0.0], dtype=np.float32)
    feedback = np.array([[0.0, 1.0], [0.0, 1.0]], dtype=np.float32)
    moved = rocchio(query, feedback, [1.0, 1.0], alpha=1.0, beta=1.0)
    assert moved == pytest.approx(np.array([1, 1]) / np.sqrt(2))
    assert rocchio(query, feedback[:0], [], 1.0, 1.0) is query


def _zscore_by_definition(lists, weights, extra, positions, min_z):  # type: ignore[no-untyped-def]
    """Z-score fusion written out item by item, as its docstring defines it."""
    firsts = {}
    for name in sorted(lists):
        found: dict[int, tuple[int, float]] = {}
        for position, (item, value) in enumerate(lists[name], start=1):
            found.setdefault(item, (position, float(value)))
        if found:
            firsts[name] = found
    candidates = sorted({item for found in firsts.values() for item in found})
    rows: dict[int, list[tuple[str, float, int | None, float, float]]] = {i: [] for i in candidates}
    for name, found in firsts.items():
        weight = weights.get(name, 1.0)
        scores = [value for _, value in found.values()]
        mean, std = standardised(scores, positions)
        for item in candidates:
            rank, score = found.get(item, (None, extra.get(name, {}).get(item, min(scores))))
            z = max(min_z.get(name, -math.inf), (score - mean) / std) if std > 0 else 0.0
            rows[item].append((name, weight, rank, weight * z, z))
    out = [(item, sum(r[3] for r in row), row) for item, row in rows.items()]
    out.sort(key=lambda t: (-t[1], min(r[2] for r in t[2] if r[2] is not None), t[0]))
    return out


@given(
    scored_strategy,
    st.dictionaries(st.sampled_from(["bm25", "dense"]), st.floats(0.05, 3)),
    st.dictionaries(
        st.sampled_from(["bm25", "dense", "dense_prf"]),
        st.dictionaries(st.integers(0, 30), st.floats(-5, 5, allow_nan=False)),
    ),
    st.integers(0, 30),
    st.dictionaries(st.sampled_from(["dense", "dense_prf"]), st.floats(-3, 0)),
)
def test_zscore_gives_exactly_the_item_by_item_definition(
    lists, weights, extra, positions, min_z
) -> None:  # type: ignore[no-untyped-def]
    fused = zscore(lists, weights, extra, positions=positions, min_z=min_z)
    expected = _zscore_by_definition(lists, weights, extra, positions, min_z)
    assert [(f.chunk_id, f.score) for f in fused] == [(item, score) for item, score, _ in expected]
    for f, (_, _, row) in zip(fused, expected, strict=True):
        got = [(c.retriever, c.weight, c.rank, c.contribution, c.z) for c in f.contributions]
        assert got == row
        assert f.shown_as(99).contributions == f.contributions
