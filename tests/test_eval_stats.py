"""The paired bootstrap: calibration under the null, Bonferroni's family-wise rate, agreement
with scipy.stats.bootstrap, and exact repeats from a seed.

The calibration loops use 1,000 (or 500) resamples to stay within a few seconds; the report's
default stays 10,000. Every simulation draws from a fixed seed, so the rates are the same on
every run; the bounds are the nominal rates plus sampling noise (about 3.5 standard errors).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy import stats

from nexusbrain.evals.bootstrap import (
    DEFAULT_RESAMPLES,
    Verdict,
    bonferroni_threshold,
    comparison_seed,
    paired_bootstrap,
)

MODES = 3
METRICS = 4  # the report's 3 modes x 4 metrics: 3 pairs x 4 = 12 comparisons


def test_null_comparisons_reject_at_about_five_percent() -> None:
    """Two modes whose per-question scores come from one distribution: p < 0.05 in ~5%."""
    rng = np.random.default_rng(20260102)
    p_values = []
    for i in range(400):
        a, b = rng.beta(2, 3, 100), rng.beta(2, 3, 100)
        p_values.append(paired_bootstrap(a, b, seed=i, resamples=1_000).p_value)
    rate = float(np.mean(np.array(p_values) < 0.05))
    assert 0.02 <= rate <= 0.09, rate  # nominal 0.05; standard error 0.011


def test_null_binary_metric_rejects_at_about_five_percent() -> None:
    """The same for a 0/1 metric (a hit in the top k), with its many tied differences."""
    rng = np.random.default_rng(7)
    p_values = []
    for i in range(400):
        a = (rng.random(100) < 0.6).astype(float)
        b = (rng.random(100) < 0.6).astype(float)
        p_values.append(paired_bootstrap(a, b, seed=i, resamples=1_000).p_value)
    rate = float(np.mean(np.array(p_values) < 0.05))
    assert 0.02 <= rate <= 0.09, rate


def _report_family(rng: np.random.Generator, n: int) -> list[NDArray[np.float64]]:
    """One simulated report under the null: per question a difficulty, then for each of 3
    modes the rank of the first relevant result from the same distribution, and from it the
    report's 4 metrics (hit@5, hit@10, reciprocal rank, nDCG@10 with one relevant item)."""
    difficulty = rng.gamma(2.0, 4.0, n)
    family = []
    for _ in range(MODES):
        rank = 1 + rng.poisson(difficulty)
        family.append(
            np.stack(
                [
                    (rank <= 5).astype(float),
                    (rank <= 10).astype(float),
                    1.0 / rank,
                    np.where(rank <= 10, 1.0 / np.log2(rank + 1), 0.0),
                ]
            )
        )
    return family


def test_bonferroni_holds_the_family_wise_rate_over_twelve_comparisons() -> None:
    """200 simulated null reports of 3 modes x 4 metrics: the share with any comparison
    significant at 0.05/12 stays at or below 0.05."""
    threshold = bonferroni_threshold(MODES * METRICS)
    assert threshold == pytest.approx(0.05 / 12)
    rng = np.random.default_rng(42)
    families = 200
    any_significant = 0
    comparisons = 0
    for f in range(families):
        modes = _report_family(rng, 100)
        found = False
        for x in range(MODES):
            for y in range(x + 1, MODES):
                for m in range(METRICS):
                    result = paired_bootstrap(
                        modes[x][m], modes[y][m], seed=(f, x, y, m), resamples=500
                    )
                    comparisons += 1
                    found = found or result.verdict(threshold) is Verdict.SIGNIFICANT
        any_significant += found
    assert comparisons == families * 12
    assert any_significant / families <= 0.05, any_significant / families


@pytest.mark.parametrize("binary", [False, True])
def test_interval_agrees_with_scipy_bootstrap(binary: bool) -> None:
    rng = np.random.default_rng(3)
    if binary:
        a = (rng.random(150) < 0.55).astype(float)
        b = np.where(rng.random(150) < 0.2, 1.0 - a, a)
    else:
        a = rng.beta(2, 3, 150)
        b = np.clip(a + rng.normal(0.03, 0.1, 150), 0, 1)
    ours = paired_bootstrap(a, b, seed=11)
    theirs = stats.bootstrap(
        (a, b),
        lambda x, y, axis: np.mean(y - x, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=DEFAULT_RESAMPLES,
        method="percentile",
        confidence_level=0.95,
        rng=np.random.default_rng(12),
    )
    interval = theirs.confidence_interval
    assert ours.low == pytest.approx(interval.low, abs=0.005)
    assert ours.high == pytest.approx(interval.high, abs=0.005)
    assert ours.mean_difference == pytest.approx(float(np.mean(b - a)))


def test_a_clear_difference_is_significant_and_a_zero_one_a_tie() -> None:
    rng = np.random.default_rng(5)
    a = rng.beta(2, 3, 200)
    better = paired_bootstrap(a, a + 0.05 + rng.normal(0, 0.05, 200), seed=1)
    assert better.low > 0 and better.p_value < bonferroni_threshold(12)
    assert better.verdict(bonferroni_threshold(12)) is Verdict.SIGNIFICANT
    same = paired_bootstrap(a, a, seed=1)
    assert (same.low, same.high, same.p_value) == (0.0, 0.0, 1.0)
    assert same.verdict(0.05) is Verdict.TIE


def test_a_constant_difference_gets_the_smallest_p() -> None:
    result = paired_bootstrap([0.0] * 10, [1.0] * 10, seed=0, resamples=999)
    assert result.p_value == pytest.approx(1 / 1000)
    assert result.low == result.high == result.mean_difference == 1.0


def test_a_significant_interval_can_fail_the_corrected_threshold() -> None:
    rng = np.random.default_rng(9)
    a = rng.beta(2, 3, 120)
    b = a + rng.normal(0.02, 0.1, 120)
    result = paired_bootstrap(a, b, seed=4)
    assert not result.holds_zero and 0.0042 < result.p_value < 0.05
    assert result.verdict(0.05) is Verdict.SIGNIFICANT
    assert result.verdict(bonferroni_threshold(12)) is Verdict.NOT_SIGNIFICANT


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.floats(0, 1), min_size=1, max_size=40).flatmap(
        lambda a: st.tuples(st.just(a), st.lists(st.floats(0, 1), min_size=len(a), max_size=len(a)))
    ),
    st.integers(0, 2**32 - 1),
)
def test_a_seeded_bootstrap_repeats_exactly(
    pair: tuple[list[float], list[float]], seed: int
) -> None:
    a, b = pair
    first = paired_bootstrap(a, b, seed=seed, resamples=200)
    assert first == paired_bootstrap(a, b, seed=seed, resamples=200)
    assert min(b_ - a_ for a_, b_ in pair_items(a, b)) - 1e-12 <= first.low <= first.high
    assert first.high <= max(b_ - a_ for a_, b_ in pair_items(a, b)) + 1e-12
    assert 0 < first.p_value <= 1


def pair_items(a: list[float], b: list[float]) -> list[tuple[float, float]]:
    return list(zip(a, b, strict=True))


def test_unpaired_input_is_refused() -> None:
    with pytest.raises(ValueError, match="equal lengths"):
        paired_bootstrap([1.0, 0.0], [1.0], seed=0)
    with pytest.raises(ValueError, match="no questions"):
        paired_bootstrap([], [], seed=0)


def test_comparison_seeds_depend_on_the_comparison_only() -> None:
    assert comparison_seed(42, "locomo", "mrr", "balanced", "tokenmax") == comparison_seed(
        42, "locomo", "mrr", "balanced", "tokenmax"
    )
    assert comparison_seed(42, "locomo", "mrr", "a", "b") != comparison_seed(
        42, "locomo", "mrr", "b", "a"
    )
