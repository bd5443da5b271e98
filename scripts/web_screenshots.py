"""Screenshots of the web UI, for readers who will not run it: docs/screenshots/
{search,explain,document,graph,evals,status}-{desktop,phone}.png.

Starts a real server on a scratch brain (this repository's docs/ ingested, a few graph facts)
and drives Debian's Chromium (/usr/bin/chromium) with Playwright; pngquant, when installed
(apt-get install pngquant), shrinks the PNGs for git. The evals page reads
$BRAIN_EVALS_DIR when it is set; otherwise a stand-in made here from real runs of the smoke
judged set in three modes (per-query bootstrap intervals, seed 7), in the shape `eval compare`
writes.

    .venv/bin/python scripts/web_screenshots.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np
import uvicorn
from playwright.sync_api import Page, sync_playwright

from nexusbrain.api import create_app
from nexusbrain.brain import Brain
from nexusbrain.config import ServerSettings, Settings

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SIZES = {"desktop": (1280, 800), "phone": (390, 844)}
MODES = ("conservative", "balanced", "tokenmax")
METRICS = ("recall@5", "recall@10", "mrr", "ndcg@10")
QUERY = "how are chunks cut from markdown"
PORT = 8799


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        if not os.environ.get("BRAIN_EVALS_DIR"):
            os.environ["BRAIN_EVALS_DIR"] = str(write_eval_fixture(folder / "evals"))
        with Brain.open(settings=Settings(db=folder / "demo.db")) as brain, serve(brain) as url:
            seed(brain)
            shoot(url, args.out)
    if shutil.which("pngquant"):
        names = [str(p) for p in args.out.glob("*.png")]
        subprocess.run(["pngquant", "--force", "--ext", ".png", "--quality", "70-95", *names])
    for path in sorted(args.out.glob("*.png")):
        print(f"{path.relative_to(ROOT)}  {path.stat().st_size // 1024} KB")


def seed(brain: Brain) -> None:
    brain.ingest_dir(ROOT / "docs", domain="docs")
    day = lambda text: datetime.fromisoformat(text).replace(tzinfo=UTC)  # noqa: E731
    facts = [
        ("alice", "works_at", "Acme", "2019-01-01", None),
        ("alice", "manages", "bob", "2020-01-01", "2023-01-01"),
        ("alice", "manages", "bob", "2021-01-01", "2025-01-01"),
        ("alice", "works_at", "Globex", "2023-06-01", None),
        ("alice", "lives_in", "Lisbon", "2021-04-01", None),
        ("carol", "manages", "alice", "2022-01-01", None),
        ("bob", "works_at", "Acme", "2018-03-01", None),
        ("Globex", "located_in", "Lisbon", None, None),
        ("Acme", "located_in", "Berlin", None, None),
    ]
    for subject, kind, target, valid, invalid in facts:
        brain.graph.relate(
            subject,
            kind,
            target,
            valid_at=day(valid) if valid else None,
            invalid_at=day(invalid) if invalid else None,
            source="web_screenshots.py",
        )


@contextmanager
def serve(brain: Brain) -> Iterator[str]:
    config = uvicorn.Config(
        create_app(brain, ServerSettings(port=PORT)), port=PORT, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{PORT}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def shoot(url: str, out: Path) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for size, (width, height) in SIZES.items():
            page = browser.new_page(viewport={"width": width, "height": height})
            for name, visit in PAGES.items():
                visit(page, url)
                page.wait_for_timeout(300)
                page.screenshot(path=out / f"{name}-{size}.png")
            page.close()
        browser.close()


def search(page: Page, url: str) -> None:
    page.goto(f"{url}/app?q={QUERY}&mode=balanced")
    page.wait_for_selector(".hit")


def explain(page: Page, url: str) -> None:
    search(page, url)
    page.locator(".explain-toggle").first.click()
    page.wait_for_selector(".doc-explain")
    page.locator(".hit").first.scroll_into_view_if_needed()
    page.locator(".explain").first.evaluate("e => e.scrollIntoView({block: 'center'})")


def document(page: Page, url: str) -> None:
    search(page, url)
    page.locator(".hit h2 a").first.click()
    page.wait_for_selector("#span")


def graph(page: Page, url: str) -> None:
    page.goto(f"{url}/app/graph?entity=alice")
    page.wait_for_selector("#network svg")
    page.locator('.rel[data-id] button:has-text("History")').nth(1).click()
    page.wait_for_selector(".history table")


def evals(page: Page, url: str) -> None:
    page.goto(f"{url}/app/evals")


def status(page: Page, url: str) -> None:
    page.goto(f"{url}/app/status")
    page.wait_for_selector("#stats dt")


PAGES = {
    "search": search,
    "explain": explain,
    "document": document,
    "graph": graph,
    "evals": evals,
    "status": status,
}


# A stand-in for `eval compare`'s files, from real runs of the smoke judged set.


def write_eval_fixture(folder: Path) -> Path:
    folder.mkdir(parents=True)
    runs = {mode: smoke_run(mode) for mode in MODES}
    rng = np.random.default_rng(7)
    intervals = {mode: intervals_of(run, rng) for mode, run in runs.items()}
    with (folder / "eval-results.jsonl").open("w", encoding="utf-8") as log:
        for n, (mode, run) in enumerate(runs.items(), start=1):
            line = {
                "run_id": f"{date.today():%Y%m%d}-{n:03d}",
                "ran_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "suite": "judged:smoke",
                "mode": mode,
                "commit": run["config"]["commit"],
                "seed": 7,
                "status": "ok",
                "metrics": run["metrics"],
            }
            log.write(json.dumps(line) + "\n")
    (folder / "compare-report.md").write_text(report(runs, intervals), encoding="utf-8")
    (folder / "compare-plot.svg").write_text(plot(intervals), encoding="utf-8")
    return folder


def smoke_run(mode: str) -> dict[str, object]:
    command = [
        sys.executable, "-m", "nexusbrain", "eval", "judged", "tests/data/smoke/judged.md",
        "--corpus", "tests/data/smoke/docs", "--split", "dev", "--mode", mode, "--json",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def intervals_of(
    run: dict[str, object], rng: np.random.Generator
) -> dict[str, tuple[float, float, float]]:
    per_query = run["per_query"]
    assert isinstance(per_query, list)
    out = {}
    for metric in METRICS:
        scores = np.array([q["scores"][metric] for q in per_query])
        means = rng.choice(scores, (1000, len(scores))).mean(axis=1)
        low, high = np.percentile(means, [2.5, 97.5])
        out[metric] = (float(scores.mean()), float(low), float(high))
    return out


def report(runs: dict[str, dict[str, object]], intervals: dict[str, dict[str, tuple]]) -> str:
    count = len(runs[MODES[0]]["per_query"])  # type: ignore[arg-type]
    lines = [
        "# Search Mode Comparison",
        "",
        f"Smoke judged set (`tests/data/smoke`), dev split, {count} queries. Each cell is the",
        "mean with its 95% percentile bootstrap interval (1,000 resamples, seed 7).",
        "",
        "| metric | " + " | ".join(MODES) + " |",
        "| --- | " + " | ".join("---:" for _ in MODES) + " |",
    ]
    for metric in METRICS:
        cells = ["{:.3f} [{:.3f}, {:.3f}]".format(*intervals[mode][metric]) for mode in MODES]
        lines.append(f"| {metric} | " + " | ".join(cells) + " |")
    lines += ["", "Intervals that overlap are not a measured difference."]
    return "\n".join(lines) + "\n"


def plot(intervals: dict[str, dict[str, tuple[float, float, float]]]) -> str:
    colours = {"conservative": "#8250df", "balanced": "#0b57d0", "tokenmax": "#1a7f37"}
    width, left, right, row = 640, 90, 20, 54
    height = 40 + row * len(METRICS) + 30
    x = lambda v: left + (width - left - right) * (v - 0.5) / 0.5  # noqa: E731
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="#fff"/>',
    ]
    for tick in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0):
        parts.append(
            f'<line x1="{x(tick)}" x2="{x(tick)}" y1="30" y2="{height - 30}" stroke="#ddd"/>'
            f'<text x="{x(tick)}" y="{height - 12}" text-anchor="middle">{tick:.1f}</text>'
        )
    for i, metric in enumerate(METRICS):
        top = 40 + row * i
        parts.append(f'<text x="8" y="{top + 20}">{metric}</text>')
        for j, mode in enumerate(MODES):
            mean, low, high = intervals[mode][metric]
            y = top + 8 + 14 * j
            colour = colours[mode]
            parts.append(
                f'<line x1="{x(low)}" x2="{x(high)}" y1="{y}" y2="{y}" stroke="{colour}" '
                f'stroke-width="2"/><circle cx="{x(mean)}" cy="{y}" r="4" fill="{colour}"/>'
            )
    for j, mode in enumerate(MODES):
        parts.append(
            f'<circle cx="{left + 130 * j}" cy="16" r="4" fill="{colours[mode]}"/>'
            f'<text x="{left + 130 * j + 8}" y="20">{mode}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


if __name__ == "__main__":
    main()
