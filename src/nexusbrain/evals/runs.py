"""The record of one evaluation run, its JSON view, its floors and its provenance.

Every number a run reports says which split produced it: `EvalRun.split` names the split (or
splits) behind `metrics`, each group is named after what it holds, and each per-query score
carries its own split.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexusbrain.errors import InvalidInput
from nexusbrain.evals.calibration import Calibration, calibration_view
from nexusbrain.evals.metrics import Metric, mean
from nexusbrain.evals.targets import SearchRequest
from nexusbrain.retrieval.confidence import Band

TOP_SHOWN = 10  # ranked ids kept per query in the run record


@dataclass(frozen=True, slots=True)
class QueryScore:
    """One query's result: its judgments, the ids ranked first, and its metric values."""

    id: str
    query: str
    split: str
    relevant: tuple[str, ...]
    top: tuple[str, ...]
    scores: Mapping[str, float]
    group: str | None = None
    confidence: float | None = None  # the result set's (None: it returned nothing)
    band: Band | None = None  # the confidence in a word


@dataclass(frozen=True, slots=True)
class EvalRun:
    """A scored evaluation. `metrics` are means over the queries of `split`; `groups` holds
    the same means over named subsets (a category, a split, a level) and the numbers that are
    reported apart; `counts` says how many queries were scored and skipped, and why."""

    suite: str
    split: str
    metrics: Mapping[str, float]
    per_query: tuple[QueryScore, ...]
    config: Mapping[str, Any]
    groups: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)
    seconds: Mapping[str, float] = field(default_factory=dict)
    calibration: Calibration | None = None  # of the result sets behind `metrics`


def means(scores: Sequence[QueryScore], metrics: Iterable[Metric | str]) -> dict[str, float]:
    """The mean of each metric over `scores` (empty when there are none)."""
    if not scores:
        return {}
    keys = [m if isinstance(m, str) else m.key for m in metrics]
    return {key: mean(s.scores[key] for s in scores) for key in keys}


def grouped(
    scores: Sequence[QueryScore], metrics: Sequence[Metric | str], name: str = "group"
) -> dict[str, dict[str, float]]:
    """Means per value of `QueryScore.group` (or `.split` when `name` is "split")."""
    buckets: dict[str, list[QueryScore]] = {}
    for score in scores:
        key = score.split if name == "split" else score.group
        if key is not None:
            buckets.setdefault(f"{name} {key}", []).append(score)
    return {label: means(items, metrics) for label, items in sorted(buckets.items())}


def broken_floors(
    metrics: Mapping[str, float], floors: Sequence[tuple[Metric, float]], split: str
) -> list[str]:
    """One message per floor the metrics fall below, naming the metric, value, floor and split.

    A floor on a metric the run did not compute is an error, not a silent pass."""
    broken = []
    for metric, floor in floors:
        if metric.key not in metrics:
            known = ", ".join(sorted(metrics)) or "none"
            raise InvalidInput(f"--floor {metric.key}: this run reports no such metric ({known})")
        value = metrics[metric.key]
        if value < floor:
            broken.append(f"{metric.key} = {value:.4f} is below its floor {floor:g} ({split})")
    return broken


@functools.cache
def commit(start: Path | None = None) -> str:
    """The git commit of the code (`start` defaults to this package's folder), with "+dirty" if
    tracked files changed; "unknown" outside a git checkout or without git. Never networked.
    Cached: the first call (the CLI makes it as an eval command starts) names the code that
    was loaded, even if the checkout moves on during a long run."""
    where = start or Path(__file__).resolve().parent
    head = git(where, "rev-parse", "--short=12", "HEAD")
    if not head:
        return "unknown"
    return head + ("+dirty" if git(where, "diff-index", "--name-only", "HEAD", "--") else "")


def git(where: Path, *args: str) -> str:
    """What `git ARGS` prints in `where`, stripped; "" when git is missing or fails."""
    try:
        return subprocess.run(
            ["git", *args],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def run_config(
    *,
    suite: str,
    dataset: str,
    split: str,
    request: SearchRequest,
    target: Mapping[str, Any],
    metrics: Sequence[Metric],
    **extra: Any,
) -> dict[str, Any]:
    """What a run records about itself: the suite, the data and split, the retrieval settings,
    the target, the metrics and the code's commit."""
    return {
        "suite": suite,
        "dataset": dataset,
        "split": split,
        "retrieval": {
            "mode": request.mode,
            "k": request.k,
            "best_per_document": request.best_per_document,
            **target,
        },
        "metrics": [m.key for m in metrics],
        **extra,
        "commit": commit(),
    }


def run_view(run: EvalRun) -> dict[str, Any]:
    """The JSON shape of a run: {"metrics", "per_query", "config", ...}."""
    return {
        "suite": run.suite,
        "split": run.split,
        "metrics": {key: round(value, 6) for key, value in run.metrics.items()},
        "groups": {
            name: {key: round(value, 6) for key, value in values.items()}
            for name, values in run.groups.items()
        },
        "counts": dict(run.counts),
        "seconds": {key: round(value, 3) for key, value in run.seconds.items()},
        "config": dict(run.config),
        **({"calibration": calibration_view(run.calibration)} if run.calibration else {}),
        "per_query": [_query_view(q) for q in run.per_query],
    }


def _query_view(score: QueryScore) -> dict[str, Any]:
    out: dict[str, Any] = {"id": score.id, "query": score.query, "split": score.split}
    if score.group is not None:
        out["group"] = score.group
    out["relevant"] = list(score.relevant)
    out["top"] = list(score.top)
    out["scores"] = {key: round(value, 6) for key, value in score.scores.items()}
    out["confidence"] = None if score.confidence is None else round(score.confidence, 6)
    out["band"] = None if score.band is None else score.band.value
    return out
