"""The bench report: where it ran (commit, machine, versions) and a table of its figures."""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil

from nexusbrain.config import Profile, Settings
from nexusbrain.embeddings.profiles import MODELS
from nexusbrain.records import SearchMode

PACKAGES = (
    "nexusbrain",
    "numpy",
    "tokenizers",
    "safetensors",
    "fastapi",
    "starlette",
    "pydantic",
    "uvicorn",
    "orjson",
    "psutil",
)
SOURCE = Path(__file__).resolve().parents[1]
# the keys of a scale's "rss" block that the table shows, in its order
RSS = ("idle_bytes", "peak_search_bytes", "peak_ingest_bytes")
PSS = ("idle_pss_bytes", "after_search_pss_bytes", "after_ingest_pss_bytes")


def environment(clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> dict[str, Any]:
    settings = Settings.from_env()
    profile = settings.embedder
    return {
        "started_at": clock().isoformat(),
        "commit": _git("rev-parse", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "machine": machine(),
        "versions": versions(),
        "embedder": profile.value,
        "reranker": settings.models.reranker.value,
        "model_bytes": model_bytes(profile),
    }


def machine() -> dict[str, Any]:
    return {
        "cores": psutil.cpu_count(logical=False),
        "logical_cores": psutil.cpu_count(logical=True),
        "memory_bytes": psutil.virtual_memory().total,
        "cpu": _cpu_model(),
        "arch": platform.machine(),
        "system": platform.platform(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {"python": platform.python_version()}
    found["sqlite"] = sqlite3.sqlite_version
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def model_bytes(profile: Profile) -> int:
    """The embedding model's files on disk (0 for profiles without one)."""
    if profile in (Profile.EDGE, Profile.QUALITY):
        folder = MODELS / "edge"
        return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return 0


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=SOURCE, capture_output=True, text=True, check=False, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


# the table

Row = tuple[str, Callable[[Mapping[str, Any]], str]]


def _ms(series: str, kind: str = "sequential") -> Callable[[Mapping[str, Any]], str]:
    def cell(scale: Mapping[str, Any]) -> str:
        s = scale["latency"][kind][series]
        return f"{s['p50_ms']:.1f} / {s['p95_ms']:.1f} / {s['p99_ms']:.1f}"

    return cell


def _first(scale: Mapping[str, Any]) -> str:
    """Each worker's first searches for the series' queries (a client a worker, at once)."""
    found = scale["latency"].get("first")  # a report of before the bench kept it has none
    return _ms("search balanced", "first")(scale) if found else "-"


def _rps(series: str, kind: str) -> Callable[[Mapping[str, Any]], str]:
    def cell(scale: Mapping[str, Any]) -> str:
        rps = scale["latency"][kind][series]["throughput_rps"]
        return f"{rps:.1f}" if rps < 10 else f"{rps:.0f}"

    return cell


def _rate(path: str) -> Callable[[Mapping[str, Any]], str]:
    def cell(scale: Mapping[str, Any]) -> str:
        r = scale["ingest"][path]
        return f"{r['docs_per_second']:,.0f} / {r['chunks_per_second']:,.0f}"

    return cell


def _mb(value: float) -> str:
    return f"{value / 1e6:,.0f}"


def _rows(modes: Sequence[str], concurrency: int) -> list[Row]:
    rows: list[Row] = [
        ("documents / chunks", lambda s: f"{s['documents']:,} / {s['chunks']:,}"),
        ("ingest-dir: docs/s / chunks/s", _rate("ingest_dir")),
        ("HTTP batch ingest: docs/s / chunks/s", _rate("http")),
        (
            "re-ingest, 1% changed: s (changed docs/s)",
            lambda s: (
                f"{s['ingest']['incremental']['seconds']:.2f} "
                f"({s['ingest']['incremental']['changed_per_second']:,.0f})"
            ),
        ),
    ]
    rows.append(("/search balanced, first time: p50 / p95 / p99 ms", _first))
    for op in ("search", "recall"):
        for mode in modes:
            rows.append((f"/{op} {mode}: p50 / p95 / p99 ms", _ms(f"{op} {mode}")))
    for op in ("search", "recall"):
        name = f"{op} balanced"
        rows.append((f"/{op} balanced, 1 client: req/s", _rps(name, "sequential")))
        rows.append((f"/{op} balanced, {concurrency} clients: req/s", _rps(name, "concurrent")))
        rows.append(
            (f"/{op} balanced, {concurrency} clients: p50/p95/p99", _ms(name, "concurrent"))
        )
    rows += [
        ("RSS idle / peak search / peak ingest MB", _memory(*RSS)),
        ("PSS idle / after search / after ingest MB", _memory(*PSS)),
        ("database on disk MB", lambda s: _mb(s["db_bytes"])),
        ("cold start to first answer s", lambda s: f"{s['cold_start_seconds']:.2f}"),
        ("envelope", _verdict),
    ]
    return rows


def _replica_rows(replicas: Mapping[str, Any], concurrency: int) -> list[Row]:
    """Per server count over one brain: HTTP ingest, and /search from `concurrency` clients."""
    rows: list[Row] = []
    for count in replicas:

        def ingest(scale: Mapping[str, Any], count: str = count) -> str:
            r = scale["replicas"][count]["http_ingest"]
            return f"{r['docs_per_second']:,.0f} / {r['chunks_per_second']:,.0f}"

        def search(scale: Mapping[str, Any], count: str = count) -> str:
            s = scale["replicas"][count]["search_concurrent"]
            return f"{s['throughput_rps']:.0f} ({s['p95_ms']:.1f})"

        rows.append((f"{count} server(s): HTTP batch ingest docs/s / chunks/s", ingest))
        rows.append(
            (f"{count} server(s): /search balanced, {concurrency} clients: req/s (p95 ms)", search)
        )
    return rows


def _memory(*keys: str) -> Callable[[Mapping[str, Any]], str]:
    return lambda scale: " / ".join(_mb(scale["rss"][key]) for key in keys)


def _verdict(scale: Mapping[str, Any]) -> str:
    envelope = scale["envelope"]
    if envelope["ok"]:
        return f"{envelope['name']}: ok"
    return f"{envelope['name']}: " + "; ".join(b["message"] for b in envelope["breaches"])


def table(report: Mapping[str, Any]) -> str:
    """A markdown table: one column per scale."""
    scales = report["scales"]
    modes = [mode.value for mode in SearchMode]
    concurrency = report["bench"]["concurrency"]
    header = ["metric", *(f"{s['documents']:,} docs" for s in scales)]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    rows = _rows(modes, concurrency) + _replica_rows(scales[0].get("replicas", {}), concurrency)
    for name, cell in rows:
        lines.append("| " + " | ".join([name, *(cell(s) for s in scales)]) + " |")
    env = report["environment"]
    machine_ = env["machine"]
    lines.append("")
    lines.append(
        f"commit {str(env['commit'])[:12]}{' (dirty)' if env['dirty'] else ''}, "
        f"{machine_['cores']} cores ({machine_['cpu']}), "
        f"{machine_['memory_bytes'] / 2**30:.1f} GiB, load {machine_['load_average']}, "
        f"embedder {env['embedder']} ({_mb(env['model_bytes'])} MB on disk), "
        f"reranker {env.get('reranker', 'none')}, "
        f"k={report['bench']['k']}, serve --workers {report['bench']['workers']}, "
        f"median of {report['bench']['runs']} run(s)"
    )
    return "\n".join(lines)
