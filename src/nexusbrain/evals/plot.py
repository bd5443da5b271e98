"""A picture of the comparison report's confidence intervals (PNG or SVG), for people who would
rather look than read a table. matplotlib is an optional extra: `pip install
'nexusbrain[plots]'`."""

from __future__ import annotations

from pathlib import Path

from nexusbrain.errors import InvalidInput, MissingExtra
from nexusbrain.evals.bootstrap import Verdict
from nexusbrain.evals.compare import Report

COLOURS = {
    Verdict.SIGNIFICANT: "#1b7837",
    Verdict.NOT_SIGNIFICANT: "#e08214",
    Verdict.TIE: "#777777",
}
FORMATS = (".png", ".svg")


def plot_intervals(report: Report, path: Path) -> int:
    """Draw one horizontal 95% interval per comparison, coloured by verdict, with the line at
    0; returns how many were drawn."""
    if path.suffix.lower() not in FORMATS:
        raise InvalidInput(f"--plot {path}: give a .png or .svg file name")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingExtra("plots", "matplotlib") from None
    rows = list(report.comparisons)
    plt.rcParams["svg.hashsalt"] = "nexusbrain"
    figure, axes = plt.subplots(figsize=(9, 1.2 + 0.32 * max(1, len(rows))))
    for y, c in enumerate(reversed(rows)):
        r = c.result
        axes.errorbar(
            r.mean_difference,
            y,
            xerr=[[r.mean_difference - r.low], [r.high - r.mean_difference]],
            fmt="o",
            color=COLOURS[report.verdict(c)],
            capsize=3,
        )
    axes.axvline(0.0, color="black", linewidth=0.8)
    axes.set_yticks(
        range(len(rows)),
        [f"{c.suite} {c.metric}: {c.second} − {c.first}" for c in reversed(rows)],
        fontsize=8,
    )
    axes.set_xlabel("mean per-question difference, 95% percentile interval")
    figure.suptitle(
        f"Paired bootstrap, 95% intervals\ngreen: significant at p < {report.threshold:.4f}"
        " (Bonferroni); orange: not significant after correction; grey: tie",
        fontsize=9,
    )
    figure.tight_layout()
    metadata = {"Date": None} if path.suffix.lower() == ".svg" else {"Software": None}
    figure.savefig(path, metadata=metadata)
    plt.close(figure)
    return len(rows)
