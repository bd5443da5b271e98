"""Score judged queries against a search target: one search per query, then pure metrics."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from nexusbrain.evals.calibration import Calibration, Judged, calibrate, good_in_top
from nexusbrain.evals.metrics import Metric, evaluate, parse_metric
from nexusbrain.evals.runs import TOP_SHOWN, EvalRun, QueryScore, commit, grouped, means, run_config
from nexusbrain.evals.targets import Retrieved, SearchRequest, SearchTarget
from nexusbrain.evals.trec import ranked_docids, read_qrels, read_run, score_run
from nexusbrain.records import Progress

IdOf = Callable[[Retrieved], str]
"""Maps a search result to the dataset id its judgments use (a uri, a turn id, a chunk id)."""

Keep = Callable[["JudgedQuery", list[str]], None]
"""Receives each query with its full ranking of dataset ids (e.g. to write a TREC run)."""


@dataclass(frozen=True, slots=True)
class JudgedQuery:
    """A query and its judgments: id -> grade, where a grade above 0 means relevant (binary
    sets use grade 1). `scope` restricts the search to uris under it (one conversation)."""

    id: str
    text: str
    judgments: Mapping[str, int]
    split: str
    group: str | None = None
    scope: str | None = None


def the_metrics(names: Sequence[str | Metric]) -> tuple[Metric, ...]:
    """Parsed metrics without repeats, in the order given."""
    parsed = (m if isinstance(m, Metric) else parse_metric(m) for m in names)
    return tuple({m.key: m for m in parsed}.values())


def deepest_cutoff(metrics: Sequence[Metric], at_least: int = 10) -> int:
    """The retrieval depth the metrics need."""
    return max([at_least, *(m.k for m in metrics if m.k is not None)])


def ranked_ids(results: Sequence[Retrieved], id_of: IdOf) -> list[str]:
    """Dataset ids in rank order, each kept at its first position only, so that two chunks of
    one judged document cannot both earn gain."""
    return list(dict.fromkeys(id_of(r) for r in results))


def score_query(
    query: JudgedQuery,
    ranked: Sequence[str],
    metrics: Sequence[Metric],
    sure: Retrieved | None = None,
) -> QueryScore:
    """A query's scores, with the confidence of its result set when the target gave one
    (`sure`: a result carrying it)."""
    grades = dict(query.judgments)
    return QueryScore(
        id=query.id,
        query=query.text,
        split=query.split,
        relevant=tuple(sorted(doc for doc, grade in grades.items() if grade > 0)),
        top=tuple(ranked[:TOP_SHOWN]),
        scores={m.key: evaluate(m, ranked, grades) for m in metrics},
        group=query.group,
        confidence=None if sure is None else sure.confidence,
        band=None if sure is None else sure.band,
    )


def calibrated(scores: Sequence[QueryScore]) -> Calibration | None:
    """The calibration of these queries' result sets (evals/calibration.py)."""
    return calibrate(Judged(s.confidence, s.band, good_in_top(s.top, s.relevant)) for s in scores)


def score_queries(
    target: SearchTarget,
    queries: Sequence[JudgedQuery],
    request: SearchRequest,
    metrics: Sequence[Metric],
    id_of: IdOf,
    progress: Progress | None = None,
    keep: Keep | None = None,
) -> tuple[list[QueryScore], float]:
    """Search every query and score it; also returns the seconds spent searching."""
    scores: list[QueryScore] = []
    spent = 0.0
    for done, query in enumerate(queries, start=1):
        started = time.perf_counter()
        results = target.search(query.text, request, path_prefix=query.scope)
        spent += time.perf_counter() - started
        ranked = ranked_ids(results, id_of)
        sure = next((r for r in results if r.confidence is not None), None)
        scores.append(score_query(query, ranked, metrics, sure))
        if keep is not None:
            keep(query, ranked)
        if progress is not None:
            progress("searching", done, len(queries))
    return scores, spent


def run_queries(
    suite: str,
    dataset: str,
    target: SearchTarget,
    queries: Sequence[JudgedQuery],
    request: SearchRequest,
    metrics: Sequence[Metric],
    id_of: IdOf,
    *,
    progress: Progress | None = None,
    seconds: Mapping[str, float] | None = None,
) -> EvalRun:
    """Score `queries` against a ready target. `metrics` are over every query; with several
    splits, `groups` also gives each split's own means, and `split` names them all."""
    splits = sorted({q.split for q in queries})
    scores, searching = score_queries(target, queries, request, metrics, id_of, progress)
    split = ",".join(splits)
    config = run_config(
        suite=suite,
        dataset=dataset,
        split=split,
        request=request,
        target=target.describe(),
        metrics=metrics,
    )
    timing = {**(seconds or {}), "search": searching}
    timing["total"] = sum(timing.values())
    return EvalRun(
        suite=suite,
        split=split,
        metrics=means(scores, metrics),
        per_query=tuple(scores),
        config=config,
        groups=grouped(scores, metrics, "split") if len(splits) > 1 else {},
        counts={"queries": len(scores)},
        seconds=timing,
        calibration=calibrated(scores),
    )


def run_trec(run_path: Path, qrels_path: Path, metrics: Sequence[Metric]) -> EvalRun:
    """Score a TREC run file against qrels (see nexusbrain.evals.trec for the conventions)."""
    started = time.perf_counter()
    run, qrels = read_run(run_path), read_qrels(qrels_path)
    scored = score_run(run, qrels, metrics)
    per_query = tuple(
        QueryScore(
            id=qid,
            query="",
            split=qrels_path.stem,
            relevant=tuple(sorted(doc for doc, grade in qrels[qid].items() if grade > 0)),
            top=tuple(ranked_docids(run.get(qid, ()))[:TOP_SHOWN]),
            scores=dict(values),
        )
        for qid, values in scored.per_query.items()
    )
    config = {
        "suite": "trec",
        "run": str(run_path),
        "qrels": str(qrels_path),
        "split": qrels_path.stem,
        "metrics": [m.key for m in metrics],
        "commit": commit(),
    }
    counts = {"queries": len(per_query), "run_queries": len(run)}
    seconds = {"total": time.perf_counter() - started}
    return EvalRun(
        "trec", qrels_path.stem, dict(scored.mean), per_query, config, {}, counts, seconds
    )
