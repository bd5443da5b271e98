"""`nexusbrain eval run-all | compare | replay | captures`: comparing search modes.

run-all runs every suite in every mode against scratch brains and appends each run to the
results log; compare reads the log and writes the markdown report (and a plot); replay re-runs
captured queries against a brain; captures dumps a brain's captured queries as NDJSON.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from pathlib import Path

import click
import orjson

from nexusbrain.cli.eval import models_options
from nexusbrain.cli.eval_options import EXISTING_FILE, FILE, json_option, mode_option, output_option
from nexusbrain.cli.eval_targets import ModelChoice, open_brain, scratch_factory
from nexusbrain.cli.render import Bars
from nexusbrain.cli.sweep_targets import BrainReplayTarget, replay_copy
from nexusbrain.clock import utc_now
from nexusbrain.config import AnswerSettings, answer_settings
from nexusbrain.environment import resolve_db
from nexusbrain.errors import InvalidInput
from nexusbrain.evals.bootstrap import DEFAULT_RESAMPLES
from nexusbrain.evals.compare import compare
from nexusbrain.evals.replay import ReplayTarget, read_captures, run_replay
from nexusbrain.evals.results_log import (
    RunRecord,
    append_records,
    read_log,
    record_view,
    results_path,
)
from nexusbrain.evals.runs import commit
from nexusbrain.evals.sweep import (
    ANSWERED,
    Caps,
    PlannedRun,
    RunEstimate,
    Suite,
    SweepSpec,
    SweepTools,
    estimate,
    over_caps,
    plan,
    run_sweep,
)
from nexusbrain.records import SearchMode

PREFIX = "[eval run-all]"
ALL_MODES = ",".join(m.value for m in SearchMode)
ALL_SUITES = ",".join(s.value for s in Suite)


def add_sweep_commands(group: click.Group) -> None:
    """Register run-all, compare, replay and captures on the `eval` group."""
    for command in (run_all, compare_command, replay_command, captures_command):
        group.add_command(command)


def _names(text: str, allowed: Sequence[str], what: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise InvalidInput(f"--{what} {text!r}: choose from {', '.join(allowed)}")
    return names


def _data(values: Sequence[str]) -> dict[Suite, Path]:
    out = {}
    for value in values:
        name, _, path = value.partition("=")
        if name not in set(Suite) or not path:
            raise InvalidInput(f"--data {value!r}: write SUITE=PATH, SUITE one of {ALL_SUITES}")
        out[Suite(name)] = Path(path)
    return out


def _results(path: Path | None) -> Path:
    return path or results_path()


_results_option = click.option(
    "--results",
    type=FILE,
    help="The results log (default: .nexusbrain-evals/eval-results.jsonl at the git root).",
)


def _interactive() -> bool:
    return sys.stdin.isatty()


@click.command("run-all")
@click.option(
    "--modes", default=ALL_MODES, show_default=True, help="Search modes, comma-separated."
)
@click.option("--suites", default=ALL_SUITES, show_default=True, help="Suites, comma-separated.")
@click.option("--seed", default=42, show_default=True, help="Recorded in every run id.")
@click.option(
    "--data",
    "data",
    multiple=True,
    metavar="SUITE=PATH",
    help="A suite's data: a LongMemEval JSON, a LoCoMo JSON, a BEIR folder, a capture NDJSON.",
)
@click.option("--beir-split", help="The BEIR qrels split (default: test, or the only one).")
@click.option(
    "--replay-db",
    type=FILE,
    help="The brain replay runs against (a copy of it; default: nexusbrain's --db).",
)
@models_options
@click.option("--answer", is_flag=True, help="Also answer longmemeval and locomo questions.")
@click.option("--budget-usd-retrieval", type=float, help="Cap on retrieval cost (default $5).")
@click.option("--budget-usd-answer", type=float, help="Cap on answer generation (default $20).")
@click.option("--yes", is_flag=True, help="Run even when the estimate exceeds a cap.")
@_results_option
@json_option("End with a JSON summary for scripts.")
@click.pass_context
def run_all(
    ctx: click.Context,
    modes: str,
    suites: str,
    seed: int,
    data: tuple[str, ...],
    beir_split: str | None,
    replay_db: Path | None,
    embedder: str | None,
    reranker: str | None,
    answer: bool,
    budget_usd_retrieval: float | None,
    budget_usd_answer: float | None,
    yes: bool,
    results: Path | None,
    as_json: bool,
) -> None:
    """Run every suite in every search mode and append each run to the results log.

    First prints the cost estimate (retrieval is local compute: $0; answer generation from
    the price table) and the budget caps; refuses a sweep over a cap unless --yes, and
    without a terminal needs the budget flags given explicitly. Every run uses scratch brains
    in a temporary folder; replay runs against a copy of --replay-db. A suite whose data is
    missing is skipped, with the reason.

    \b
    Example:
      nexusbrain eval run-all --modes conservative,balanced,tokenmax --seed 42 --yes
      nexusbrain eval run-all --suites locomo --data locomo=locomo.json --budget-usd-retrieval 5
      nexusbrain eval run-all --suites beir --data beir=../shared/datasets/cranfield --yes
      nexusbrain eval run-all --suites beir --data beir=med --embedder edge --reranker quality
    """
    chosen = ModelChoice(embedder, reranker)
    spec = SweepSpec(
        modes=_names(modes, [m.value for m in SearchMode], "modes"),
        suites=tuple(Suite(s) for s in _names(suites, [s.value for s in Suite], "suites")),
        seed=seed,
        data=_data(data),
        beir_split=beir_split,
        answer=answer_settings() if answer else None,
        models=chosen.tag(),
    )
    caps = Caps(
        retrieval_usd=5.0 if budget_usd_retrieval is None else budget_usd_retrieval,
        answer_usd=20.0 if budget_usd_answer is None else budget_usd_answer,
    )
    db = replay_db or Path(resolve_db((ctx.obj or {}).get("db")))
    if Suite.REPLAY in spec.suites and not db.is_file():
        spec = replace(spec, unavailable={Suite.REPLAY: f"no brain to replay against at {db}"})
    planned = plan(spec)
    estimates = estimate(planned, spec.answer)
    _show_estimate(planned, estimates, caps, spec.answer)
    _check_budget(estimates, caps, answer, budget_usd_retrieval, budget_usd_answer, yes)
    log = _results(results)
    tools = SweepTools(
        factory=scratch_factory(spans=True, models=chosen),
        clock=utc_now,
        commit=commit(),
        replay_target=lambda: replay_copy(db),
        replay_label=str(db),
    )

    def recorded(record: RunRecord) -> None:
        append_records(log, [record])
        reason = f" ({record.reason})" if record.reason else ""
        figures = "".join(f", {name} {value:.4f}" for name, value in record.metrics.items())
        click.echo(f"{PREFIX} {record.run_id}: {record.status.value}{reason}{figures}")

    records = run_sweep(spec, tools, planned, recorded)
    click.echo("Audit trail:")
    click.echo(f"  {log}")
    if as_json:
        summary = {"results": str(log), "runs": [_brief(r) for r in records]}
        click.echo(orjson.dumps(summary, option=orjson.OPT_INDENT_2).decode())


def _brief(record: RunRecord) -> dict[str, object]:
    view = record_view(record)
    return {k: view[k] for k in ("run_id", "suite", "mode", "status", "reason", "metrics")}


def _show_estimate(
    planned: Sequence[PlannedRun],
    estimates: Sequence[RunEstimate],
    caps: Caps,
    config: AnswerSettings | None,
) -> None:
    click.echo(f"{PREFIX} cost estimate:")
    for run, cost in zip(planned, estimates, strict=True):
        if run.skip:
            answering = "-"
        elif config is None or run.suite not in ANSWERED:
            answering = "$0.00 (not requested)" if run.suite in ANSWERED else "$0.00 (none)"
        else:
            answering = (
                f"${cost.answer_usd:.4f} ({run.questions} questions, <= {cost.answer_tokens:,} "
                f"tokens, {config.model})"
            )
        skipped = f"  [will skip: {run.skip}]" if run.skip else ""
        click.echo(
            f"  {run.suite.value}/{run.mode}: retrieval ${cost.retrieval_usd:.2f} "
            f"(local compute), answer generation {answering}{skipped}"
        )
    total_r = sum(e.retrieval_usd for e in estimates)
    total_a = sum(e.answer_usd for e in estimates)
    click.echo(f"  total: retrieval ${total_r:.2f}, answer generation ${total_a:.4f}")
    click.echo(
        f"budget caps: retrieval ${caps.retrieval_usd:.2f}, "
        f"answer generation ${caps.answer_usd:.2f}"
    )


def _check_budget(
    estimates: Sequence[RunEstimate],
    caps: Caps,
    answer: bool,
    retrieval_flag: float | None,
    answer_flag: float | None,
    yes: bool,
) -> None:
    if not _interactive():
        if retrieval_flag is None and answer_flag is None:
            raise InvalidInput(
                "no terminal to confirm the budget: give --budget-usd-retrieval and/or "
                "--budget-usd-answer explicitly (e.g. --budget-usd-retrieval 5)"
            )
        if answer and answer_flag is None:
            raise InvalidInput("no terminal: --answer needs an explicit --budget-usd-answer")
    problems = over_caps(estimates, caps)
    if problems and not yes:
        raise InvalidInput(
            "refusing the sweep: " + "; ".join(problems) + " (raise the cap, or pass --yes)"
        )


@click.command("compare")
@click.option("--suite", "suites", multiple=True, help="Only this suite (repeatable).")
@output_option("Write the markdown report here (default: stdout).")
@click.option(
    "--plot",
    type=FILE,
    help="Also draw the confidence intervals (.png or .svg; needs nexusbrain[plots]).",
)
@click.option("--seed", default=42, show_default=True, help="Seed of the bootstrap.")
@click.option(
    "--resamples", default=DEFAULT_RESAMPLES, show_default=True, help="Bootstrap resamples."
)
@_results_option
def compare_command(
    suites: tuple[str, ...],
    output: Path | None,
    plot: Path | None,
    seed: int,
    resamples: int,
    results: Path | None,
) -> None:
    """Write the search-mode comparison report from the results log: per suite the runs,
    each metric per mode with a Plain English line, paired bootstrap comparisons with
    Bonferroni's correction and verdicts, operational metrics and the cost-quality
    trade-off. The same log and seed give a byte-identical report. Malformed log lines are
    named on stderr and skipped.

    \b
    Example:
      nexusbrain eval compare --output report.md --plot intervals.png
      nexusbrain eval compare --suite locomo --seed 42
    """
    log = _results(results)
    reading = read_log(log)
    for problem in reading.problems:
        click.echo(f"{log}: {problem}", err=True)
    report = compare(
        reading.records,
        seed=seed,
        resamples=resamples,
        suites=set(suites) or None,
        source=str(results) if results else _shown(log),
        problems=reading.problems,
    )
    if output is None:
        click.echo(report.markdown, nl=False)
    else:
        output.write_text(report.markdown, encoding="utf-8")
        click.echo(f"wrote {output} ({len(report.comparisons)} comparisons)", err=True)
    if plot is not None:
        from nexusbrain.evals.plot import plot_intervals

        drawn = plot_intervals(report, plot)
        click.echo(f"wrote {plot} ({drawn} intervals)", err=True)


def _shown(log: Path) -> str:
    """The log's path relative to the current folder when it is under it."""
    try:
        return str(log.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(log)


@click.command("replay")
@click.option(
    "--against",
    required=True,
    type=EXISTING_FILE,
    help="Captured queries (NDJSON from `nexusbrain eval captures`).",
)
@mode_option("Search mode to replay in.")
@click.option("--k", type=int, help="Compare the top k (default: as many as came back then).")
@click.option(
    "--db",
    type=FILE,
    help="The brain to replay against (default: nexusbrain's --db, $BRAIN_DB_PATH).",
)
@json_option()
@click.pass_context
def replay_command(
    ctx: click.Context, against: Path, mode: str, k: int | None, db: Path | None, as_json: bool
) -> None:
    """Re-run captured queries on the current brain (capture off) and compare with what they
    returned then: overlap@k, rank-biased overlap, results lost and gained, latency now and
    then; and recall@k and MRR where the capture holds judgments or clicks.

    \b
    Example:
      nexusbrain eval replay --against captured.ndjson --mode balanced
      nexusbrain eval replay --against captured.ndjson --mode tokenmax --db notes.db --json
    """
    captured, problems = read_captures(against)
    for problem in problems:
        click.echo(f"{against}: {problem}", err=True)
    brain = open_brain(db or (ctx.obj or {}).get("db"))
    try:
        target: ReplayTarget = BrainReplayTarget(brain, str(brain.settings.db))
        with Bars(not as_json) as bars:
            run = run_replay(
                captured, target, mode, k=k, source=str(against), problems=problems, progress=bars
            )
    finally:
        brain.close()
    view = {"source": str(against), "mode": mode, "metrics": run.metrics(), **run.summary()}
    if as_json:
        click.echo(orjson.dumps(view, option=orjson.OPT_INDENT_2).decode())
        return
    latency = view["latency_ms"]
    click.echo(
        f"replay: {against}  mode {mode}  k {k or 'as captured'}  queries {view['replayed']}"
    )
    click.echo("  " + "  ".join(f"{key} {value:.4f}" for key, value in view["metrics"].items()))
    click.echo(
        f"  lost {view['lost']} ({view['lost_per_query']:.2f}/query)  "
        f"gained {view['gained']} ({view['gained_per_query']:.2f}/query)  "
        f"judged queries {view['judged']}"
    )
    click.echo(
        "  latency ms: now p50 {} p99 {}; then p50 {} p99 {}".format(
            *(_ms(latency[key]) for key in ("now_p50", "now_p99", "then_p50", "then_p99"))
        )
    )


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


@click.command("captures")
@output_option("Write the NDJSON here (default: stdout).")
@click.option(
    "--db",
    type=FILE,
    help="The brain whose captures to dump (default: nexusbrain's --db, $BRAIN_DB_PATH).",
)
@click.pass_context
def captures_command(ctx: click.Context, output: Path | None, db: Path | None) -> None:
    """Dump the searches and recalls a brain captured (with BRAIN_CAPTURE=1 set when it served
    them) as NDJSON for replay:
    query, mode, filters, latency, and each result's chunk id with a stable id (uri and unit
    or character span) that another brain can match.

    \b
    Example:
      nexusbrain eval captures -o captured.ndjson
      nexusbrain eval captures --db notes.db > captured.ndjson
    """
    brain = open_brain(db or (ctx.obj or {}).get("db"))
    count = 0
    sink: AbstractContextManager[object] = nullcontext()
    try:
        handle = output.open("wb") if output is not None else None
        with handle or sink:
            for record in brain.admin.captured():
                line = orjson.dumps(record) + b"\n"
                if handle is not None:
                    handle.write(line)
                else:
                    click.echo(line.decode(), nl=False)
                count += 1
    finally:
        brain.close()
    if output is not None:
        click.echo(f"wrote {count} captured queries to {output}", err=True)
