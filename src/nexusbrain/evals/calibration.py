"""Calibration of the result sets' confidence (pure): when search says a result set holds a
good match with confidence p, does it hold one (a relevant hit among its first five) p of the
time?

- **Expected calibration error (ECE).** The confidences are cut into `BINS` equal-width bins
  over [0, 1] (each bin holds [i/10, (i+1)/10), the last one also 1.0); each bin's gap
  |mean confidence − share of its result sets with a relevant hit in the first five| is
  weighted by its share of the result sets, and the gaps are summed. 0 is perfect.
- **Per band** (the words `describe` says: good match, possible match, no good match): how
  many result sets fell in it and how many of them hold a relevant hit in the first five.
  For "good match" that share should be high; for "no good match", the share *without* one.
- A result set with no confidence (a search that returned nothing, as `conservative` does
  for what it withholds) has no value to bin; it is counted apart as `empty`.
- **The ECE of chance.** A perfectly calibrated confidence still shows an ECE on a finite set:
  its result sets hold a relevant hit by chance, each with the probability it states. So next
  to the ECE stands the median ECE of `DRAWS` such draws of the labels from the same values
  (seeded): a set's ECE near it is as good as that set's size can show, and an ECE goal below it
  cannot be judged on that set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nexusbrain.retrieval.confidence import Band

BINS = 10
DRAWS = 1000  # label draws behind the ECE of chance
TOP = 5  # a result set holds a good match when one of its first TOP hits is relevant


@dataclass(frozen=True, slots=True)
class Judged:
    """One result set as calibration sees it: its confidence (None when it returned
    nothing), its band, and whether one of its first five hits is relevant."""

    value: float | None
    band: Band | None
    good: bool


@dataclass(frozen=True, slots=True)
class BandCount:
    results: int
    good: int  # with a relevant hit among the first five


@dataclass(frozen=True, slots=True)
class Calibration:
    """The calibration of a run's result sets (see the module's docstring)."""

    ece: float
    results: int  # result sets with a confidence
    good: int  # of those, with a relevant hit among the first five
    mean_confidence: float
    bands: Mapping[Band, BandCount]
    empty: int  # result sets with no confidence: nothing returned
    bins: int = BINS
    chance_ece: float = 0.0  # the median ECE a calibrated confidence shows at this size

    def good_match_precision(self) -> float | None:
        """The share of "good match" result sets with a relevant hit in the first five."""
        found = self.bands.get(Band.GOOD)
        return found.good / found.results if found and found.results else None

    def no_match_precision(self) -> float | None:
        """The share of "no good match" result sets without a relevant hit in the first five."""
        found = self.bands.get(Band.NONE)
        return 1 - found.good / found.results if found and found.results else None


def expected_calibration_error(
    values: Sequence[float], good: Sequence[bool], bins: int = BINS
) -> float:
    """Σ over equal-width bins of (bin's count / all) × |mean value − share good| (0 when
    there are no values)."""
    if len(values) != len(good):
        raise ValueError(f"{len(values)} values against {len(good)} labels")
    if not values:
        return 0.0
    sums: dict[int, list[float]] = {}
    for value, label in zip(values, good, strict=True):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"confidence {value} is outside [0, 1]")
        at = sums.setdefault(min(int(value * bins), bins - 1), [0.0, 0.0, 0.0])
        at[0] += 1
        at[1] += value
        at[2] += float(label)
    return sum(abs(v - g) for _, v, g in sums.values()) / len(values)


def chance_ece(
    values: Sequence[float], bins: int = BINS, draws: int = DRAWS, seed: int = 0
) -> float:
    """The median ECE of a perfectly calibrated confidence with these values: each result
    set's label drawn as a relevant hit with the probability its value states, `draws` times
    (seeded, so the figure is the same on every run)."""
    if not values:
        return 0.0
    array = np.asarray(values, dtype=np.float64)
    where = np.minimum((array * bins).astype(np.int64), bins - 1)
    member = np.zeros((len(array), bins))
    member[np.arange(len(array)), where] = 1.0
    labels = np.random.default_rng(seed).random((draws, len(array))) < array
    gaps = np.abs(array @ member - labels.astype(np.float64) @ member)  # draws x bins
    return float(np.median(gaps.sum(axis=1)) / len(array))


def calibrate(results: Iterable[Judged], bins: int = BINS) -> Calibration | None:
    """The calibration of these result sets; None when none of them carries a confidence
    (a target that reports none, such as an older server)."""
    listed = list(results)
    valued = [r for r in listed if r.value is not None]
    if not valued:
        return None
    values = [r.value for r in valued if r.value is not None]
    labels = [r.good for r in valued]
    bands: dict[Band, BandCount] = {}
    for band in Band:
        inside = [r for r in valued if r.band is band]
        if inside:
            bands[band] = BandCount(len(inside), sum(r.good for r in inside))
    return Calibration(
        ece=expected_calibration_error(values, labels, bins),
        results=len(valued),
        good=sum(labels),
        mean_confidence=sum(values) / len(values),
        bands=bands,
        empty=len(listed) - len(valued),
        bins=bins,
        chance_ece=chance_ece(values, bins),
    )


def good_in_top(top: Sequence[str], relevant: Iterable[str], depth: int = TOP) -> bool:
    """Whether one of the first `depth` ranked ids is relevant."""
    wanted = set(relevant)
    return any(doc in wanted for doc in top[:depth])


def calibration_view(found: Calibration) -> dict[str, Any]:
    """The JSON shape of a calibration (in `eval --json` and the results log's details)."""
    return {
        "ece": round(found.ece, 6),
        "chance_ece": round(found.chance_ece, 6),
        "bins": found.bins,
        "results": found.results,
        "with_relevant_in_top5": found.good,
        "mean_confidence": round(found.mean_confidence, 6),
        "good_match_precision": _maybe(found.good_match_precision()),
        "no_match_precision": _maybe(found.no_match_precision()),
        "bands": {
            band.value: {"results": count.results, "with_relevant_in_top5": count.good}
            for band, count in found.bands.items()
        },
        "empty": found.empty,
    }


def _maybe(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def calibration_lines(found: Mapping[str, Any]) -> list[str]:
    """A calibration view (`calibration_view`, or read back from a log) in plain words."""
    chance = found.get("chance_ece")  # logs written before it was reported lack it
    against = "" if chance is None else f"; a calibrated confidence shows {chance:.4f} here"
    lines = [
        f"calibration: ECE {found['ece']:.4f} ({found['bins']} equal-width bins{against}), "
        f"mean confidence {found['mean_confidence']:.4f} against "
        f"{_share(found['with_relevant_in_top5'], found['results'])} with a relevant hit "
        f"in the top {TOP}"
    ]
    for band in Band:
        count = found["bands"].get(band.value)
        if not count:
            continue
        whole, good = count["results"], count["with_relevant_in_top5"]
        share = (
            _share(whole - good, whole) + " without"
            if band is Band.NONE
            else (_share(good, whole) + " with")
        )
        lines.append(
            f"  {band.value}: {whole} result sets, {share} a relevant hit in the top {TOP}"
        )
    if found.get("empty"):
        lines.append(f"  nothing returned (no confidence): {found['empty']} result sets")
    return lines


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%} ({part}/{whole})" if whole else "-"
