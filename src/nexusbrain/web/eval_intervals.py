"""The comparison report's confidence intervals, read back from its "Paired bootstrap" tables so
that the evals page can draw them itself: as HTML rows that reflow, readable at phone width,
where the picture from `eval compare --plot` is a 9-inch figure whose labels shrink to a few
pixels on a phone.

The tables are the ones `evals/compare.py` writes, one per suite under its `## suite` heading::

    | metric | comparison | questions | mean difference | 95% CI | p-value | verdict |
    | recall@5 | balanced − conservative | 120 | -0.0026 | [-0.0058, +0.0009] | 0.1277 | tie |

A row that does not read as numbers is left out; a report without such tables gives none.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from nexusbrain.web.markdown import cells

HEADER = ("metric", "comparison", "questions", "mean difference", "95% CI", "p-value", "verdict")
_CI = re.compile(r"\[\s*([-+]?\d*\.?\d+)\s*,\s*([-+]?\d*\.?\d+)\s*\]")
_SUITE = re.compile(r"##\s+(.+?)\s*$")


@dataclass(frozen=True, slots=True)
class Interval:
    metric: str
    comparison: str  # "balanced − conservative": the second mode minus the first
    mean: float
    low: float
    high: float
    verdict: str  # tie, significant, not significant after correction

    @property
    def verdict_class(self) -> str:
        return self.verdict.split()[0] if self.verdict else "unknown"


@dataclass(frozen=True, slots=True)
class SuiteIntervals:
    suite: str
    intervals: tuple[Interval, ...]
    low: float  # the axis: every interval and 0, with a little room
    high: float

    def at(self, value: float) -> float:
        """`value`'s place on the axis, in percent from the left."""
        return round(100 * (value - self.low) / (self.high - self.low), 2)

    def ticks(self) -> tuple[float, ...]:
        """Round values across the axis, 0 among them: steps of 1, 2 or 5 times a power of 10."""
        rough = (self.high - self.low) / 4
        power = 10 ** math.floor(math.log10(rough))
        step = next(m * power for m in (1, 2, 5, 10) if m * power >= rough)
        first = math.ceil(self.low / step)
        return tuple(round(n * step, 10) for n in range(first, math.floor(self.high / step) + 1))


def report_intervals(report: str) -> tuple[SuiteIntervals, ...]:
    """Every suite's bootstrap intervals in `report`, in the report's order."""
    suite = ""
    found: dict[str, list[Interval]] = {}
    lines = report.splitlines()
    for i, line in enumerate(lines):
        heading = _SUITE.match(line)
        if heading:
            suite = heading.group(1)
        elif line.startswith("|") and tuple(cells(line)) == HEADER:
            rows = _rows(lines, i + 2)
            if rows:
                found.setdefault(suite, []).extend(rows)
    return tuple(_axis(name, tuple(rows)) for name, rows in found.items())


def _rows(lines: list[str], start: int) -> list[Interval]:
    out = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        row = cells(line)
        interval = _interval(row) if len(row) == len(HEADER) else None
        if interval is not None:
            out.append(interval)
    return out


def _interval(row: list[str]) -> Interval | None:
    ci = _CI.fullmatch(row[4])
    try:
        mean = float(row[3])
    except ValueError:
        return None
    if ci is None:
        return None
    low, high = float(ci.group(1)), float(ci.group(2))
    return Interval(row[0], row[1], mean, min(low, high), max(low, high), row[6])


def _axis(suite: str, rows: tuple[Interval, ...]) -> SuiteIntervals:
    low = min(0.0, *(r.low for r in rows))
    high = max(0.0, *(r.high for r in rows))
    room = (high - low) * 0.05 or 0.01
    return SuiteIntervals(suite, rows, round(low - room, 4), round(high + room, 4))
