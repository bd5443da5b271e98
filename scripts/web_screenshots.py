"""Screenshots of the web UI, for readers who will not run it: docs/screenshots/
NAME-{desktop,phone}.png for every page (search, explain, document, graph and its
neighbourhood, evals, status, api)
and each page's empty state (search-empty, search-no-hits, document-missing, graph-empty,
graph-missing, evals-empty, status-empty).

Starts two real servers, one on a scratch brain (this repository's docs/ ingested, a few graph
facts) and one on an empty brain, and drives Debian's Chromium (/usr/bin/chromium) with
Playwright; pngquant, when installed (apt-get install pngquant), shrinks the PNGs for git. The
evals page reads $BRAIN_EVALS_DIR when it is set; otherwise a folder made here: a results log of
real runs in three modes of the BEIR-format MED set in ../shared/datasets/med (`eval beir
--json`; the smoke judged set when that is missing), written as the records `eval run-all`
appends, and the report and plot that `nexusbrain eval compare --output --plot` writes from it.

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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import uvicorn
from playwright.sync_api import Page, sync_playwright

from nexusbrain.api import create_app
from nexusbrain.brain import Brain
from nexusbrain.config import ServerSettings, Settings
from nexusbrain.evals.results_log import (
    QuestionScores,
    RunRecord,
    RunStatus,
    append_records,
    make_run_id,
)

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
QUERY = "how are chunks cut from markdown"
PORT = 8799
SEED = 7


@dataclass(frozen=True)
class Servers:
    full: str  # the scratch brain's server
    empty: str  # the empty brain's
    evals: Path  # the eval files the evals page shows
    no_evals: Path  # a folder without any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        given = os.environ.get("BRAIN_EVALS_DIR")
        evals = Path(given) if given else write_eval_files(folder / "evals")
        with (
            Brain.open(settings=Settings(db=folder / "demo.db")) as brain,
            Brain.open(settings=Settings(db=folder / "empty.db")) as empty,
            serve(brain, PORT) as full,
            serve(empty, PORT + 1) as bare,
        ):
            seed(brain)
            shoot(Servers(full, bare, evals, folder / "no-evals"), args.out)
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
def serve(brain: Brain, port: int) -> Iterator[str]:
    config = uvicorn.Config(
        create_app(brain, ServerSettings(port=port)), port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def evals_from(folder: Path) -> Iterator[None]:
    """The evals page reads $BRAIN_EVALS_DIR per request, in this process."""
    before = os.environ.get("BRAIN_EVALS_DIR")
    os.environ["BRAIN_EVALS_DIR"] = str(folder)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("BRAIN_EVALS_DIR")
        else:
            os.environ["BRAIN_EVALS_DIR"] = before


def shoot(servers: Servers, out: Path) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for size, (width, height) in SIZES.items():
            page = browser.new_page(viewport={"width": width, "height": height})
            for name, visit in PAGES.items():
                visit(page, servers)
                page.wait_for_timeout(300)
                page.screenshot(path=out / f"{name}-{size}.png")
            page.close()
        browser.close()


def search(page: Page, servers: Servers) -> None:
    page.goto(f"{servers.full}/app?q={QUERY}&mode=balanced")
    page.wait_for_selector(".hit")


def explain(page: Page, servers: Servers) -> None:
    search(page, servers)
    page.locator(".explain-toggle").first.click()
    page.wait_for_selector(".doc-explain")
    page.locator(".explain").first.evaluate("e => e.scrollIntoView({block: 'center'})")


def document(page: Page, servers: Servers) -> None:
    search(page, servers)
    page.locator(".hit h2 a").first.click()
    page.wait_for_selector("#span")


def graph(page: Page, servers: Servers) -> None:
    page.goto(f"{servers.full}/app/graph?entity=alice")
    page.wait_for_selector("#network svg")
    page.locator('.rel[data-id] button:has-text("History")').nth(1).click()
    page.wait_for_selector(".history table")


def neighbourhood(page: Page, servers: Servers) -> None:
    page.goto(f"{servers.full}/app/graph?entity=alice")
    page.wait_for_selector("#network svg")
    page.locator("#net-heading").evaluate("e => e.scrollIntoView({block: 'start'})")


def evals(page: Page, servers: Servers) -> None:
    with evals_from(servers.evals):
        page.goto(f"{servers.full}/app/evals")


def status(page: Page, servers: Servers) -> None:
    page.goto(f"{servers.full}/app/status")
    page.wait_for_selector("#stats dt")


def api(page: Page, servers: Servers) -> None:
    page.goto(f"{servers.full}/docs")


def search_empty(page: Page, servers: Servers) -> None:
    page.goto(f"{servers.empty}/app")


def search_no_hits(page: Page, servers: Servers) -> None:
    page.goto(f"{servers.full}/app?q={QUERY}&domain=recipes")
    page.wait_for_selector(".no-hits")


def document_missing(page: Page, servers: Servers) -> None:
    page.goto(f"{servers.full}/app/doc/9999")


def graph_empty(page: Page, servers: Servers) -> None:
    page.goto(f"{servers.full}/app/graph")


def graph_missing(page: Page, servers: Servers) -> None:
    page.goto(f"{servers.full}/app/graph?entity=dave")


def evals_empty(page: Page, servers: Servers) -> None:
    with evals_from(servers.no_evals):
        page.goto(f"{servers.full}/app/evals")


def status_empty(page: Page, servers: Servers) -> None:
    page.goto(f"{servers.empty}/app/status")
    page.wait_for_selector("#stats dt")


PAGES: dict[str, Callable[[Page, Servers], None]] = {
    "search": search,
    "explain": explain,
    "document": document,
    "graph": graph,
    "neighbourhood": neighbourhood,
    "evals": evals,
    "status": status,
    "api": api,
    "search-empty": search_empty,
    "search-no-hits": search_no_hits,
    "document-missing": document_missing,
    "graph-empty": graph_empty,
    "graph-missing": graph_missing,
    "evals-empty": evals_empty,
    "status-empty": status_empty,
}


# The eval files: real runs in three modes, and `eval compare`'s report and plot.

MED = ROOT.parent / "shared" / "datasets" / "med"
SMOKE = ("tests/data/smoke/judged.md", "--corpus", "tests/data/smoke/docs")


def write_eval_files(folder: Path) -> Path:
    folder.mkdir(parents=True)
    log = folder / "eval-results.jsonl"
    append_records(log, [run_record(mode) for mode in MODES])
    command = [
        sys.executable, "-m", "nexusbrain", "eval", "compare", "--results", str(log),
        "--output", str(folder / "compare-report.md"), "--plot", str(folder / "compare-plot.svg"),
        "--seed", str(SEED),
    ]  # fmt: skip
    subprocess.run(command, cwd=ROOT, check=True)
    return folder


def run_record(mode: str) -> RunRecord:
    """One eval run in `mode`, as the record `eval run-all` would log for it."""
    if MED.is_dir():
        suite, data, args = "beir:med", str(MED), ("beir", str(MED), "--split", "test")
    else:
        suite, data, args = "judged:smoke", "tests/data/smoke", ("judged", *SMOKE)
    command = [sys.executable, "-m", "nexusbrain", "eval", *args, "--mode", mode, "--json"]
    done = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True)
    run = json.loads(done.stdout)
    commit = run["config"]["commit"]
    return RunRecord(
        run_id=make_run_id(commit, suite, mode, SEED),
        ran_at=datetime.now(UTC),
        suite=suite,
        mode=mode,
        status=RunStatus.COMPLETED,
        metrics=run["metrics"],
        commit=commit,
        seed=SEED,
        per_question=tuple(QuestionScores(q["id"], q["scores"]) for q in run["per_query"]),
        data=data,
    )


if __name__ == "__main__":
    main()
