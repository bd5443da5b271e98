"""Latency summaries (pure): nearest-rank percentiles over a list of timings."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank q-th percentile: the smallest value with at least q% of the values at
    or below it. q in (0, 100]; at least one value."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 < q <= 100:
        raise ValueError(f"percentile q={q} must be in (0, 100]")
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Milliseconds. `throughput` is requests per second of wall time (all clients together)."""

    count: int
    p50: float
    p95: float
    p99: float
    mean: float
    max: float
    throughput: float

    def as_dict(self) -> dict[str, float]:
        return {
            "count": self.count,
            "p50_ms": round(self.p50, 3),
            "p95_ms": round(self.p95, 3),
            "p99_ms": round(self.p99, 3),
            "mean_ms": round(self.mean, 3),
            "max_ms": round(self.max, 3),
            "throughput_rps": round(self.throughput, 2),
        }


def summarise(milliseconds: Sequence[float], wall_seconds: float) -> LatencySummary:
    return LatencySummary(
        count=len(milliseconds),
        p50=percentile(milliseconds, 50),
        p95=percentile(milliseconds, 95),
        p99=percentile(milliseconds, 99),
        mean=sum(milliseconds) / len(milliseconds),
        max=max(milliseconds),
        throughput=len(milliseconds) / wall_seconds if wall_seconds > 0 else 0.0,
    )
