"""The benchmark: a deterministic corpus, pure summaries, and one CI-sized run of the real thing.

The run checks that the bench works and reports sane figures, never how fast this machine is."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from types import MappingProxyType

import psutil
import pytest
from click.testing import CliRunner

from nexusbrain import envelopes
from nexusbrain.bench.corpus import Corpus, CorpusSpec, name_of
from nexusbrain.bench.runner import envelope_check, median_of
from nexusbrain.cli.bench import bench, parse_scales
from nexusbrain.cli.main import cli
from nexusbrain.errors import InvalidInput
from nexusbrain.ingest.chunking import ChunkingConfig, chunk_markdown
from nexusbrain.latency import percentile, summarise

from .pgserver import Server


def test_the_corpus_is_deterministic_and_prefix_stable() -> None:
    first = [d.content for d in Corpus().documents(30)]
    assert first == [d.content for d in Corpus().documents(30)]
    assert Corpus().document(29).content == first[29]  # document i depends on i only
    other = Corpus(CorpusSpec(seed=1)).document(0).content
    assert other != first[0]
    assert Corpus().queries(5, 30) == Corpus().queries(5, 30)


def test_the_corpus_looks_like_notes() -> None:
    spec = CorpusSpec()
    docs = list(Corpus(spec).documents(300))
    sizes = sorted(len(d.content) for d in docs)
    assert spec.min_chars <= sizes[0] and sizes[-1] <= spec.max_chars + 6_000
    assert 1_000 < sizes[len(sizes) // 2] < 4_000  # a median of a few KB
    text = "\n".join(d.content for d in docs)
    assert all(d.content.startswith(f"# {d.title}\n") for d in docs)
    assert text.count("\n## ") > 300 and "\n### " in text
    assert text.count("```") % 2 == 0 and text.count("```python") > 5
    assert "[[" in text and "\n- " in text
    counts = Counter(re.findall(r"[a-z]+", text.lower()))
    ranked = [n for _, n in counts.most_common()]
    assert ranked[0] > 50 * ranked[len(ranked) // 2]  # Zipfian: a head and a long tail
    assert sum(len(chunk_markdown(d.content, ChunkingConfig())) for d in docs) > 2 * len(docs)


def test_changed_documents_differ_and_keep_their_name() -> None:
    corpus = Corpus()
    doc = corpus.document(7)
    changed = corpus.changed(doc)
    assert changed.name == doc.name == name_of(7) == "d0000/n0000007.md"
    assert changed.content.startswith(doc.content) and changed.content != doc.content


def test_percentiles_are_nearest_rank() -> None:
    values = [15.0, 20.0, 35.0, 40.0, 50.0]
    assert [percentile(values, q) for q in (5, 30, 40, 50, 100)] == [15, 20, 20, 35, 50]
    assert percentile(list(map(float, range(1, 101))), 95) == 95
    with pytest.raises(ValueError):
        percentile([], 50)
    summary = summarise([4.0, 1.0, 2.0, 3.0], wall_seconds=2.0)
    assert (summary.p50, summary.p99, summary.mean, summary.throughput) == (2.0, 4.0, 2.5, 2.0)


def test_the_median_of_runs_is_taken_per_number() -> None:
    runs = [
        {"a": 1, "b": {"c": 1.0, "d": "x"}, "ok": True},
        {"a": 5, "b": {"c": 3.0, "d": "y"}, "ok": False},
        {"a": 2, "b": {"c": 2.0, "d": "z"}, "ok": False},
    ]
    assert median_of(runs) == {"a": 2, "b": {"c": 2.0, "d": "x"}, "ok": True}


def test_the_documented_bench_commands_are_valid() -> None:
    """docs/benchmark.md's commands take minutes to hours; the CI-sized run below executes one."""
    page = (Path(__file__).parents[1] / "docs" / "benchmark.md").read_text(encoding="utf-8")
    commands = [line for line in page.splitlines() if line.startswith("nexusbrain bench")]
    assert len(commands) >= 2
    for command in commands:
        args = shlex.split(command)[2:]
        context = bench.make_context("bench", args)
        assert parse_scales(context.params["scales"] or "1000") and context.params["searches"]


def test_scales_are_parsed_with_a_clear_error() -> None:
    assert parse_scales("1000, 10_000") == (1000, 10000)
    for bad in ("", "ten", "0", "-5"):
        with pytest.raises(InvalidInput):
            parse_scales(bad)


def _scale(documents: int, rss: int, p95: float) -> dict:  # type: ignore[type-arg]
    series = {"p95_ms": p95}
    return {
        "documents": documents,
        "db_bytes": 10_000_000,
        "rss": {"peak_search_bytes": rss, "peak_ingest_bytes": rss // 2},
        "latency": {"sequential": {"search balanced": series, "recall balanced": series}},
    }


def test_the_envelope_verdict_of_a_scale() -> None:
    assert envelope_check("desktop", _scale(50_000, 400_000_000, 150.0))["ok"]
    verdict = envelope_check("edge", _scale(50_000, 400_000_000, 150.0))
    assert not verdict["ok"]
    assert [b["limit"] for b in verdict["breaches"]] == ["documents", "rss_bytes"]


@pytest.fixture
def tiny_edge(monkeypatch: pytest.MonkeyPatch) -> None:
    """An `edge` envelope of 100 documents, so that the CI-sized run must break it."""
    tiny = envelopes.Envelope(
        "edge", envelopes.Figures(100, 2 * envelopes.GIB, 4_000 * envelopes.MB, 10_000.0)
    )
    monkeypatch.setattr(envelopes, "ENVELOPES", MappingProxyType({"edge": tiny}))


def test_a_ci_sized_bench_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_edge: None
) -> None:
    monkeypatch.setenv("BRAIN_EMBEDDER", "hashing")
    monkeypatch.setenv("BRAIN_RERANKER", "hashing")  # the report names it
    monkeypatch.setenv("BRAIN_RATE_LIMIT_LOOPBACK", "1")  # the bench must override it
    out = tmp_path / "bench.json"
    args = ["bench", "--scales", "200", "--searches", "20", "--concurrency", "4", "--workers", "2"]
    args += ["--envelope", "edge", "--workdir", str(tmp_path), "--json", "--out", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    assert "error: envelope edge broken at 200 docs: documents 200 > 100" in result.stderr
    report = json.loads(out.read_text())
    assert json.loads(result.stdout) == report
    assert list(tmp_path.iterdir()) == [out]  # the scratch folder is gone
    _check_report(report)


def _check_report(report: dict) -> None:  # type: ignore[type-arg]
    assert report["bench"]["workers"] == 2  # every server's
    env = report["environment"]
    assert re.fullmatch(r"[0-9a-f]{40}", env["commit"])
    assert env["machine"]["cores"] >= 1 and env["machine"]["memory_bytes"] > 0
    assert env["versions"]["nexusbrain"] and env["versions"]["sqlite"]
    assert env["embedder"] == "hashing" and env["model_bytes"] == 0
    assert env["reranker"] == "hashing"
    [scale] = report["scales"]
    assert scale["documents"] == 200 and scale["chunks"] > 200
    ingest = scale["ingest"]
    assert ingest["http"]["documents"] == 200 and ingest["http"]["chunks"] == scale["chunks"]
    assert ingest["http"]["workers"] == report["bench"]["workers"]  # the ingest server's too
    for path in ("http", "ingest_dir"):
        assert ingest[path]["docs_per_second"] > 0 and ingest[path]["chunks_per_second"] > 0
    incremental = ingest["incremental"]
    assert (incremental["changed_files"], incremental["updated"]) == (2, 2)
    assert incremental["unchanged"] == 198
    latency = scale["latency"]
    # every worker searched the warm-up queries and the series' queries once, first
    assert latency["first"]["search balanced"]["count"] == (20 + 10) * 2
    assert len(latency["sequential"]) == 6 and set(latency["concurrent"]) == {
        "search balanced",
        "recall balanced",
    }
    for series in [*latency["sequential"].values(), *latency["concurrent"].values()]:
        assert series["count"] == 20
        assert 0 <= series["p50_ms"] <= series["p95_ms"] <= series["p99_ms"] <= series["max_ms"]
        assert series["throughput_rps"] > 0
    rss = scale["rss"]
    assert 0 < rss["idle_bytes"] <= rss["peak_search_bytes"] and rss["peak_ingest_bytes"] > 0
    # shared pages count once in the PSS (the workers' forked model and libraries)
    assert 0 < rss["idle_pss_bytes"] < rss["idle_bytes"]
    assert rss["after_search_pss_bytes"] > 0 and rss["after_ingest_pss_bytes"] > 0
    assert scale["db_bytes"] > scale["corpus_bytes"] > 0
    assert 0 < scale["cold_start_seconds"] < 60
    assert scale["server_envelope"]["name"] == "edge"
    assert scale["server_envelope"]["observed"]["documents"] == 200
    assert report["envelope"] == {
        "name": "edge",
        "ok": False,
        "breaches": ["200 docs: documents 200 > 100"],
    }


def test_a_terminated_bench_cleans_up(tmp_path: Path) -> None:
    """SIGTERM while the child server runs: the server stops and the scratch folder goes."""
    env = {**os.environ, "BRAIN_EMBEDDER": "hashing"}
    args = ["bench", "--scales", "200", "--searches", "2000", "--workdir", str(tmp_path)]
    bench_process = subprocess.Popen(
        [sys.executable, "-m", "nexusbrain", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    parent = psutil.Process(bench_process.pid)
    assert bench_process.stderr is not None
    for line in bench_process.stderr:  # wait until the search server is up and busy
        if "search conservative" in line:
            break
    servers = [p for p in parent.children() if "serve" in p.cmdline()]
    assert servers, "no child server found"
    bench_process.send_signal(signal.SIGTERM)
    assert bench_process.wait(timeout=60) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 10
    while any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in servers):
        assert time.monotonic() < deadline, "the child server outlived the bench"
        time.sleep(0.05)
    assert list(tmp_path.iterdir()) == []


def test_a_ci_sized_bench_run_on_postgres_with_two_replicas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres: Server
) -> None:
    monkeypatch.setenv("BRAIN_EMBEDDER", "hashing")
    url = postgres.url("benchbase")
    args = ["bench", "--db", url, "--replicas", "1,2", "--scales", "60", "--searches", "10"]
    work = tmp_path / "not" / "there"  # made, parents and all
    args += ["--concurrency", "4", "--workdir", str(work), "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert work.is_dir()
    [scale] = json.loads(result.stdout)["scales"]
    assert set(scale["replicas"]) == {"1", "2"}
    for count, figures in scale["replicas"].items():
        assert figures["http_ingest"]["replicas"] == int(count)
        assert figures["http_ingest"]["chunks"] == scale["chunks"] > 60
        assert figures["search_concurrent"]["count"] == 10
        assert figures["search_concurrent"]["throughput_rps"] > 0
    assert scale["db_bytes"] > 0 and scale["ingest"]["incremental"]["updated"] == 1
    with postgres.connect() as conn:  # every scratch schema is gone
        left = conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'benchbase%'")
        assert left.fetchall() == []
