"""The goals of sources (#34), measured end to end with real processes and real files.

Usage:
  python scripts/measure_sources.py [--work /tmp/nb-sources] [--profile edge] [--rounds 3]

1. A folder of every kind (the tests' KINDS: markdown, text, rst, AsciiDoc, HTML, a 5-page PDF,
   Python, Go, JavaScript) is added as a source with `nexusbrain sources add`; each kind is
   searched for by a sentence from its middle (`nexusbrain search --json`): the rank of its
   file, and the page a PDF hit cites.
2. `nexusbrain serve` runs on the brain; for each kind, a file is added, changed and deleted in
   the source's folder, and the time from the write to the change being seen by a search over
   HTTP (polled every 10 ms) is taken; `--rounds` times, the kinds in turn.
3. `nexusbrain sources remove`: then no search for any sentence finds a file of the folder,
   `ls` lists none and `stats` counts none, while `get ID` and the history still answer.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.pdf_writer import pdf_bytes  # noqa: E402
from tests.test_formats_ingest import HERON, KINDS, pdf_pages  # noqa: E402

from nexusbrain import discovery  # noqa: E402

PYTHON = sys.executable


def nexusbrain(db: Path, *args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [PYTHON, "-m", "nexusbrain", "--db", str(db), *args], env=env, capture_output=True
    )
    if done.returncode != 0:
        raise SystemExit(f"nexusbrain {' '.join(args)}: {done.stderr.decode()}")
    return done.stdout.decode()


def contents_with(name: str, original: str | bytes, old: str, new: str) -> str | bytes:
    """The kind's file with its middle sentence `old` replaced by `new`."""
    if name.endswith(".pdf"):
        pages = [[line.replace(old, new) for line in page or []] for page in pdf_pages()]
        return pdf_bytes(pages)
    assert isinstance(original, str)
    escaped = old.replace("&", "&amp;") if name.endswith(".html") else old
    assert escaped in original, name
    return original.replace(escaped, new)


def write(path: Path, contents: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.part")  # whole, as an editor's save is
    if isinstance(contents, bytes):
        temporary.write_bytes(contents)
    else:
        temporary.write_text(contents, encoding="utf-8")
    temporary.rename(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/nb-sources"))
    parser.add_argument("--profile", default=None, help="BRAIN_EMBEDDER (default: the default)")
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    work: Path = options.work
    shutil.rmtree(work, ignore_errors=True)
    folder, db = work / "folder", work / "brain.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    if options.profile:
        env["BRAIN_EMBEDDER"] = options.profile
    for name, contents, _, _ in KINDS:
        write(folder / name, contents)

    print("## 1. every kind, found by a sentence from its middle")
    started = time.perf_counter()
    print(nexusbrain(db, "sources", "add", str(folder), "--name", "every-kind", env=env).strip())
    print(f"(sources add took {time.perf_counter() - started:.2f} s, process start included)")
    print("| file | rank of its file | page cited |")
    print("| --- | --- | --- |")
    for name, _, _, sentence in KINDS:
        hits = json.loads(nexusbrain(db, "search", sentence, "-k", "5", "--json", env=env))["hits"]
        ranks = [n for n, h in enumerate(hits, 1) if Path(h["uri"]).name == name]
        page = next((h["page"] for h in hits if Path(h["uri"]).name == name), None)
        print(f"| {name} | {ranks[0] if ranks else 'not in top 5'} | {page} |")

    print("\n## 2. serve follows an added, a changed and a deleted file of each kind")
    server = subprocess.Popen(
        [PYTHON, "-m", "nexusbrain", "--db", str(db), "serve", "--port", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while (found := discovery.find(db)) is None or found.pid != server.pid:
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("serve did not start")
            time.sleep(0.05)
        time.sleep(1.5)  # the watch of the source has begun and its first sync is done
        seconds: dict[str, dict[str, list[float]]] = {}
        with httpx.Client(base_url=found.url, timeout=30) as http:

            def holds(uri: str, sentence: str) -> bool:
                hits = http.get("/search", params={"q": sentence, "k": 10}).json()["hits"]
                flat = [(h["uri"], " ".join(h["text"].split())) for h in hits]
                return any(u == uri and sentence in text for u, text in flat)

            def timed(change: Callable[[], None], seen: Callable[[], bool]) -> float:
                begun = time.perf_counter()
                change()
                while not seen():
                    if time.perf_counter() - begun > 30:
                        raise SystemExit("a change was not followed within 30 s")
                    time.sleep(0.01)
                return time.perf_counter() - begun

            def one_kind(round_: int, name: str, contents: str | bytes, sentence: str) -> None:
                path = folder / "live" / f"r{round_}-{name}"
                uri = path.as_posix()
                first = f"Kestrel {round_} {Path(name).stem} alpha marker sentence."
                second = f"Kestrel {round_} {Path(name).stem} omega marker sentence."
                old = HERON if name.endswith(".html") else sentence
                at = seconds.setdefault(name, {"added": [], "changed": [], "deleted": []})
                at["added"].append(
                    timed(
                        lambda: write(path, contents_with(name, contents, old, first)),
                        lambda: holds(uri, first),
                    )
                )
                at["changed"].append(
                    timed(
                        lambda: write(path, contents_with(name, contents, old, second)),
                        lambda: holds(uri, second) and not holds(uri, first),
                    )
                )
                at["deleted"].append(timed(path.unlink, lambda: not holds(uri, second)))

            for round_ in range(options.rounds):
                for name, contents, _, sentence in KINDS:
                    one_kind(round_, name, contents, sentence)
        print(f"seconds from the write to a search seeing it, over {options.rounds} rounds")
        print("| file | added (median, max) | changed | deleted |")
        print("| --- | --- | --- | --- |")
        worst = 0.0
        for name, each in seconds.items():
            cells = []
            for kind in ("added", "changed", "deleted"):
                values = each[kind]
                worst = max(worst, *values)
                cells.append(f"{statistics.median(values):.2f}, {max(values):.2f}")
            print(f"| {name} | {' | '.join(cells)} |")
        print(f"slowest of all: {worst:.2f} s")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)

    print("\n## 3. sources remove")
    ids = [
        d["id"]
        for d in json.loads(nexusbrain(db, "ls", str(folder), "--json", env=env))["documents"]
    ]
    print(nexusbrain(db, "sources", "remove", "every-kind", env=env).strip())
    leftover = 0
    for _, _, _, sentence in KINDS:
        hits = json.loads(nexusbrain(db, "search", sentence, "-k", "50", "--json", env=env))["hits"]
        leftover += sum(h["uri"].startswith(f"{folder}/") for h in hits)
    listed = json.loads(nexusbrain(db, "ls", str(folder), "--json", env=env))["total"]
    stats: dict[str, Any] = json.loads(nexusbrain(db, "stats", "--json", env=env))
    readable = sum(
        json.loads(nexusbrain(db, "get", str(i), "--json", env=env))["deleted_at"] is not None
        for i in ids
    )
    print(f"hits from the folder over {len(KINDS)} searches of k=50: {leftover}")
    print(f"ls {folder}: {listed} documents")
    print(
        f"stats: documents {stats['documents']}, chunks {stats['chunks']},"
        f" retired_documents {stats['retired_documents']}"
    )
    print(f"get ID of the {len(ids)} documents it had: {readable} answer, each retired")


if __name__ == "__main__":
    main()
