"""Ingest throughput per file format: files/s and chunks/s through Brain.ingest_dir, and the
share of it that reading the format (extraction and chunking, no storage) takes.

Usage:
  python scripts/measure_ingest_formats.py [--runs 3] [--profile edge] [--work /tmp/nb-formats]

Writes one folder per format (seeded text, so every run reads the same bytes): markdown, plain
text, rst and AsciiDoc notes of ~4 KB; HTML pages of ~12 KB and one page of 1 MB; PDFs of 50
pages; Python (this repository's own modules) and Go. Each folder is ingested into a fresh
brain `--runs` times (the formats taken in turn within each run); the median is printed.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from nexusbrain.brain import Brain
from nexusbrain.config import ChunkingConfig, Profile, Settings
from nexusbrain.ingest.documents import decode_utf8, prepare_markdown
from nexusbrain.ingest.formats import format_of

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.pdf_writer import pdf_bytes  # noqa: E402  (the tests' PDF writer, for real PDFs)

WORDS = (
    "the deploy failed because key rotation expired token service cache queue index shard"
    " replica vault note search rank fusion lexical dense vector graph entity relation time"
    " window budget recall precision query answer document chunk span heading page format"
).split()


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 18))).capitalize() + "."


def paragraph(rng: random.Random) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(3, 6)))


def sections(rng: random.Random, count: int) -> list[tuple[str, str]]:
    return [(sentence(rng)[:40].rstrip("."), paragraph(rng)) for _ in range(count)]


def markdown(rng: random.Random) -> str:
    return "".join(f"## {h}\n\n{p}\n\n" for h, p in sections(rng, 8))


def plain(rng: random.Random) -> str:
    return "".join(f"{p}\n\n" for _, p in sections(rng, 8))


def rst(rng: random.Random) -> str:
    return "".join(f"{h}\n{'=' * len(h)}\n\n{p}\n\n" for h, p in sections(rng, 8))


def asciidoc(rng: random.Random) -> str:
    return "= Title\n\n" + "".join(f"== {h}\n\n{p}\n\n" for h, p in sections(rng, 8))


def html(rng: random.Random, count: int = 20) -> str:
    body = "".join(f"<h2>{h}</h2><p>{p}</p>\n" for h, p in sections(rng, count))
    chrome = "<nav><a href='/'>Home</a> <a href='/docs'>Docs</a></nav><script>var x = 1;</script>"
    head = "<!doctype html><html><head><title>Page</title></head>"
    return f"{head}<body>{chrome}<main>{body}</main></body></html>"


def go(rng: random.Random) -> str:
    funcs = "".join(
        f"// F{i} {sentence(rng)}\nfunc F{i}(x int) int {{\n"
        f"\tif x > {i} {{\n\t\treturn x\n\t}}\n\treturn {i}\n}}\n\n"
        for i in range(20)
    )
    return f"package gen\n\n{funcs}"


def pdf(rng: random.Random, pages: int = 50) -> bytes:
    return pdf_bytes([[sentence(rng)[:90] for _ in range(40)] for _ in range(pages)])


def write_folders(work: Path) -> dict[str, Path]:
    rng = random.Random(20260102)
    makers: dict[str, tuple[str, int, Callable[[random.Random], str | bytes]]] = {
        "markdown": (".md", 200, markdown),
        "text": (".txt", 200, plain),
        "rst": (".rst", 200, rst),
        "asciidoc": (".adoc", 200, asciidoc),
        "html": (".html", 100, html),
        "html-1MB": (".html", 1, lambda r: html(r, 2300)),
        "pdf-50p": (".pdf", 4, pdf),
        "go": (".go", 100, go),
    }
    folders = {}
    for name, (suffix, count, make) in makers.items():
        folder = work / name
        folder.mkdir(parents=True)
        for i in range(count):
            data = make(rng)
            path = folder / f"f{i:04d}{suffix}"
            path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        folders[name] = folder
    python = work / "python"
    python.mkdir()
    modules = sorted((REPO / "src" / "nexusbrain").rglob("*.py"))
    for i, source in enumerate(m for m in modules if m.read_text().strip()):  # not empty ones
        shutil.copy(source, python / f"m{i:03d}_{source.name}")
    folders["python"] = python
    return folders


def extraction_seconds(folder: Path) -> float:
    """Reading every file's format (no storage): what the run spends before writing."""
    config = ChunkingConfig()
    started = time.perf_counter()
    for path in sorted(folder.iterdir()):
        fmt, data = format_of(path), path.read_bytes()
        if fmt is None:  # markdown
            text = decode_utf8(data, str(path), 10**8)
            prepare_markdown(text, uri=str(path), domain="d", config=config)
        else:
            fmt.extract(data, name=str(path), config=config, max_bytes=10**8)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", default="edge", choices=[p.value for p in Profile])
    parser.add_argument("--work", type=Path, default=Path("/tmp/nb-formats"))
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    folders = write_folders(args.work / "files")
    seconds: dict[str, list[float]] = {name: [] for name in folders}
    reading: dict[str, list[float]] = {name: [] for name in folders}
    counts: dict[str, tuple[int, int, int]] = {}
    for run in range(args.runs):
        for name, folder in folders.items():
            db = args.work / f"{name}-{run}.db"
            settings = Settings(db=db, embedder=Profile(args.profile))
            with Brain.open(settings=settings) as brain:
                report = brain.ingest_dir(folder)
            assert not report.errors, report.errors
            seconds[name].append(report.seconds)
            reading[name].append(extraction_seconds(folder))
            size = sum(p.stat().st_size for p in folder.iterdir())
            counts[name] = (report.added, report.chunks, size)
    print(f"profile {args.profile}, median of {args.runs} run(s)")
    columns = ("files", "MB", "chunks", "s", "files/s", "chunks/s", "read s")
    print(f"{'format':<10} " + " ".join(f"{c:>8}" for c in columns))
    for name in folders:
        files, chunks, size = counts[name]
        s = statistics.median(seconds[name])
        r = statistics.median(reading[name])
        print(
            f"{name:<10} {files:>8} {size / 1e6:>8.2f} {chunks:>8} {s:>8.2f}"
            f" {files / s:>8.1f} {chunks / s:>8.0f} {r:>8.2f}"
        )


if __name__ == "__main__":
    main()
