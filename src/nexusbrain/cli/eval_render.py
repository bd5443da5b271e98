"""How `nexusbrain eval` shows a run: progress bars while it works, then a table (or JSON),
then one stderr line per broken floor and exit code 1."""

from __future__ import annotations

from collections.abc import Sequence

import click
import orjson

from nexusbrain.evals.calibration import calibration_lines, calibration_view
from nexusbrain.evals.metrics import Metric
from nexusbrain.evals.runs import EvalRun, broken_floors, run_view


def finish(
    ctx: click.Context, run: EvalRun, floors: Sequence[tuple[Metric, float]], as_json: bool
) -> None:
    if as_json:
        click.echo(orjson.dumps(run_view(run), option=orjson.OPT_INDENT_2).decode())
    else:
        show(run)
    broken = broken_floors(run.metrics, floors, run.split)
    for line in broken:
        click.echo(f"floor broken: {line}", err=True)
    if broken:
        ctx.exit(1)


def show(run: EvalRun) -> None:
    config = run.config
    retrieval = config.get("retrieval", {})
    click.echo(
        f"{run.suite}: {config.get('dataset')}  split {run.split}  mode {retrieval.get('mode')}"
        f" ({retrieval.get('retrievers', retrieval.get('target', '-'))})  k {retrieval.get('k')}"
        f"  commit {config.get('commit')}"
    )
    rows = [(f"all [{run.split}]", run.metrics), *run.groups.items()]
    keys = list(run.metrics) or list(next(iter(run.groups.values()), {}))
    if len(keys) > 6:  # many metrics: one row per metric instead
        names = [name for name, _ in rows]
        click.echo(f"{'':<16}" + "".join(f"  {n:>14}" for n in names))
        for key in keys:
            cells = "".join(f"  {_number(values.get(key)):>14}" for _, values in rows)
            click.echo(f"{key:<16}{cells}")
    else:
        width = max(len(name) for name, _ in rows)
        click.echo(f"{'':<{width}}" + "".join(f"  {key:>10}" for key in keys))
        for name, values in rows:
            click.echo(
                f"{name:<{width}}" + "".join(f"  {_number(values.get(k)):>10}" for k in keys)
            )
    if run.calibration is not None:
        for line in calibration_lines(calibration_view(run.calibration)):
            click.echo(line)
    click.echo("counts: " + ", ".join(f"{k} {v}" for k, v in run.counts.items()))
    click.echo("time: " + ", ".join(f"{k} {v:.1f}s" for k, v in run.seconds.items()))


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
