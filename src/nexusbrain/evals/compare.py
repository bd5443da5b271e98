"""`nexusbrain eval compare`: the search-mode comparison report, in markdown (pure).

Given the runs of a results log, the report takes the latest run of each suite, mode and
models and gives, per suite: the runs (mode, status, run id, time), each metric per mode to 4
decimals with a plain-English reading, the paired bootstrap of every pair of modes on every
metric (see `evals.bootstrap`), Bonferroni-corrected over every comparison in the report, the
operational metrics side by side, and the cost-versus-quality trade-off in one sentence.

A suite whose runs used different models (`eval run-all --embedder X --reranker Y`) names each
run by its mode and its models ("balanced · edge-… + cosine:…") and compares those as it
compares modes. Only runs on the same suite, data and commit are paired; any other pair is
named with what differs and left out of the statistics. Nothing here reads a clock or draws
unseeded: the same log and seed give a byte-identical report.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from nexusbrain.evals.bootstrap import (
    ALPHA,
    DEFAULT_RESAMPLES,
    PairedBootstrap,
    Verdict,
    bonferroni_threshold,
    comparison_seed,
    paired_bootstrap,
)
from nexusbrain.evals.plain import sentence
from nexusbrain.evals.results_log import NO_MODE, RunRecord, RunStatus, latest_by_models
from nexusbrain.records import SearchMode
from nexusbrain.retrieval.confidence import Band

SUITE_ORDER = ("longmemeval", "locomo", "beir", "replay", "brainbench")
OPERATIONAL = ("avg_tokens", "cost_per_query_usd", "p99_latency_ms")


@dataclass(frozen=True, slots=True)
class Comparison:
    """One paired comparison: `second` minus `first` on `metric`."""

    suite: str
    metric: str
    first: str
    second: str
    result: PairedBootstrap
    unmatched: int = 0  # questions scored by only one of the two runs


@dataclass(frozen=True, slots=True)
class Report:
    markdown: str
    comparisons: tuple[Comparison, ...]
    threshold: float

    def verdict(self, comparison: Comparison) -> Verdict:
        return comparison.result.verdict(self.threshold)


@dataclass(frozen=True, slots=True)
class _Suite:
    name: str
    runs: tuple[RunRecord, ...]  # latest per mode, in mode order
    comparisons: tuple[Comparison, ...]
    unpaired: tuple[str, ...]  # why a pair of modes is not compared


MODELS_SEP = " · "  # between a run's mode and its models, when a suite's runs differ in them


def mode_order(mode: str) -> tuple[int, str]:
    known = [m.value for m in SearchMode]
    bare = mode.split(MODELS_SEP, 1)[0]
    if bare in known:
        return known.index(bare), mode
    return (len(known) + (1 if bare == NO_MODE else 0), mode)


def suite_order(suite: str) -> tuple[int, str]:
    return (SUITE_ORDER.index(suite) if suite in SUITE_ORDER else len(SUITE_ORDER), suite)


def compare(
    records: Sequence[RunRecord],
    *,
    seed: int = 42,
    resamples: int = DEFAULT_RESAMPLES,
    suites: Collection[str] | None = None,
    source: str = "the results log",
    problems: Sequence[str] = (),
) -> Report:
    """The report over the latest run of each suite, mode and models in `records`."""
    chosen = latest_by_models(r for r in records if suites is None or r.suite in suites)
    names = sorted({suite for suite, _, _ in chosen}, key=suite_order)
    built = [_suite(name, chosen, seed, resamples) for name in names]
    every = tuple(c for s in built for c in s.comparisons)
    threshold = bonferroni_threshold(len(every))
    lines = _header(source, seed, resamples, len(every), threshold, problems)
    for suite in built:
        lines += _section(suite, threshold)
    if not built:
        lines += ["No runs found: run `nexusbrain eval run-all` first.", ""]
    return Report("\n".join(lines).rstrip("\n") + "\n", every, threshold)


def _suite(
    name: str, chosen: Mapping[tuple[str, str, str], RunRecord], seed: int, n: int
) -> _Suite:
    runs = _named([r for (s, _, _), r in chosen.items() if s == name])
    runs.sort(key=lambda r: mode_order(r.mode))
    scored = [r for r in runs if r.status is RunStatus.COMPLETED and r.per_question]
    comparisons: list[Comparison] = []
    unpaired: list[str] = []
    for i, first in enumerate(scored):
        for second in scored[i + 1 :]:
            mismatch = _mismatch(first, second)
            if mismatch:
                unpaired.append(f"{first.mode} and {second.mode} are not paired: {mismatch}.")
                continue
            comparisons += _pair(name, first, second, seed, n)
    return _Suite(name, tuple(runs), tuple(comparisons), tuple(unpaired))


def _named(runs: list[RunRecord]) -> list[RunRecord]:
    """The runs, each named by its mode and, when they differ in models, its models too."""
    if len({r.models_label for r in runs}) < 2:
        return runs
    return [replace(r, mode=f"{r.mode}{MODELS_SEP}{r.models_label}") for r in runs]


def _mismatch(a: RunRecord, b: RunRecord) -> str:
    """Why two runs may not be paired ("" when they may)."""
    reasons = []
    if a.commit != b.commit:
        reasons.append(f"commit {a.commit} vs {b.commit}")
    data_a, data_b = a.data_fingerprint or a.data, b.data_fingerprint or b.data
    if data_a is None or data_b is None:
        reasons.append("data not recorded")
    elif data_a != data_b:
        reasons.append(f"data {_data(a)} vs {_data(b)}")
    return "; ".join(reasons)


def _data(record: RunRecord) -> str:
    if record.data_fingerprint:
        return f"{record.data} (sha256 {record.data_fingerprint[:12]})"
    return str(record.data)


def _pair(suite: str, a: RunRecord, b: RunRecord, seed: int, resamples: int) -> list[Comparison]:
    left = {q.question_id: q.metrics for q in a.per_question}
    right = {q.question_id: q.metrics for q in b.per_question}
    shared = [qid for qid in left if qid in right]
    unmatched = len(set(left) ^ set(right))
    out = []
    for metric in _paired_metrics(a, b):
        ids = [q for q in shared if metric in left[q] and metric in right[q]]
        if not ids:
            continue
        result = paired_bootstrap(
            [left[q][metric] for q in ids],
            [right[q][metric] for q in ids],
            seed=comparison_seed(seed, suite, metric, a.mode, b.mode),
            resamples=resamples,
        )
        out.append(Comparison(suite, metric, a.mode, b.mode, result, unmatched))
    return out


def _paired_metrics(a: RunRecord, b: RunRecord) -> list[str]:
    """Metrics with per-question scores in both runs, in the first run's order."""
    names_a = dict.fromkeys(m for q in a.per_question for m in q.metrics)
    names_b = {m for q in b.per_question for m in q.metrics}
    ordered = [m for m in a.metrics if m in names_a] + [m for m in names_a if m not in a.metrics]
    return [m for m in ordered if m in names_b]


def _header(
    source: str,
    seed: int,
    resamples: int,
    comparisons: int,
    threshold: float,
    problems: Sequence[str],
) -> list[str]:
    lines = [
        "# Search Mode Comparison",
        "",
        f"Source: `{source}`, the latest run of each suite and mode.",
        "",
        f"Statistics: paired bootstrap over questions, {resamples:,} resamples with "
        f"replacement (each question's pair kept together), seed {seed}; the mean "
        "difference (second mode minus first), its 95% percentile confidence interval, and a "
        "two-sided p-value (studentized bootstrap test, null imposed by shifting).",
        "",
        f"Bonferroni: {comparisons} comparisons in this report; corrected threshold "
        f"{ALPHA}/{comparisons} = {threshold:.4f}."
        if comparisons
        else "Bonferroni: no comparisons in this report.",
        "",
        f"Verdicts: tie when the interval holds 0; significant when p < {threshold:.4f}; "
        "otherwise not significant after correction.",
        "",
    ]
    if problems:
        lines += ["Skipped log lines:", "", *(f"- {p}" for p in problems), ""]
    return lines


def _section(suite: _Suite, threshold: float) -> list[str]:
    lines = [
        f"## {suite.name}",
        "",
        "| mode | status | run id | ran at |",
        "| --- | --- | --- | --- |",
    ]
    for run in suite.runs:
        status = run.status.value + (f" ({run.reason})" if run.reason else "")
        lines.append(f"| {run.mode} | {status} | {run.run_id} | {_time(run)} |")
    lines.append("")
    lines += _provenance(suite.runs)
    done = [r for r in suite.runs if r.status is RunStatus.COMPLETED and r.metrics]
    if not done:
        return [*lines, "No completed run with metrics.", ""]
    lines += _metric_table(suite.name, done)
    lines += _bootstrap_table(suite, threshold)
    lines += _operational(done)
    lines += _calibration(done)
    lines += [_tradeoff(suite, done, threshold), ""]
    return lines


def _time(run: RunRecord) -> str:
    return run.ran_at.strftime("%Y-%m-%d %H:%M:%S UTC")


def _provenance(runs: Sequence[RunRecord]) -> list[str]:
    seen = dict.fromkeys(
        f"data {_data(r)}, commit {r.commit}" for r in runs if r.status is RunStatus.COMPLETED
    )
    return [f"Runs on {line}." for line in seen] + ([""] if seen else [])


def _metric_table(suite: str, runs: Sequence[RunRecord]) -> list[str]:
    metrics = list(dict.fromkeys(m for r in runs for m in r.metrics))
    lines = [
        "### Metrics",
        "",
        "| metric | " + " | ".join(r.mode for r in runs) + " |",
        "| --- |" + " ---: |" * len(runs),
    ]
    for metric in metrics:
        cells = " | ".join(_four(r.metrics.get(metric)) for r in runs)
        lines.append(f"| {metric} | {cells} |")
    lines.append("")
    base = runs[0]
    for metric in metrics:
        others = [r for r in runs[1:] if metric in r.metrics and metric in base.metrics]
        gaps = [r.metrics[metric] - base.metrics[metric] for r in others]
        if not others:
            continue
        if all(abs(gap) < 5e-5 for gap in gaps):
            readings = [f"every mode scores the same on {metric}"]
        else:
            readings = [
                sentence(metric, suite, r.mode, base.mode, gap)
                for r, gap in zip(others, gaps, strict=True)
            ]
        lines.append(f"- {metric}. Plain English: " + "; ".join(readings) + ".")
    if len(runs) == 1:
        lines.append(f"Plain English: one run ({base.mode}); there is nothing to compare.")
    lines.append("")
    return lines


def _four(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _bootstrap_table(suite: _Suite, threshold: float) -> list[str]:
    lines = ["### Paired bootstrap", ""]
    lines += [f"- {reason}" for reason in suite.unpaired]
    if suite.unpaired:
        lines.append("")
    if not suite.comparisons:
        modes = {r.mode for r in suite.runs}
        why = "one mode only" if len(modes) < 2 else "no pair of runs with per-question scores"
        return [*lines, f"No comparisons: {why}.", ""]
    lines += [
        "| metric | comparison | questions | mean difference | 95% CI | p-value | verdict |",
        "| --- | --- | ---: | ---: | --- | ---: | --- |",
    ]
    for c in suite.comparisons:
        r = c.result
        lines.append(
            f"| {c.metric} | {c.second} − {c.first} | {r.n} | {r.mean_difference:+.4f} | "
            f"[{r.low:+.4f}, {r.high:+.4f}] | {_p(r.p_value)} | {r.verdict(threshold).value} |"
        )
    unmatched = {(c.first, c.second): c.unmatched for c in suite.comparisons if c.unmatched}
    for (first, second), count in unmatched.items():
        lines.append(f"\n{first} and {second}: {count} questions scored by one run only, left out.")
    lines.append("")
    return lines


def _p(value: float) -> str:
    return f"{value:.4f}" if value >= 0.0001 else "<0.0001"


def _operational(runs: Sequence[RunRecord]) -> list[str]:
    lines = [
        "### Operational",
        "",
        "| mode | " + " | ".join(OPERATIONAL) + " |",
        "| --- |" + " ---: |" * len(OPERATIONAL),
    ]
    for r in runs:
        cells = [
            _fixed(r.avg_tokens, 1),
            _fixed(r.cost_per_query_usd, 6),
            _fixed(r.p99_latency_ms, 1),
        ]
        lines.append(f"| {r.mode} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _calibration(runs: Sequence[RunRecord]) -> list[str]:
    """Each mode's calibration of its confidence, when its run recorded one
    (evals/calibration.py; "good match" precision: the share of those result sets with a
    relevant hit in the top 5; "no good match": the share without one)."""
    found = [(r, r.details["calibration"]) for r in runs if "calibration" in r.details]
    if not found:
        return []
    lines = [
        "### Calibration of the confidence",
        "",
        "| mode | ECE | mean confidence | relevant in top 5 | good match: n, precision "
        "| no good match: n, precision | nothing returned |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run, view in found:
        bands = view.get("bands", {})
        good, none = bands.get(Band.GOOD.value), bands.get(Band.NONE.value)
        share = view["with_relevant_in_top5"] / view["results"] if view["results"] else None
        lines.append(
            f"| {run.mode} | {view['ece']:.4f} | {view['mean_confidence']:.4f} "
            f"| {_fixed(share, 4)} "
            f"| {_band_cell(good, view.get('good_match_precision'))} "
            f"| {_band_cell(none, view.get('no_match_precision'))} | {view.get('empty', 0)} |"
        )
    return [
        *lines,
        "",
        f"ECE over {found[0][1]['bins']} equal-width bins of the confidence; the label is a "
        "relevant hit among the first 5.",
        "",
    ]


def _band_cell(count: Mapping[str, int] | None, precision: float | None) -> str:
    return "0" if not count else f"{count['results']}, {_fixed(precision, 4)}"


def _fixed(value: float | None, places: int) -> str:
    return "-" if value is None else f"{value:.{places}f}"


def _tradeoff(suite: _Suite, runs: Sequence[RunRecord], threshold: float) -> str:
    """One sentence: what the best mode on the first metric costs over the cheapest one."""
    if len(runs) < 2:
        return "Trade-off: one mode only."
    metric = next(iter(runs[0].metrics))
    scored = [r for r in runs if metric in r.metrics]
    best = max(scored, key=lambda r: (r.metrics[metric], -mode_order(r.mode)[0]))
    cheap = min(runs, key=lambda r: (_cost(r), mode_order(r.mode)))
    local = "" if any(r.cost_per_query_usd for r in runs) else " (local compute, no answers)"
    if best.mode == cheap.mode:
        return (
            f"Trade-off: none to make on {metric}: {best.mode} scores highest "
            f"({best.metrics[metric]:.4f}) and is also the cheapest, at {_spend(best)}{local}."
        )
    gain = best.metrics[metric] - cheap.metrics.get(metric, 0.0)
    verdict = _verdict_of(suite, metric, cheap.mode, best.mode, threshold)
    return (
        f"Trade-off: {best.mode} scores {gain:+.4f} {metric} over {cheap.mode} ({verdict}) "
        f"for {_spend(best)}, against {_spend(cheap)}{local}."
    )


def _cost(run: RunRecord) -> tuple[float, float]:
    return (run.cost_per_query_usd or 0.0, run.avg_tokens or 0.0)


def _spend(run: RunRecord) -> str:
    cost = f"${run.cost_per_query_usd or 0.0:.6f} per query"
    return cost if run.avg_tokens is None else f"{run.avg_tokens:.0f} context tokens and {cost}"


def _verdict_of(suite: _Suite, metric: str, a: str, b: str, threshold: float) -> str:
    for c in suite.comparisons:
        if c.metric == metric and {c.first, c.second} == {a, b}:
            return c.result.verdict(threshold).value
    return "not compared"
