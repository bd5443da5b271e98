"""The flags `nexusbrain eval` commands share, and `Scoring`, what a scored command receives.

A scored command (judged, beir, locomo, known-item) takes the search flags (--mode, --k,
--lexical-only) and the report flags (--metrics, --floor, --json) as one `scoring` argument,
so each command names only its own flags.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

import click

from nexusbrain.cli.eval_render import finish
from nexusbrain.evals.metrics import Metric, parse_floor
from nexusbrain.evals.runner import deepest_cutoff, the_metrics
from nexusbrain.evals.runs import EvalRun
from nexusbrain.evals.targets import SearchRequest
from nexusbrain.records import SearchMode

F = TypeVar("F", bound=Callable[..., Any])
Command = Callable[..., None]
FILE = click.Path(dir_okay=False, path_type=Path)
EXISTING_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
EXISTING_FOLDER = click.Path(exists=True, file_okay=False, path_type=Path)


def parse_floors(values: Sequence[str]) -> list[tuple[Metric, float]]:
    return [parse_floor(v) for v in values]


def _metric_names(values: Sequence[str]) -> list[str]:
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def chosen(defaults: Sequence[str], extra: Sequence[str], floors: Sequence[str]) -> list[Metric]:
    """The default metrics, plus any asked for with --metrics or named by a --floor."""
    names = [*(_metric_names(extra) or defaults), *(m.key for m, _ in parse_floors(floors))]
    return list(the_metrics(names))


@dataclass(frozen=True, slots=True)
class Scoring:
    """How a scored command searches (mode, k, lexical only) and reports (metrics, floors,
    JSON): the values of the flags `scored` adds."""

    mode: str
    k: int
    lexical_only: bool
    metric_names: tuple[str, ...]
    floors: tuple[str, ...]
    as_json: bool

    def metrics(self, defaults: Sequence[str]) -> list[Metric]:
        return chosen(defaults, self.metric_names, self.floors)

    def request(
        self, metrics: Sequence[Metric], *, best_per_document: bool = False
    ) -> SearchRequest:
        """A search deep enough for --k and for every metric's cutoff."""
        return SearchRequest(
            max(self.k, deepest_cutoff(metrics)), self.mode, best_per_document=best_per_document
        )

    def finish(self, ctx: click.Context, run: EvalRun) -> None:
        finish(ctx, run, parse_floors(self.floors), self.as_json)


def mode_option(help: str) -> Callable[[F], F]:
    return click.option(
        "--mode",
        type=click.Choice([m.value for m in SearchMode]),
        default=SearchMode.BALANCED.value,
        show_default=True,
        help=help,
    )


def json_option(help: str = "Print JSON for scripts.") -> Callable[[F], F]:
    return click.option("--json", "as_json", is_flag=True, help=help)


def output_option(help: str | None = None, *, required: bool = False) -> Callable[[F], F]:
    return click.option(
        "--output",
        "-o",
        required=required,
        type=FILE,
        help=help,
    )


def floor_option(help: str) -> Callable[[F], F]:
    return click.option("--floor", "floors", multiple=True, metavar="METRIC=VALUE", help=help)


def scoring_options(func: F) -> F:
    """--metrics, --floor and --json."""
    func = json_option()(func)
    func = floor_option("Exit 1 if METRIC falls below VALUE, e.g. r5=0.85 (repeat for more).")(func)
    return click.option(
        "--metrics",
        "metric_names",
        multiple=True,
        metavar="M,M",
        help="Metrics to report instead of the defaults, e.g. ndcg@10,recall@100,mrr.",
    )(func)


def scored(k: int) -> Callable[[Command], Command]:
    """Add the search flags (--k defaulting to `k`) and the report flags, and hand the command
    their values as one keyword argument, `scoring`."""

    def decorate(func: Command) -> Command:
        @functools.wraps(func)
        def command(*args: Any, **options: Any) -> None:
            scoring = Scoring(**{f.name: options.pop(f.name) for f in fields(Scoring)})
            func(*args, scoring=scoring, **options)

        command = scoring_options(command)
        command = click.option(
            "--lexical-only",
            is_flag=True,
            help="BM25 alone (no embeddings, no feedback): the lexical baseline.",
        )(command)
        command = click.option("--k", default=k, show_default=True, help="Results per query.")(
            command
        )
        return mode_option("Search mode.")(command)

    return decorate
