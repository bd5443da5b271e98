"""`nexusbrain eval run-all`: every suite in every search mode, each run recorded in the results
log with its per-question scores and operational metrics.

The sweep is given its scratch workspaces by the interface (a fresh brain in a temporary
folder per corpus scope, never the user's database) and, for replay, a copy of the brain to
replay against. Suites whose data is missing are skipped with the reason; a suite that raises
is recorded as failed with the reason, and the sweep goes on. brainbench does not depend on
the mode: it runs once, with mode "n/a".

Cost: retrieval runs on local compute, so its estimate is $0. Answer generation (optional,
`AnswerSettings`) is estimated from the price table, with each question's prompt holding the
mode's full context budget and each answer running to max_tokens: an upper estimate.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import orjson

from nexusbrain.clock import Clock
from nexusbrain.config import AnswerSettings
from nexusbrain.errors import BrainError, InvalidInput
from nexusbrain.evals import answer, beir, locomo, longmemeval
from nexusbrain.evals.brainbench import run_brainbench
from nexusbrain.evals.calibration import calibration_view
from nexusbrain.evals.metering import Meter, context, context_tokens, metered
from nexusbrain.evals.metrics import mean
from nexusbrain.evals.replay import ReplayTarget, read_captures, run_replay
from nexusbrain.evals.results_log import (
    NO_MODE,
    QuestionScores,
    RunRecord,
    RunStatus,
    make_run_id,
)
from nexusbrain.evals.runner import the_metrics
from nexusbrain.evals.runs import EvalRun, QueryScore
from nexusbrain.evals.targets import Retrieved, SearchRequest, WorkspaceFactory
from nexusbrain.records import SearchMode
from nexusbrain.retrieval.modes import PRESETS

log = logging.getLogger(__name__)


class Suite(StrEnum):
    LONGMEMEVAL = "longmemeval"
    LOCOMO = "locomo"
    BEIR = "beir"
    REPLAY = "replay"
    BRAINBENCH = "brainbench"


MODE_FREE = frozenset({Suite.BRAINBENCH})
ANSWERED = frozenset({Suite.LONGMEMEVAL, Suite.LOCOMO})
LOCOMO_METRICS = ("recall@5", "recall@10", "ndcg@10", "mrr")
LONGMEMEVAL_METRICS = (
    ("session", "recall_any@5"),
    ("session", "recall_any@10"),
    ("session", "ndcg_any@10"),
    ("turn", "recall_any@10"),
)


@dataclass(frozen=True, slots=True)
class Caps:
    retrieval_usd: float = 5.0
    answer_usd: float = 20.0


@dataclass(frozen=True, slots=True)
class SweepSpec:
    modes: tuple[str, ...]
    suites: tuple[Suite, ...]
    seed: int
    data: Mapping[Suite, Path] = field(default_factory=dict)
    beir_split: str | None = None
    answer: AnswerSettings | None = None
    unavailable: Mapping[Suite, str] = field(default_factory=dict)  # suite -> why it cannot run
    models: str | None = None  # the --embedder/--reranker chosen, in the run ids ("edge+quality")


@dataclass(frozen=True, slots=True)
class PlannedRun:
    suite: Suite
    mode: str
    data: Path | None
    questions: int  # what the estimate counts (0 when unknown)
    skip: str | None = None


@dataclass(frozen=True, slots=True)
class RunEstimate:
    suite: Suite
    mode: str
    retrieval_usd: float
    answer_usd: float
    answer_tokens: int


@dataclass(frozen=True, slots=True)
class SweepTools:
    """What the interface hands the sweep: scratch workspaces, the replay target, the answer
    endpoint, the clock and the code's commit."""

    factory: WorkspaceFactory
    clock: Clock
    commit: str
    replay_target: Callable[[], AbstractContextManager[ReplayTarget]] | None = None
    replay_label: str = ""
    chat: Callable[[AnswerSettings], answer.ChatClient] = answer.ChatClient


@dataclass(frozen=True, slots=True)
class Outcome:
    metrics: Mapping[str, float]
    per_question: tuple[QuestionScores, ...] = ()
    avg_tokens: float | None = None
    p99_latency_ms: float | None = None
    cost_per_query_usd: float = 0.0
    data: str = ""
    fingerprint: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    models: Mapping[str, str] = field(default_factory=dict)  # role -> model id the run used


# planning and cost


def plan(spec: SweepSpec) -> list[PlannedRun]:
    runs = []
    for suite in spec.suites:
        modes = (NO_MODE,) if suite in MODE_FREE else spec.modes
        path = spec.data.get(suite)
        skip = spec.unavailable.get(suite) or _missing(suite, path)
        questions = 0 if skip or path is None else _question_count(suite, path, spec)
        runs += [PlannedRun(suite, mode, path, questions, skip) for mode in modes]
    return runs


def _missing(suite: Suite, path: Path | None) -> str | None:
    if suite is Suite.BRAINBENCH:
        return None
    if path is None:
        return f"no data: give --data {suite.value}=PATH"
    if not path.exists():
        return f"data missing: {path} does not exist"
    return None


def _question_count(suite: Suite, path: Path, spec: SweepSpec) -> int:
    """How many questions a run will answer (for the estimate); 0 if the data will not load
    (the run then fails and says why)."""
    try:
        if suite is Suite.LOCOMO:
            return sum(
                1
                for sample in locomo.load_locomo(path)
                for q in locomo.questions_of(sample, "dev").queries
                if not (q.group or "").startswith(f"{locomo.ADVERSARIAL} ")
            )
        if suite is Suite.LONGMEMEVAL:
            entries = longmemeval.load_longmemeval(path)
            return sum(1 for e in entries if "_abs" not in str(e["question_id"]))
        if suite is Suite.BEIR:
            return len(beir.beir_queries(path, _split(path, spec)))
        if suite is Suite.REPLAY:
            return len(read_captures(path)[0])
    except BrainError:
        return 0
    return 0


def estimate(runs: Sequence[PlannedRun], config: AnswerSettings | None) -> list[RunEstimate]:
    out = []
    for run in runs:
        usd, tokens = 0.0, 0
        if config is not None and run.suite in ANSWERED and not run.skip:
            guess = answer.estimate(run.questions, _budget(run.mode), config)
            usd, tokens = guess.usd, guess.tokens_in + guess.tokens_out
        out.append(RunEstimate(run.suite, run.mode, 0.0, usd, tokens))
    return out


def _budget(mode: str) -> int:
    return PRESETS[SearchMode(mode)].budget_tokens


def over_caps(estimates: Sequence[RunEstimate], caps: Caps) -> list[str]:
    """One message per cap the estimate exceeds."""
    retrieval = sum(e.retrieval_usd for e in estimates)
    answering = sum(e.answer_usd for e in estimates)
    out = []
    if retrieval > caps.retrieval_usd:
        out.append(f"retrieval estimate ${retrieval:.4f} exceeds the cap ${caps.retrieval_usd:.4f}")
    if answering > caps.answer_usd:
        out.append(
            f"answer generation estimate ${answering:.4f} exceeds the cap ${caps.answer_usd:.4f}"
        )
    return out


# running


def run_sweep(
    spec: SweepSpec,
    tools: SweepTools,
    runs: Sequence[PlannedRun],
    on_record: Callable[[RunRecord], None] = lambda _: None,
) -> list[RunRecord]:
    """Run every planned run in order; each record goes to `on_record` as soon as it is made."""
    records = []
    for planned in runs:
        record = run_one(planned, spec, tools)
        on_record(record)
        records.append(record)
    return records


def run_one(planned: PlannedRun, spec: SweepSpec, tools: SweepTools) -> RunRecord:
    def record(status: RunStatus, outcome: Outcome | None, reason: str | None) -> RunRecord:
        found = outcome or Outcome({})
        run_id = make_run_id(tools.commit, planned.suite.value, planned.mode, spec.seed)
        return RunRecord(
            run_id=f"{run_id}-{spec.models}" if spec.models else run_id,
            ran_at=tools.clock(),
            suite=planned.suite.value,
            mode=planned.mode,
            status=status,
            metrics=found.metrics,
            commit=tools.commit,
            seed=spec.seed,
            reason=reason,
            per_question=found.per_question,
            avg_tokens=found.avg_tokens,
            cost_per_query_usd=found.cost_per_query_usd if outcome else None,
            p99_latency_ms=found.p99_latency_ms,
            data=found.data or (str(planned.data) if planned.data else None),
            data_fingerprint=found.fingerprint,
            details=found.details,
            models=found.models,
        )

    if planned.skip:
        return record(RunStatus.SKIPPED, None, planned.skip)
    try:
        outcome = _RUNNERS[planned.suite](planned, spec, tools)
    except BrainError as exc:
        return record(RunStatus.FAILED, None, exc.message)
    except Exception as exc:  # a broken suite must not stop the sweep; the log says why
        log.exception("%s/%s failed", planned.suite.value, planned.mode)
        return record(RunStatus.FAILED, None, f"{type(exc).__name__}: {exc}")
    return record(RunStatus.COMPLETED, outcome, None)


def _locomo(planned: PlannedRun, spec: SweepSpec, tools: SweepTools) -> Outcome:
    assert planned.data is not None
    meter = Meter()
    run = locomo.run_locomo(
        planned.data,
        metered(tools.factory, meter),
        SearchRequest(10, planned.mode),
        the_metrics(LOCOMO_METRICS),
    )
    scored = [q for q in run.per_query if not (q.group or "").startswith(f"{locomo.ADVERSARIAL} ")]
    searched = _contexts(meter, scored, planned.mode, lambda q: q.id.rsplit(":q", 1)[0])
    gold = {
        f"{s.sample_id}:q{q.index}": q.answer
        for s in locomo.load_locomo(planned.data)
        for q in s.questions
    }
    per_question = {q.id: dict(q.scores) for q in scored}
    return _finish(planned, spec, tools, run, scored, per_question, searched, meter, gold)


def _longmemeval(planned: PlannedRun, spec: SweepSpec, tools: SweepTools) -> Outcome:
    assert planned.data is not None
    meter = Meter()
    with tempfile.TemporaryFile() as handle:
        run = longmemeval.run_longmemeval(
            planned.data, metered(tools.factory, meter), SearchRequest(10, planned.mode), handle
        )
        handle.seek(0)
        lines = [orjson.loads(line) for line in handle if line.strip()]
    per_question = {
        str(line["question_id"]): {
            f"{level}_{name}": float(line["retrieval_results"]["metrics"][level][name])
            for level, name in LONGMEMEVAL_METRICS
        }
        for line in lines
    }
    scored = list(run.per_query)
    searched = _contexts(meter, scored, planned.mode, lambda q: q.id)
    gold = {
        str(e["question_id"]): str(e.get("answer", ""))
        for e in longmemeval.load_longmemeval(planned.data)
    }
    return _finish(planned, spec, tools, run, scored, per_question, searched, meter, gold)


def _contexts(
    meter: Meter, scored: Sequence[QueryScore], mode: str, conversation: Callable[[QueryScore], str]
) -> dict[str, list[Retrieved]]:
    """Each scored question's answer context, from the search the suite made for it."""
    found = meter.by_question()
    out = {}
    for q in scored:
        search = found.get((f"conversation://{conversation(q)}/", q.query))
        if search is None:
            raise InvalidInput(f"no recorded search for question {q.id}")
        out[q.id] = context(search.results, mode)
    return out


def _finish(
    planned: PlannedRun,
    spec: SweepSpec,
    tools: SweepTools,
    run: EvalRun,
    scored: Sequence[QueryScore],
    per_question: Mapping[str, Mapping[str, float]],
    contexts: Mapping[str, list[Retrieved]],
    meter: Meter,
    gold: Mapping[str, str],
) -> Outcome:
    """The outcome of a question-answering suite, with answers when configured."""
    assert planned.data is not None
    rows = {qid: dict(values) for qid, values in per_question.items()}
    keys = list(dict.fromkeys(k for values in rows.values() for k in values))
    metrics = {k: mean(v[k] for v in rows.values() if k in v) for k in keys}
    details: dict[str, Any] = {"counts": dict(run.counts), "seconds": _rounded(run.seconds)}
    details.update(_calibration(run))
    cost = 0.0
    if spec.answer is not None:
        answers = _answers(spec, tools, scored, contexts, gold)
        for a in answers:
            rows[a.question_id].update(answer.per_question(a))
        metrics.update(answer.summary(answers))
        total = sum(a.cost_usd for a in answers)
        cost = total / len(answers) if answers else 0.0
        details["answers"] = {
            "model": spec.answer.model,
            "judge": spec.answer.judge_model,
            "cost_usd": round(total, 6),
            "examples": [answer.answer_view(a) for a in answers[:5]],
        }
    tokens = [context_tokens(contexts[q.id], planned.mode) for q in scored]
    return Outcome(
        metrics=metrics,
        per_question=tuple(QuestionScores(qid, values) for qid, values in rows.items()),
        avg_tokens=round(mean(tokens), 3) if tokens else None,
        p99_latency_ms=_ms(meter.p99_latency_ms()),
        cost_per_query_usd=round(cost, 8),
        data=str(planned.data),
        fingerprint=fingerprint([planned.data]),
        details=details,
        models=_models(run),
    )


def _answers(
    spec: SweepSpec,
    tools: SweepTools,
    scored: Sequence[QueryScore],
    contexts: Mapping[str, list[Retrieved]],
    gold: Mapping[str, str],
) -> list[answer.Answer]:
    assert spec.answer is not None
    questions = [
        answer.Question(
            q.id, q.query, gold.get(q.id, ""), frozenset(q.relevant), tuple(contexts[q.id])
        )
        for q in scored
    ]
    client = tools.chat(spec.answer)
    try:
        return answer.answer_all(questions, client, spec.answer, seed=spec.seed)
    finally:
        client.close()


def _beir(planned: PlannedRun, spec: SweepSpec, tools: SweepTools) -> Outcome:
    assert planned.data is not None
    split = _split(planned.data, spec)
    meter = Meter()
    run = beir.run_beir(
        planned.data,
        split,
        metered(tools.factory, meter),
        SearchRequest(100, planned.mode, best_per_document=True),
        the_metrics(beir.DEFAULT_METRICS),
    )
    searched = meter.by_question()
    tokens = [
        context_tokens(searched[(None, q.query)].results, planned.mode) for q in run.per_query
    ]
    folder = planned.data
    return Outcome(
        metrics=dict(run.metrics),
        per_question=tuple(QuestionScores(q.id, dict(q.scores)) for q in run.per_query),
        avg_tokens=round(mean(tokens), 3) if tokens else None,
        p99_latency_ms=_ms(meter.p99_latency_ms()),
        data=f"{folder} (split {split})",
        fingerprint=fingerprint(
            [folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / f"{split}.tsv"]
        ),
        details={
            "counts": dict(run.counts),
            "seconds": _rounded(run.seconds),
            "split": split,
            **_calibration(run),
        },
        models=_models(run),
    )


def _models(run: EvalRun) -> dict[str, str]:
    """The model ids the run's brains searched with, as their target described them."""
    found = run.config.get("retrieval", {}).get("models") or {}
    return {str(role): str(model) for role, model in found.items()}


def _calibration(run: EvalRun) -> dict[str, Any]:
    """The run's calibration, for the log's details (`eval compare` shows it)."""
    return {"calibration": calibration_view(run.calibration)} if run.calibration else {}


def _split(folder: Path, spec: SweepSpec) -> str:
    if spec.beir_split:
        return spec.beir_split
    splits = beir.beir_splits(folder)
    if "test" in splits or not splits:
        return "test"
    if len(splits) == 1:
        return splits[0]
    raise InvalidInput(f"{folder} has splits {', '.join(splits)}: give --beir-split")


def _replay(planned: PlannedRun, spec: SweepSpec, tools: SweepTools) -> Outcome:
    assert planned.data is not None
    if tools.replay_target is None:
        raise InvalidInput("no brain to replay against")
    captured, problems = read_captures(planned.data)
    with tools.replay_target() as target:
        run = run_replay(
            captured, target, planned.mode, source=str(planned.data), problems=problems
        )
    summary = run.summary()
    return Outcome(
        metrics=run.metrics(),
        per_question=tuple(QuestionScores(r.query.id, dict(r.scores)) for r in run.replayed),
        p99_latency_ms=_ms(summary["latency_ms"]["now_p99"]),
        data=f"{planned.data} against {tools.replay_label}",
        fingerprint=fingerprint([planned.data], extra=tools.replay_label),
        details={"summary": summary, "problems": list(problems)},
    )


def _brainbench(planned: PlannedRun, spec: SweepSpec, tools: SweepTools) -> Outcome:
    result = run_brainbench(tools.factory, seed=spec.seed)
    return Outcome(
        metrics=result.metrics,
        p99_latency_ms=_ms(result.metrics["search_p99_ms"]),
        data=result.corpus,
        fingerprint=hashlib.sha256(result.corpus.encode()).hexdigest(),
        details={"failed_graph_checks": list(result.failed_checks)},
    )


_RUNNERS: Mapping[Suite, Callable[[PlannedRun, SweepSpec, SweepTools], Outcome]] = {
    Suite.LOCOMO: _locomo,
    Suite.LONGMEMEVAL: _longmemeval,
    Suite.BEIR: _beir,
    Suite.REPLAY: _replay,
    Suite.BRAINBENCH: _brainbench,
}


def fingerprint(paths: Iterable[Path], extra: str = "") -> str:
    """sha256 over the files' bytes (and `extra`): the identity of a run's data."""
    digest = hashlib.sha256()
    for path in paths:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    digest.update(extra.encode("utf-8"))
    return digest.hexdigest()


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _rounded(values: Mapping[str, float]) -> dict[str, float]:
    return {k: round(v, 3) for k, v in values.items()}
