"""Replay: captured real queries re-run against the current brain.

With capture on (``BRAIN_CAPTURE=1``; ``BRAIN_CAPTURE_MAX_ROWS`` caps the table, 100,000 by
default), the brain records every search and recall: query, mode, filters, the chunk ids it
returned and its latency. `nexusbrain eval captures` dumps them as NDJSON, one object a line::

    {"at", "operation": "search" | "recall", "query", "mode", "filters": {...},
     "results": [{"id", "chunk_id", "uri", "unit", "char_start", "char_end"}], "latency_ms"}

Each result carries a stable `id` (see captures.py). A line may also carry
``"relevant"`` (judged ids) or ``"clicked"`` (ids the user opened); either is a stable id or a
document uri.

`run_replay` re-runs each captured query in the given mode and scores, per query, against what
was returned then (the top k, k = how many came back then unless given):

* overlap@k = |then ∩ now| / |then|, over the top k of each;
* rbo: rank-biased overlap (Webber, Moffat and Zobel 2010, extrapolated RBO_ext, p = 0.9);
* lost and gained: results of then missing now, and new ones;
* latency now and then; and with judgments or clicks, recall@k and MRR against them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from nexusbrain.errors import InvalidInput
from nexusbrain.latency import percentile
from nexusbrain.records import Progress

RBO_P = 0.9


@dataclass(frozen=True, slots=True)
class CapturedQuery:
    line: int
    operation: str
    query: str
    mode: str | None
    filters: Mapping[str, str]
    results: tuple[str, ...]  # stable ids, in rank order
    latency_ms: float | None
    relevant: frozenset[str] = frozenset()  # judged or clicked ids

    @property
    def id(self) -> str:
        return f"capture-{self.line}"


def read_captures(path: Path) -> tuple[list[CapturedQuery], list[str]]:
    """The captured queries of an NDJSON file, and one message per line that was skipped."""
    if not path.is_file():
        raise InvalidInput(
            f"no capture file at {str(path)!r}: dump one with `nexusbrain eval captures`"
        )
    queries, problems = [], []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            queries.append(_captured(number, orjson.loads(line)))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            problems.append(f"line {number}: {exc!r}; skipped")
    return queries, problems


def _captured(number: int, value: Any) -> CapturedQuery:
    if not isinstance(value, dict) or not str(value.get("query", "")).strip():
        raise ValueError("expected an object with a query")
    results = tuple(
        str(r["id"]) if isinstance(r, dict) else str(r) for r in value.get("results") or ()
    )
    judged = [*(value.get("relevant") or ()), *(value.get("clicked") or ())]
    latency = value.get("latency_ms")
    return CapturedQuery(
        line=number,
        operation=str(value.get("operation") or "search"),
        query=str(value["query"]),
        mode=value.get("mode"),
        filters={str(k): str(v) for k, v in (value.get("filters") or {}).items()},
        results=results,
        latency_ms=float(latency) if isinstance(latency, int | float) else None,
        relevant=frozenset(str(j) for j in judged),
    )


# metrics (pure)


def overlap_at_k(then: Sequence[str], now: Sequence[str], k: int) -> float:
    """|then[:k] ∩ now[:k]| / |then[:k]|: how much of what came back then still does."""
    before = set(then[:k])
    if not before:
        raise ValueError("overlap of an empty captured result")
    return len(before & set(now[:k])) / len(before)


def rank_biased_overlap(a: Sequence[str], b: Sequence[str], p: float = RBO_P) -> float:
    """RBO_ext of two rankings (Webber et al. 2010, eq. 32): 1 for identical, 0 for disjoint
    lists; a shorter list is taken to continue as it agreed. Repeats are dropped."""
    first, second = list(dict.fromkeys(a)), list(dict.fromkeys(b))
    if not first or not second:
        return float(not first and not second)
    short, long = (first, second) if len(first) <= len(second) else (second, first)
    s, n = len(short), len(long)
    overlaps, seen_short, seen_long, x = [], set(), set(), 0
    for depth in range(1, n + 1):
        if depth <= s:
            item = short[depth - 1]
            seen_short.add(item)
            x += item in seen_long
        item = long[depth - 1]
        seen_long.add(item)
        x += item in seen_short
        overlaps.append(x)
    x_s, x_l = overlaps[s - 1], overlaps[n - 1]
    total = sum(overlaps[d - 1] / d * p**d for d in range(1, n + 1))
    total += sum(x_s * (d - s) / (s * d) * p**d for d in range(s + 1, n + 1))
    return (1 - p) / p * total + ((x_l - x_s) / n + x_s / s) * p**n


def matches(result: str, judged: frozenset[str]) -> bool:
    """A result matches a judged id equal to it, or to its document's uri."""
    return result in judged or _uri(result) in judged


def _uri(result: str) -> str:
    for mark in ("#", "@"):
        if mark in result:
            return result.rsplit(mark, 1)[0]
    return result


def judged_recall(now: Sequence[str], judged: frozenset[str], k: int) -> float:
    found = {j for j in judged for r in now[:k] if r == j or _uri(r) == j}
    return len(found) / len(judged)


def judged_mrr(now: Sequence[str], judged: frozenset[str]) -> float:
    return next((1.0 / rank for rank, r in enumerate(now, start=1) if matches(r, judged)), 0.0)


# the run


class ReplayTarget(Protocol):
    """The current brain, re-running a captured search or recall."""

    def replay(
        self, operation: str, query: str, mode: str, k: int, filters: Mapping[str, str]
    ) -> list[str]:
        """The stable ids of the results, best first."""
        ...

    def describe(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Replayed:
    query: CapturedQuery
    now: tuple[str, ...]
    k: int
    milliseconds: float
    scores: Mapping[str, float]
    lost: int
    gained: int


@dataclass(frozen=True, slots=True)
class ReplayRun:
    mode: str
    source: str
    replayed: tuple[Replayed, ...]
    skipped: Mapping[str, int]
    problems: tuple[str, ...]
    k: int | None

    def metrics(self) -> dict[str, float]:
        """Means per query of each score (judged scores over the judged queries)."""
        keys = dict.fromkeys(key for r in self.replayed for key in r.scores)
        out = {}
        for key in keys:
            values = [r.scores[key] for r in self.replayed if key in r.scores]
            out[key] = sum(values) / len(values)
        return out

    def summary(self) -> dict[str, Any]:
        now = [r.milliseconds for r in self.replayed]
        then = [r.query.latency_ms for r in self.replayed if r.query.latency_ms is not None]
        n = len(self.replayed)
        return {
            "replayed": n,
            "judged": sum(1 for r in self.replayed if r.query.relevant),
            "lost_per_query": sum(r.lost for r in self.replayed) / n if n else 0.0,
            "gained_per_query": sum(r.gained for r in self.replayed) / n if n else 0.0,
            "lost": sum(r.lost for r in self.replayed),
            "gained": sum(r.gained for r in self.replayed),
            "latency_ms": {
                "now_p50": percentile(now, 50) if now else None,
                "now_p99": percentile(now, 99) if now else None,
                "then_p50": percentile(then, 50) if then else None,
                "then_p99": percentile(then, 99) if then else None,
            },
            "skipped": dict(self.skipped),
        }


def run_replay(
    captured: Sequence[CapturedQuery],
    target: ReplayTarget,
    mode: str,
    *,
    k: int | None = None,
    source: str = "captured.ndjson",
    problems: Sequence[str] = (),
    progress: Progress | None = None,
) -> ReplayRun:
    """Re-run every captured query in `mode` and score it against what it returned then."""
    replayed: list[Replayed] = []
    skipped = {"no_results_then": 0}
    for done, query in enumerate(captured, start=1):
        depth = k or len(query.results)
        if depth == 0:
            skipped["no_results_then"] += 1
            continue
        started = time.perf_counter()
        now = target.replay(query.operation, query.query, mode, depth, query.filters)
        spent = (time.perf_counter() - started) * 1000
        replayed.append(_scored(query, tuple(now), depth, spent))
        if progress is not None:
            progress("replaying", done, len(captured))
    return ReplayRun(mode, source, tuple(replayed), skipped, tuple(problems), k)


def _scored(query: CapturedQuery, now: tuple[str, ...], k: int, spent: float) -> Replayed:
    then = query.results[:k]
    top = now[:k]
    scores = {
        "overlap@k": overlap_at_k(then, top, k),
        "rbo": rank_biased_overlap(then, top),
    }
    if query.relevant:
        scores["recall@k"] = judged_recall(top, query.relevant, k)
        scores["mrr"] = judged_mrr(top, query.relevant)
    return Replayed(
        query=query,
        now=top,
        k=k,
        milliseconds=spent,
        scores=scores,
        lost=len(set(then) - set(top)),
        gained=len(set(top) - set(then)),
    )
