"""The CPU `nexusbrain serve` uses while nothing happens, for one tree or several side by side.

    python scripts/measure_idle.py --db brain.db [--watch DIR] [--seconds 60] \
        [--tree /path/to/checkout/src ...]

Each --tree (a source folder put first on PYTHONPATH; none: the installed package) serves a
copy of the database of its own, on a port of its own, all at once, so that they share the
machine's state. After a settling time, the CPU time of each server process (all its threads)
is read over --seconds of quiet.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", type=Path, required=True, help="a SQLite brain (copied)")
    parser.add_argument("--watch", type=Path, help="serve --watch this folder")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--settle", type=float, default=25.0)
    parser.add_argument("--tree", action="append", default=[], help="a src folder to serve")
    args = parser.parse_args()
    trees = args.tree or [""]
    scratch = Path(tempfile.mkdtemp(prefix="nexusbrain-idle-"))
    servers = []
    try:
        for n, tree in enumerate(trees):
            db = scratch / f"{n}.db"
            shutil.copy(args.db, db)
            env = dict(os.environ, PYTHONPATH=tree) if tree else dict(os.environ)
            command = [sys.executable, "-m", "nexusbrain", "--db", str(db), "serve"]
            command += ["--port", "0"] + (["--watch", str(args.watch)] if args.watch else [])
            servers.append(
                subprocess.Popen(
                    command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
            )
        time.sleep(args.settle)
        before = [psutil.Process(s.pid).cpu_times() for s in servers]
        time.sleep(args.seconds)
        for tree, server, start in zip(trees, servers, before, strict=True):
            end = psutil.Process(server.pid).cpu_times()
            used = (end.user - start.user) + (end.system - start.system)
            label = tree or "installed"
            print(
                f"{label}: {used:.2f} s of CPU in {args.seconds:g} s, "
                f"{100 * used / args.seconds:.3f}%"
            )
    finally:
        for server in servers:
            server.terminate()
            server.wait(30)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
