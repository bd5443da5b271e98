"""The eval files the web UI shows: the results log (one JSON run per line, which only
`nexusbrain eval run-all` writes), and the `eval compare` report (markdown) and its
confidence-interval plot, when `eval compare --output/--plot` wrote them into the folder.

They live in `$BRAIN_EVALS_DIR`, else `.nexusbrain-evals` at the root of the git checkout
holding the working directory, else `.nexusbrain-evals` in the working directory. They are read
on every request, so a new run shows on the next reload.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexusbrain.evals.results_log import RESULTS_FILE as RESULTS_LOG

REPORT = "compare-report.md"
PLOTS = {"compare-plot.svg": "image/svg+xml", "compare-plot.png": "image/png"}
MAX_RUNS = 200  # the page lists this many most recent runs
MAX_REPORT_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class LoggedRun:
    """One line of the results log, as shown: every field as text, metrics by name."""

    run_id: str
    ran_at: str
    suite: str
    mode: str
    commit: str
    seed: str
    status: str
    reason: str  # why a run was skipped or failed, if it says
    metrics: tuple[tuple[str, float | str], ...]


@dataclass(frozen=True, slots=True)
class EvalFiles:
    folder: Path
    runs: tuple[LoggedRun, ...]  # newest first (the log is appended to)
    total_runs: int
    unreadable: int  # lines of the log that are not a JSON object
    report: str | None
    plot: Path | None


def read_eval_files(folder: Path, max_runs: int = MAX_RUNS) -> EvalFiles:
    runs, total, unreadable = _read_log(folder / RESULTS_LOG, max_runs)
    report_path = folder / REPORT
    report = None
    if report_path.is_file():
        report = report_path.read_bytes()[:MAX_REPORT_BYTES].decode("utf-8", errors="replace")
    return EvalFiles(folder, runs, total, unreadable, report, plot_path(folder))


def plot_path(folder: Path) -> Path | None:
    return next((folder / name for name in PLOTS if (folder / name).is_file()), None)


def _read_log(path: Path, max_runs: int) -> tuple[tuple[LoggedRun, ...], int, int]:
    if not path.is_file():
        return (), 0, 0
    recent: deque[LoggedRun] = deque(maxlen=max_runs)
    total = unreadable = 0
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if not line.strip():
                continue
            run = _run(line)
            if run is None:
                unreadable += 1
            else:
                total += 1
                recent.append(run)
    return tuple(reversed(recent)), total, unreadable


def _run(line: str) -> LoggedRun | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    metrics = value.get("metrics")
    return LoggedRun(
        run_id=_text(value.get("run_id")),
        ran_at=_text(value.get("ran_at")),
        suite=_text(value.get("suite")),
        mode=_text(value.get("mode")),
        commit=_text(value.get("commit")),
        seed=_text(value.get("seed")),
        status=_text(value.get("status")),
        reason=_text(value.get("reason")),
        metrics=tuple(
            (str(name), _metric(number))
            for name, number in (metrics.items() if isinstance(metrics, dict) else ())
        ),
    )


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _metric(value: Any) -> float | str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return json.dumps(value) if isinstance(value, dict | list) else _text(value)
