"""The paired bootstrap over questions, and Bonferroni's correction (pure).

Two search modes scored on the same questions give per-question differences
``d_i = b_i - a_i``. The bootstrap draws `resamples` samples of n questions with replacement,
keeping each question's pair together (so only ``d`` is resampled), from
``numpy.random.default_rng(seed)``, and takes the mean of each: the bootstrap distribution of
the mean difference, ``d*``.

* **Confidence interval**: the percentile interval, the (1-c)/2 and (1+c)/2 quantiles of
  ``d*`` (numpy's linear interpolation), as `scipy.stats.bootstrap(..., paired=True,
  method="percentile")` computes it.
* **p-value** (two-sided, for "no difference"): the studentized bootstrap test with the null
  imposed by shifting (Sakai 2006, the "paired bootstrap test" of IR; Smucker, Allan and
  Carterette 2007 find it agrees with the t and randomization tests). With ``se`` the
  standard error of a mean (sample standard deviation / sqrt(n)),
  ``t = |mean(d)| / se(d)`` and, for each resample, ``z* = (mean* - mean(d)) / se*``;
  then, with the add-one correction of Monte Carlo tests so that p is never 0::

      p = (1 + #{|z*| >= t}) / (resamples + 1)

  Studentizing matters in the tail that Bonferroni uses: the unstudentized percentile test
  (2 * the smaller tail of d* beyond 0) ignores the uncertainty of the standard error and
  rejects too often there (docs/design/compare.md has the rates).
  A resample with se* = 0 has z* = 0 when its mean equals mean(d) and is infinite otherwise;
  d all zero gives p = 1, d constant and non-zero the smallest p, 1 / (resamples + 1).
* **Bonferroni**: with m comparisons in a report, each is tested at alpha / m, which keeps the
  chance of any false positive in the report at or below alpha whatever their dependence.

`tests/test_eval_stats.py` checks the calibration (about 5% of null comparisons have p < 0.05;
the family-wise rate over 12 corrected comparisons stays under 5%) and the interval against
scipy's.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from numpy.typing import NDArray

DEFAULT_RESAMPLES = 10_000
DEFAULT_CONFIDENCE = 0.95
ALPHA = 0.05
_BLOCK_CELLS = 2_000_000  # indices drawn at a time: bounds memory on large sets


class Verdict(StrEnum):
    TIE = "tie"  # the confidence interval holds 0
    SIGNIFICANT = "significant"  # p below the Bonferroni threshold
    NOT_SIGNIFICANT = "not significant after correction"


@dataclass(frozen=True, slots=True)
class PairedBootstrap:
    """The bootstrap of the mean of `b - a` over paired questions."""

    n: int
    mean_difference: float
    low: float
    high: float
    p_value: float
    resamples: int
    seed: int | Sequence[int]
    confidence: float = DEFAULT_CONFIDENCE

    @property
    def holds_zero(self) -> bool:
        return self.low <= 0.0 <= self.high

    def verdict(self, threshold: float) -> Verdict:
        """Tie if the interval holds 0; else significant if p < threshold (the corrected
        alpha), else not significant after correction."""
        if self.holds_zero:
            return Verdict.TIE
        return Verdict.SIGNIFICANT if self.p_value < threshold else Verdict.NOT_SIGNIFICANT


def differences(a: Sequence[float], b: Sequence[float]) -> NDArray[np.float64]:
    """Per-question `b - a`; the two must score the same questions in the same order."""
    left, right = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if left.shape != right.shape or left.ndim != 1:
        raise ValueError(f"paired scores need equal lengths, got {left.shape} and {right.shape}")
    if left.size == 0:
        raise ValueError("paired bootstrap of no questions")
    return right - left


def resampled(
    diffs: NDArray[np.float64], rng: np.random.Generator, resamples: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The mean and the standard error of the mean of `resamples` samples of n draws with
    replacement from `diffs`, drawn block by block from `rng` (the block size depends only on
    n, so a seed repeats exactly)."""
    n = diffs.size
    block = max(1, _BLOCK_CELLS // n)
    means = np.empty(resamples, dtype=np.float64)
    errors = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        drawn = diffs[rng.integers(0, n, size=(stop - start, n))]
        means[start:stop] = drawn.mean(axis=1)
        errors[start:stop] = _standard_error(drawn)
    return means, errors


def _standard_error(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Sample standard deviation / sqrt(n) along the last axis (0 for a single value)."""
    n = values.shape[-1]
    if n < 2:
        return np.zeros(values.shape[:-1], dtype=np.float64)
    return np.asarray(values.std(axis=-1, ddof=1) / np.sqrt(n), dtype=np.float64)


def studentized_p(
    diffs: NDArray[np.float64], means: NDArray[np.float64], errors: NDArray[np.float64]
) -> float:
    """(1 + #{|z*| >= t}) / (B + 1), with t = |mean(d)| / se(d), z* = (mean* - mean(d)) / se*."""
    centre = float(diffs.mean())
    error = float(_standard_error(diffs))
    if error > 0:
        observed = abs(centre) / error
    else:
        observed = 0.0 if centre == 0 else np.inf
    shifted = means - centre
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(errors > 0, np.abs(shifted) / errors, np.where(shifted == 0, 0.0, np.inf))
    extreme = int(np.count_nonzero(z >= observed))
    return min(1.0, (1 + extreme) / (means.size + 1))


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    seed: int | Sequence[int],
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> PairedBootstrap:
    """The paired bootstrap of mean(b - a): percentile interval and studentized two-sided
    p-value, from one seeded generator."""
    if resamples < 1:
        raise ValueError(f"resamples={resamples} must be at least 1")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence} must be between 0 and 1")
    diffs = differences(a, b)
    means, errors = resampled(diffs, np.random.default_rng(seed), resamples)
    tail = (1.0 - confidence) / 2.0
    low, high = np.percentile(means, [100.0 * tail, 100.0 * (1.0 - tail)])
    return PairedBootstrap(
        n=int(diffs.size),
        mean_difference=float(diffs.mean()),
        low=float(low),
        high=float(high),
        p_value=studentized_p(diffs, means, errors),
        resamples=resamples,
        seed=seed if isinstance(seed, int) else tuple(seed),
        confidence=confidence,
    )


def bonferroni_threshold(comparisons: int, alpha: float = ALPHA) -> float:
    """The per-comparison threshold that holds the family-wise error rate at alpha."""
    return alpha / max(1, comparisons)


def comparison_seed(seed: int, *key: str) -> tuple[int, int]:
    """A comparison's own seed, [seed, crc32 of its key]: the same comparison draws the same
    resamples whatever else the report holds."""
    return seed, zlib.crc32("\x1f".join(key).encode("utf-8"))
