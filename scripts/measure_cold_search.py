"""A cold search in process, for two source trees or more, interleaved: the CPU (user + system)
and the wall time of the whole `nexusbrain --local search` process, median of N runs.

    python scripts/measure_cold_search.py --db /tmp/scifact.db --tree A/src --tree B/src \
        [--runs 10] [--query "cancer cells immune response"]

CPU time is the figure to compare on a busy machine: the wall time of a process waits for the
cores other jobs hold, its CPU time much less. Each tree's bytecode is compiled first (as a pip
install does), each runs once untimed (the page cache), then the trees alternate, the order
reversed every other run.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--tree", action="append", required=True, help="a src folder")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--query", default="cancer cells immune response")
    args = parser.parse_args()
    command = [sys.executable, "-m", "nexusbrain", "--local", "--db", args.db]
    command += ["search", args.query, "-k", "10"]
    for tree in args.tree:
        compileall.compile_dir(tree, quiet=1)
    cpu: dict[str, list[float]] = {tree: [] for tree in args.tree}
    wall: dict[str, list[float]] = {tree: [] for tree in args.tree}
    for run in range(args.runs + 1):
        for tree in args.tree if run % 2 == 0 else args.tree[::-1]:
            used, took = _once(command, tree)
            if run:  # the first pass warms each tree
                cpu[tree].append(used)
                wall[tree].append(took)
    for tree in args.tree:
        print(
            f"{tree}: CPU {statistics.median(cpu[tree]):.1f} ms, "
            f"wall {statistics.median(wall[tree]):.1f} ms (median of {args.runs})"
        )


def _once(command: list[str], tree: str) -> tuple[float, float]:
    """The CPU and wall milliseconds of the command run from `tree`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env |= {"PYTHONPATH": tree, "BRAIN_AUTOSERVE": "0"}
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    took = (time.perf_counter() - started) * 1000
    if status:
        raise SystemExit(f"{command} from {tree} failed (status {status})")
    return (usage.ru_utime + usage.ru_stime) * 1000, took


if __name__ == "__main__":
    main()
