"""The results log: one JSON line per evaluation run, in `.nexusbrain-evals/eval-results.jsonl`
at the git root (else the current folder).

A line written by `nexusbrain eval run-all` holds::

    {"run_id": "<commit>-<suite>-<mode>-<seed>", "ran_at": "2026-01-02T03:04:05.000000+00:00",
     "suite", "mode", "commit", "seed", "status": "completed" | "skipped" | "failed",
     "reason", "metrics": {...}, "per_question": [{"question_id", "metrics": {...}}],
     "avg_tokens", "cost_per_query_usd", "p99_latency_ms", "data", "data_fingerprint",
     "models": {"embedder": "<model id>", "reranker": "<model id>"}, "details": {...}}

Lines written by hand or by other tools need only run_id, suite, mode, ran_at, status and
metrics. The reader is tolerant: a malformed line is reported with its line number and
skipped, never fatal. Where a suite and mode (and, for `eval compare`, models) appear more than
once, the latest ran_at wins (on a tie, the later line).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

import orjson

from nexusbrain.clock import format_time, parse_time
from nexusbrain.evals.runs import git

RESULTS_DIR = ".nexusbrain-evals"
RESULTS_FILE = "eval-results.jsonl"
REQUIRED = ("run_id", "suite", "mode", "ran_at", "status", "metrics")
NO_MODE = "n/a"  # the mode of a suite that does not depend on it (brainbench)


class RunStatus(StrEnum):
    COMPLETED = "completed"
    SKIPPED = "skipped"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class QuestionScores:
    question_id: str
    metrics: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run of one suite in one mode, as the results log holds it."""

    run_id: str
    ran_at: datetime
    suite: str
    mode: str
    status: RunStatus
    metrics: Mapping[str, float]
    commit: str = "unknown"
    seed: int | None = None
    reason: str | None = None
    per_question: tuple[QuestionScores, ...] = ()
    avg_tokens: float | None = None
    cost_per_query_usd: float | None = None
    p99_latency_ms: float | None = None
    data: str | None = None
    data_fingerprint: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    models: Mapping[str, str] = field(default_factory=dict)  # role -> model id; {}: unrecorded

    @property
    def models_label(self) -> str:
        """The run's models in a few words: the embedder's id, and ' + ' the reranker's."""
        if not self.models:
            return "models not recorded"
        return " + ".join(self.models.get(role, "none") for role in ("embedder", "reranker"))


@dataclass(frozen=True, slots=True)
class LogReading:
    """The records a log holds, and one message per line that could not be read."""

    records: tuple[RunRecord, ...]
    problems: tuple[str, ...]


def results_path(cwd: Path | None = None) -> Path:
    """`.nexusbrain-evals/eval-results.jsonl` at the git root of `cwd`, else in `cwd`."""
    here = (cwd or Path.cwd()).resolve()
    root = git(here, "rev-parse", "--show-toplevel")
    return (Path(root) if root else here) / RESULTS_DIR / RESULTS_FILE


def make_run_id(commit: str, suite: str, mode: str, seed: int | None) -> str:
    return f"{commit}-{suite}-{mode}-{seed if seed is not None else 'na'}"


def record_view(record: RunRecord) -> dict[str, Any]:
    """The JSON object of a record (the line's fields, in a fixed order)."""
    return {
        "run_id": record.run_id,
        "ran_at": format_time(record.ran_at),
        "suite": record.suite,
        "mode": record.mode,
        "commit": record.commit,
        "seed": record.seed,
        "status": record.status.value,
        "reason": record.reason,
        "metrics": {k: _rounded(v) for k, v in record.metrics.items()},
        "per_question": [
            {
                "question_id": q.question_id,
                "metrics": {k: _rounded(v) for k, v in q.metrics.items()},
            }
            for q in record.per_question
        ],
        "avg_tokens": record.avg_tokens,
        "cost_per_query_usd": record.cost_per_query_usd,
        "p99_latency_ms": record.p99_latency_ms,
        "data": record.data,
        "data_fingerprint": record.data_fingerprint,
        "models": dict(record.models),
        "details": dict(record.details),
    }


def _rounded(value: float) -> float:
    return round(float(value), 6)


def append_records(path: Path, records: Iterable[RunRecord]) -> None:
    """Append one line per record, creating the folder as needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as handle:
        for record in records:
            handle.write(orjson.dumps(record_view(record)) + b"\n")


def read_log(path: Path) -> LogReading:
    """Every readable record of the log at `path` (none if it does not exist)."""
    if not path.is_file():
        return LogReading((), ())
    return parse_lines(path.read_bytes().splitlines())


def parse_lines(lines: Sequence[bytes]) -> LogReading:
    records: list[RunRecord] = []
    problems: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(parse_record(orjson.loads(line)))
        except orjson.JSONDecodeError as exc:
            problems.append(f"line {number}: not JSON ({exc}); skipped")
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(f"line {number}: {_reason(exc)}; skipped")
    return LogReading(tuple(records), tuple(problems))


def _reason(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    return str(exc)


def parse_record(value: Any) -> RunRecord:
    """A record from one decoded line; KeyError/TypeError/ValueError say what is wrong."""
    if not isinstance(value, dict):
        raise TypeError(f"expected a JSON object, got {type(value).__name__}")
    for name in REQUIRED:
        if name not in value:
            raise KeyError(name)
    return RunRecord(
        run_id=_text(value, "run_id"),
        ran_at=parse_time(_text(value, "ran_at")),
        suite=_text(value, "suite"),
        mode=_text(value, "mode"),
        status=RunStatus(_text(value, "status")),
        metrics=_numbers(value["metrics"], "metrics"),
        commit=str(value.get("commit") or "unknown"),
        seed=_optional_int(value.get("seed")),
        reason=_optional_text(value.get("reason")),
        per_question=tuple(_question(q) for q in value.get("per_question") or ()),
        avg_tokens=_optional_number(value.get("avg_tokens"), "avg_tokens"),
        cost_per_query_usd=_optional_number(value.get("cost_per_query_usd"), "cost_per_query_usd"),
        p99_latency_ms=_optional_number(value.get("p99_latency_ms"), "p99_latency_ms"),
        data=_optional_text(value.get("data")),
        data_fingerprint=_optional_text(value.get("data_fingerprint")),
        details=_details(value.get("details")),
        models=_models(value.get("models")),
    )


def _details(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _models(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("field 'models' must be an object of model ids by role")
    return {str(role): str(model) for role, model in value.items() if model}


def _text(value: Mapping[str, Any], name: str) -> str:
    found = value[name]
    if not isinstance(found, str) or not found.strip():
        raise ValueError(f"field {name!r} must be a non-empty string")
    return found


def _optional_text(value: Any) -> str | None:
    return None if value is None else str(value)


def _optional_int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    return int(value)


def _optional_number(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"field {name!r} must be a number")
    return float(value)


def _numbers(value: Any, name: str) -> dict[str, float]:
    if not isinstance(value, dict):
        raise ValueError(f"field {name!r} must be an object of numbers")
    out = {}
    for key, number in value.items():
        found = _optional_number(number, f"{name}.{key}")
        if found is not None:
            out[str(key)] = found
    return out


def _question(value: Any) -> QuestionScores:
    if not isinstance(value, dict) or "question_id" not in value:
        raise ValueError("per_question entries need a question_id and metrics")
    return QuestionScores(str(value["question_id"]), _numbers(value.get("metrics"), "metrics"))


def latest(records: Iterable[RunRecord]) -> dict[tuple[str, str], RunRecord]:
    """The latest run of each (suite, mode): the greatest ran_at; on a tie, the later line."""
    return {(s, m): r for (s, m, _), r in _latest(records, lambda r: "").items()}


def latest_by_models(records: Iterable[RunRecord]) -> dict[tuple[str, str, str], RunRecord]:
    """The latest run of each (suite, mode, models), as `latest`: runs of one mode with
    other models are kept apart (`eval compare` compares them)."""
    return _latest(records, lambda r: r.models_label)


def _latest(
    records: Iterable[RunRecord], models: Callable[[RunRecord], str]
) -> dict[tuple[str, str, str], RunRecord]:
    chosen: dict[tuple[str, str, str], RunRecord] = {}
    for record in records:
        key = (record.suite, record.mode, models(record))
        if key not in chosen or record.ran_at >= chosen[key].ran_at:
            chosen[key] = record
    return chosen
