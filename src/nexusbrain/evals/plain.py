"""Plain-English readings of metric differences, for the comparison report (pure).

"balanced finds a relevant session in the top 10 for 3.1 more questions in 100 than
conservative": each sentence says what the metric counts, in the suite's own units.
"""

from __future__ import annotations

import re

_METRIC = re.compile(r"(?:(?P<level>session|turn)_)?(?P<name>[a-z_]+?)(?:@(?P<k>\d+|k))?")
UNITS = {
    "locomo": "evidence turns",
    "beir": "relevant documents",
    "longmemeval": "relevant turns",
    "replay": "judged results",
}


def sentence(metric: str, suite: str, mode: str, base: str, difference: float) -> str:
    """What `difference` (mode minus base, on `metric`) means, in one clause."""
    found = _METRIC.fullmatch(metric)
    name = found.group("name") if found else metric
    level = (found.group("level") if found else None) or "item"
    k = found.group("k") if found else None
    per100 = f"{abs(difference) * 100:.1f}"
    more = "more" if difference > 0 else "fewer"
    higher = "higher" if difference > 0 else "lower"
    unit = UNITS.get(suite, "relevant items")
    if abs(difference) < 5e-5:
        return f"{mode} and {base} score the same on {metric}"
    if name == "recall_any" and k:
        return (
            f"{mode} finds a relevant {level} in the top {k} for {per100} {more} questions "
            f"in 100 than {base}"
        )
    if name == "recall_all" and k:
        return (
            f"{mode} finds every relevant {level} in the top {k} for {per100} {more} "
            f"questions in 100 than {base}"
        )
    if name == "recall" and k:
        return (
            f"{mode} puts {per100} {more} in 100 of each question's {unit} in the top {k} "
            f"than {base}"
        )
    if name in ("ndcg", "ndcg_any") and k:
        noun = unit if level == "item" else f"relevant {level}s"
        return (
            f"{mode} ranks the {noun} {higher}: nDCG@{k} is {abs(difference):.4f} {higher} "
            f"than {base}'s (1 is a perfect ranking)"
        )
    if name == "mrr":
        return (
            f"{mode}'s first relevant result ranks {higher}: its mean reciprocal rank is "
            f"{abs(difference):.4f} {higher} than {base}'s (1 = always first, 0.5 = always "
            "second)"
        )
    if name == "overlap" and k:
        return (
            f"{mode} still returns {per100} {more} in 100 of the top-{k} results the "
            f"captured queries got, than {base}"
        )
    if name == "rbo":
        return (
            f"{mode}'s rankings agree {'more' if difference > 0 else 'less'} with the "
            f"captured ones: rank-biased overlap is {abs(difference):.4f} {higher} than "
            f"{base}'s"
        )
    return f"{metric} is {abs(difference):.4f} {higher} for {mode} than for {base}"
