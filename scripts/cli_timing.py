"""Time the command line as an agent feels it: the whole process, median of N runs.

    python scripts/cli_timing.py --corpus /tmp/scifact-md --db /tmp/scifact.db \
        [--scifact /work/shared/datasets/scifact/corpus.jsonl] [--qmd qmd] [--idle 60]

Measures, in one run on one machine:
- `nexusbrain --help`;
- `nexusbrain search Q -k 10` with no server (in process);
- with no server started by hand (BRAIN_AUTOSERVE on): the first call, which starts one in the
  background and answers in process, and calls 2 to 11 right after it (through the server once
  it is up), from a cold start each round (--autoserve-rounds);
- the same with `nexusbrain serve` up for the database (one HTTP request);
- each paired with QMD's `qmd search Q -n 10` when --qmd names it (runs interleaved, so that
  both see the same machine load; QMD's index must already hold the corpus: `qmd collection
  add DIR --name NAME`). QMD 2.8.3 from npm needs Node 22 or bun: under Node 20 its search
  crashes, so give --qmd "bun $(npm root -g)/@tobilu/qmd/dist/cli/qmd.js";
- --watch: `serve --watch CORPUS`, a file edited, the wall time until a search over HTTP finds
  the new text (median of N edits), and the CPU the server uses over --idle seconds of quiet.

With --scifact, the corpus folder is first written from SciFact's corpus.jsonl, one markdown
file per document (`# title`, blank line, text), and ingested. Bytecode is compiled first, as a
pip install does (PYTHONDONTWRITEBYTECODE would otherwise make every run compile the package).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

from nexusbrain import discovery

ROOT = Path(__file__).resolve().parents[1]
NEXUSBRAIN = str(Path(sys.executable).with_name("nexusbrain"))
QUERY = "cancer cells immune response"


def main() -> None:
    args = _arguments()
    compileall.compile_dir(ROOT / "src" / "nexusbrain", quiet=1)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if args.scifact:
        _write_corpus(args.scifact, args.corpus)
        _run([NEXUSBRAIN, "--local", "--db", str(args.db), "ingest-dir", str(args.corpus)], env)
    report: dict[str, Any] = {"load_before": os.getloadavg(), "runs": args.runs, "query": QUERY}
    ours = [NEXUSBRAIN, "--db", str(args.db), "search", QUERY, "-k", "10"]
    qmd = [*shlex.split(args.qmd), "search", QUERY, "-n", "10"] if args.qmd else None
    report["help"] = _timed([[NEXUSBRAIN, "--help"]], args.runs, env)[0]
    report["no_server"] = _paired([*ours[:1], "--local", *ours[1:]], qmd, args.runs, env)
    report["autoserve"] = _autoserved(args, ours, qmd, env)
    server = _serve(args, env)
    try:
        report["server"] = _paired(ours, qmd, args.runs, env)
        report["watch"] = _watch(args, server[1])
        report["idle_cpu_percent"] = _idle(server[0], args.idle)
    finally:
        server[0].send_signal(signal.SIGTERM)
        server[0].communicate(timeout=60)
    report["load_after"] = os.getloadavg()
    _print(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="folder of markdown files")
    parser.add_argument("--db", type=Path, required=True, help="the brain (made if missing)")
    parser.add_argument("--scifact", type=Path, help="SciFact corpus.jsonl: write the corpus")
    parser.add_argument(
        "--qmd", help="QMD's command (split as a shell would), to time `qmd search` beside ours"
    )
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument(
        "--autoserve-rounds", type=int, default=3, help="cold starts of the background server"
    )
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of idle to measure")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    return parser.parse_args()


def _write_corpus(source: Path, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with source.open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            text = f"# {doc['title']}\n\n{doc['text']}\n"
            (folder / f"{doc['_id']}.md").write_text(text, encoding="utf-8")


def _run(command: Sequence[str], env: dict[str, str]) -> None:
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)


def _once(command: Sequence[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1000


def _timed(commands: Sequence[Sequence[str]], runs: int, env: dict[str, str]) -> list[float]:
    """Median wall ms of each command, the commands interleaved (one warm-up run each)."""
    samples: list[list[float]] = [[] for _ in commands]
    for command in commands:
        _once(command, env)
    for i in range(runs):
        order = list(enumerate(commands))
        for n, command in order if i % 2 == 0 else reversed(order):
            samples[n].append(_once(command, env))
    return [round(statistics.median(s), 1) for s in samples]


def _paired(
    ours: Sequence[str], qmd: Sequence[str] | None, runs: int, env: dict[str, str]
) -> dict[str, float]:
    commands = [ours, qmd] if qmd else [ours]
    medians = _timed(commands, runs, env)
    return {"nexusbrain": medians[0], **({"qmd": medians[1]} if qmd else {})}


def _autoserved(
    args: argparse.Namespace, ours: list[str], qmd: list[str] | None, env: dict[str, str]
) -> dict[str, Any]:
    """Rounds of 11 calls in a row with no server at first: the first starts one in the
    background. Each call is paired with one of QMD's (the order alternating); the server is
    stopped after each round."""
    on = env | {"BRAIN_AUTOSERVE": "1"}
    firsts: list[float] = []
    later: list[float] = []
    theirs: list[float] = []
    for _ in range(args.autoserve_rounds):
        _stop_background(args.db)
        for n in range(11):
            pair = [(ours, on), (qmd, env)] if n % 2 == 0 else [(qmd, env), (ours, on)]
            for command, where in pair:
                if command is None:
                    continue
                took = _once(command, where)
                (theirs if command is qmd else firsts if n == 0 else later).append(took)
        _stop_background(args.db)
    return {
        "first_ms": [round(x, 1) for x in firsts],
        "first_median": round(statistics.median(firsts), 1),
        "calls_2_to_11_median": round(statistics.median(later), 1),
        **({"qmd_median": round(statistics.median(theirs), 1)} if theirs else {}),
    }


def _stop_background(db: Path) -> None:
    """Stop the server running for `db` (the background one), if any, and wait for it."""
    found = discovery.find(db)
    if found is None:
        return
    os.kill(found.pid, signal.SIGTERM)
    psutil.Process(found.pid).wait(timeout=60)


def _serve(args: argparse.Namespace, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    process = subprocess.Popen(
        [NEXUSBRAIN, "--db", str(args.db), "serve", "--port", "0", "--watch", str(args.corpus)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    first = process.stdout.readline().decode()
    url = first.rsplit(" at ", 1)[1].strip()
    deadline = time.monotonic() + 120
    while "watching" not in process.stdout.readline().decode():
        if time.monotonic() > deadline:
            raise RuntimeError("serve --watch did not start")
    time.sleep(2)  # the watch's first sync
    return process, url


def _search(url: str, words: str) -> list[dict[str, Any]]:
    query = urllib.parse.urlencode({"q": words, "k": 5, "mode": "conservative"})
    with urllib.request.urlopen(f"{url}/search?{query}", timeout=30) as answer:
        hits: list[dict[str, Any]] = json.load(answer)["hits"]
        return hits


def _watch(args: argparse.Namespace, url: str) -> dict[str, float]:
    """Edit a file, then search until the new text is found: the wall time, median of N."""
    files = sorted(args.corpus.glob("*.md"))[: args.runs]
    waits = []
    for n, path in enumerate(files):
        original = path.read_text(encoding="utf-8")
        word = f"zqxwatchword{n}x{int(time.time())}"
        started = time.perf_counter()
        path.write_text(original + f"\n{word}\n", encoding="utf-8")
        while not any(word in hit["text"] for hit in _search(url, word)):
            if time.perf_counter() - started > 30:
                raise RuntimeError(f"{path} was not searchable within 30 s")
            time.sleep(0.01)
        waits.append((time.perf_counter() - started) * 1000)
        path.write_text(original, encoding="utf-8")
        time.sleep(0.5)
    return {"median_ms": round(statistics.median(waits), 1), "max_ms": round(max(waits), 1)}


def _idle(process: subprocess.Popen[bytes], seconds: float) -> float:
    time.sleep(2)  # the last edit's sync
    watched = psutil.Process(process.pid)
    before = watched.cpu_times()
    time.sleep(seconds)
    after = watched.cpu_times()
    used = (after.user - before.user) + (after.system - before.system)
    return round(100 * used / seconds, 3)


def _print(report: dict[str, Any]) -> None:
    load = report["load_before"]
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'command':<44} {'median wall ms':>14}")
    print(f"{'nexusbrain --help':<44} {report['help']:>14}")
    for key, label in (("no_server", "no server"), ("server", "server up")):
        row = report[key]
        print(f"{'nexusbrain search (' + label + ')':<44} {row['nexusbrain']:>14}")
        if "qmd" in row:
            print(f"{'qmd search (same run, interleaved)':<44} {row['qmd']:>14}")
    auto = report["autoserve"]
    print(f"{'nexusbrain search, background server: call 1':<44} {auto['first_median']:>14}")
    print(f"{'  calls 2 to 11 (median)':<44} {auto['calls_2_to_11_median']:>14}")
    if "qmd_median" in auto:
        print(f"{'  qmd search (same run, paired)':<44} {auto['qmd_median']:>14}")
    watch = report["watch"]
    print(f"watch: edit to searchable {watch['median_ms']} ms median, {watch['max_ms']} ms max")
    print(f"idle CPU of serve --watch: {report['idle_cpu_percent']}%")
    load = report["load_after"]
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
