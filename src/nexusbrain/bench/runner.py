"""The benchmark: at each scale, a synthetic corpus through the real CLI and the real server.

Per scale and run, in order:
1. `nexusbrain ingest-dir` of the corpus into a fresh database B (a child process; timed from
   process start to exit).
2. A fresh server on database A, fed every document through `POST /ingest/markdown/batch`
   (INGEST_BATCH documents per request) by a few client threads (timed from the first
   request to the last answer; peak RSS sampled, PSS read after the last answer).
3. A fresh server on B: cold start (process start to the first answered /search), idle RSS
   and PSS, then /search and /recall in every mode one request at a time, then with
   `concurrency` clients in balanced mode (peak RSS sampled throughout, PSS read after), and
   its own /stats.
4. 1% of the files change and `ingest-dir` runs again on B: the incremental re-ingest.

With `db` (a postgresql:// URL), A and B are scratch schemas of that database, dropped at the
end. With several `replicas` counts, step 2 runs once per count with that many servers over a
fresh A (the clients spread over them), and step 3 adds the concurrent /search series with
that many servers over B: stateless replicas of one brain.
"""

from __future__ import annotations

import shutil
import statistics
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nexusbrain.bench.corpus import DEFAULT_SEED, Corpus, CorpusSpec, name_of, write_doc
from nexusbrain.bench.load import Call, LoadResult, RssSampler, run_calls, wait_for_answer
from nexusbrain.bench.server import ChildServer, child_env, run_cli
from nexusbrain.config import default_workers
from nexusbrain.envelopes import Figures, check, envelope_named, status
from nexusbrain.latency import summarise
from nexusbrain.records import Progress, SearchMode

K = 10
INGEST_CLIENTS = 4
INGEST_BATCH = 32  # documents per POST /ingest/markdown/batch
WARMUP = 10
CHANGED_SHARE = 0.01


@dataclass(frozen=True, slots=True)
class BenchConfig:
    scales: tuple[int, ...] = (1_000, 10_000)
    searches: int = 200  # requests in each latency series
    concurrency: int = 8
    # serve --workers of every server the bench starts
    workers: int = field(default_factory=default_workers)
    runs: int = 1  # the report gives the median of the runs
    envelope: str = "desktop"
    seed: int = DEFAULT_SEED
    workdir: Path = field(default_factory=lambda: Path("."))
    db: str | None = None  # a postgresql:// URL: the brains are scratch schemas of its database
    replicas: tuple[int, ...] = (1,)  # servers over one brain, for the HTTP and concurrent series


def _quiet(what: str, done: int, total: int) -> None:
    """No progress display."""


def measure(config: BenchConfig, phase: Progress = _quiet) -> list[dict[str, Any]]:
    """One entry per scale: the median of the runs (and the runs themselves when several)."""
    corpus = Corpus(CorpusSpec(seed=config.seed))
    out = []
    for documents in config.scales:
        folder = config.workdir / f"corpus-{documents}"
        _write_corpus(corpus, folder, documents, phase)
        runs = [
            _measure_scale(corpus, folder, documents, config, run, phase)
            for run in range(config.runs)
        ]
        shutil.rmtree(folder, ignore_errors=True)
        scale = median_of(runs)
        scale["envelope"] = envelope_check(config.envelope, scale)
        if config.runs > 1:
            scale["runs"] = runs
        out.append(scale)
    return out


def envelope_check(name: str, scale: Mapping[str, Any]) -> dict[str, Any]:
    """The envelope's verdict on one scale: its documents, database size, the peak RSS (ingest
    or search) and the p95 of sequential balanced /search and /recall, whichever is worse."""
    envelope = envelope_named(name)
    sequential = scale["latency"]["sequential"]
    observed = Figures(
        documents=scale["documents"],
        db_bytes=scale["db_bytes"],
        rss_bytes=max(scale["rss"]["peak_search_bytes"], scale["rss"]["peak_ingest_bytes"]),
        p95_ms=max(sequential[f"{op} balanced"]["p95_ms"] for op in ("search", "recall")),
    )
    return status(envelope, observed, check(envelope, observed))


def median_of(values: Sequence[Any]) -> Any:
    """The median of each number across runs, recursively; anything else from the first run."""
    first = values[0]
    if isinstance(first, dict):
        return {key: median_of([v[key] for v in values]) for key in first}
    if isinstance(first, bool) or not isinstance(first, int | float):
        return first
    middle = statistics.median(values)
    return type(first)(middle) if isinstance(first, int) else middle


def _write_corpus(corpus: Corpus, folder: Path, documents: int, phase: Progress) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    for doc in corpus.documents(documents):
        write_doc(folder, doc)
        if (doc.index + 1) % 500 == 0 or doc.index + 1 == documents:
            phase(f"writing the {documents:,}-document corpus", doc.index + 1, documents)


def _measure_scale(
    corpus: Corpus, folder: Path, documents: int, config: BenchConfig, run: int, phase: Progress
) -> dict[str, Any]:
    work = config.workdir / f"run-{documents}-{run}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = child_env(config.envelope)
    label = f"{documents:,} docs, run {run + 1}/{config.runs}"
    places = Brains(work, config.db, f"b{documents}r{run}")
    try:
        phase(f"{label}: ingest-dir", 0, 1)
        db = places.url("dir")
        report, dir_seconds = run_cli(db, env, "ingest-dir", str(folder))
        http = {
            n: http_ingest(
                folder, documents, places.url(f"http{n}"), n, work, env, config, label, phase
            )
            for n in config.replicas
        }
        http_rates, ingest_memory = http[config.replicas[0]]
        queries = corpus.queries(config.searches + WARMUP, documents)
        served = _serve_and_search(db, env, work, queries, config, label, phase)
        phase(f"{label}: re-ingest after 1% of the files change", 0, 1)
        changed = _change_files(corpus, folder, documents, config.seed + run)
        again, again_seconds = run_cli(db, env, "ingest-dir", str(folder))
        _restore_files(corpus, folder, changed)
        stats, by_replicas = served.pop("stats"), served.pop("by_replicas")
    finally:
        places.drop()
    result = {
        "documents": documents,
        "chunks": report["chunks"],
        "corpus_bytes": sum(p.stat().st_size for p in folder.rglob("*.md")),
        "db_bytes": stats["db_bytes"] if config.db else _disk_bytes(Path(db)),
        "ingest": {
            "ingest_dir": _rates(documents, report["chunks"], dir_seconds),
            "http": http_rates,
            "incremental": _incremental(again, again_seconds, len(changed), documents),
        },
        **served,
    }
    result["rss"] |= ingest_memory
    if config.db or config.replicas != (1,):
        result["replicas"] = {
            str(n): {"http_ingest": http[n][0], "search_concurrent": by_replicas[n]}
            for n in config.replicas
        }
    shutil.rmtree(work, ignore_errors=True)
    return result


class Brains:
    """Where one run's brains live: files in its folder, or scratch schemas of the server
    database `server` (named after `tag`), dropped by `drop`."""

    def __init__(self, work: Path, server: str | None, tag: str) -> None:
        self.work, self.server, self.tag = work, server, tag
        self.made: list[str] = []

    def url(self, name: str) -> str:
        if self.server is None:
            return str(self.work / f"{name}.db")
        from nexusbrain.storage import postgres

        url = postgres.scratch_url(self.server, f"bench_{self.tag}_{name}")
        postgres.drop(url)  # left by a bench that was killed
        self.made.append(url)
        return url

    def drop(self) -> None:
        from nexusbrain.storage import postgres

        for url in self.made:
            postgres.drop(url)


def http_ingest(
    folder: Path,
    documents: int,
    db: str,
    replicas: int,
    work: Path,
    env: Mapping[str, str],
    config: BenchConfig,
    label: str,
    phase: Progress,
) -> tuple[dict[str, Any], dict[str, int]]:
    """Every document through POST /ingest/markdown/batch, the clients spread over
    `replicas` servers of one fresh brain; (the rates, the first server's peak RSS and its
    PSS once the last batch is answered)."""
    servers = [
        ChildServer(db, env, work / f"http-server-{replicas}-{n}.log", config.workers)
        for n in range(replicas)
    ]
    try:
        for server in servers:  # one at a time: the first migrates the new brain
            server.__enter__()
            wait_for_answer(server.url, Call("GET", "/health"), 120, server.alive)
        clients = max(INGEST_CLIENTS, replicas)
        with RssSampler(servers[0].rss) as rss:
            result = run_calls(
                [server.url for server in servers],
                _ingest_calls(folder, documents),
                clients=clients,
                keep_bodies=True,
                total=-(-documents // INGEST_BATCH),
                progress=lambda _, done, total: phase(
                    f"{label}: HTTP ingest, {replicas} server(s)", done, total
                ),
            )
        pss = servers[0].pss()
        for server in servers:
            server.check_alive()
        answering = servers[0].answering()
    finally:
        for server in servers:
            server.stop()
    chunks = sum(int(body["chunks"]) for body in result.bodies)
    created = sum(int(body["counts"]["created"]) for body in result.bodies)
    rates = _rates(created, chunks, result.wall_seconds)
    rates["clients"] = clients
    rates["batch"] = INGEST_BATCH
    rates["replicas"] = replicas
    rates["workers"] = answering  # processes of each server, as seen while it ran
    rates["request_ms"] = summarise(result.milliseconds, result.wall_seconds).as_dict()
    return rates, {"peak_ingest_bytes": rss.peak, "after_ingest_pss_bytes": pss}


def _ingest_calls(folder: Path, documents: int) -> Iterator[Call]:
    for start in range(0, documents, INGEST_BATCH):
        batch = []
        for index in range(start, min(start + INGEST_BATCH, documents)):
            path = folder / name_of(index)
            content = path.read_text(encoding="utf-8")
            title = content.split("\n", 1)[0].lstrip("# ")
            batch.append({"title": title, "content": content, "uri": path.resolve().as_posix()})
        yield Call("POST", "/ingest/markdown/batch", body={"documents": batch})


def _serve_and_search(
    db: str,
    env: Mapping[str, str],
    work: Path,
    queries: list[str],
    config: BenchConfig,
    label: str,
    phase: Progress,
) -> dict[str, Any]:
    warmup, queries = queries[:WARMUP], queries[WARMUP:]
    with ChildServer(db, env, work / "server.log", config.workers) as server:
        answered = wait_for_answer(
            server.url, _search(warmup[0], SearchMode.BALANCED), 300, server.alive
        )
        cold_start = answered - server.started_at
        time.sleep(1.0)
        idle, idle_pss = server.rss(), server.pss()
        with RssSampler(server.rss) as rss:
            every = [_search(q, SearchMode.BALANCED) for q in warmup + queries]
            first = _summary(_warm([server.url], every, config.workers))
            sequential = {}
            for name, calls in _series(queries):
                phase(f"{label}: {name}, one client", 0, 1)
                sequential[name] = _summary(run_calls(server.url, calls))
            concurrent = {}
            for name, calls in _series(queries, (SearchMode.BALANCED,)):
                phase(f"{label}: {name}, {config.concurrency} clients", 0, 1)
                result = run_calls(server.url, calls, clients=config.concurrency)
                concurrent[name] = _summary(result)
        by_replicas = {
            n: concurrent["search balanced"] if n == 1 else _replicated(server, n, queries, config)
            for n in config.replicas
        }
        stats = run_calls(server.url, [Call("GET", "/stats")], keep_bodies=True).bodies[0]
        server.check_alive()
        searched_pss = server.pss()
    return {
        "cold_start_seconds": round(cold_start, 3),
        "rss": {
            "idle_bytes": idle,
            "peak_search_bytes": rss.peak,
            "idle_pss_bytes": idle_pss,
            "after_search_pss_bytes": searched_pss,
        },
        "latency": {
            "k": K,
            "concurrency": config.concurrency,
            "first": {"search balanced": first},
            "sequential": sequential,
            "concurrent": concurrent,
        },
        "server_envelope": stats["envelope"],
        "stats": stats,
        "by_replicas": by_replicas,
    }


def _replicated(
    first: ChildServer, replicas: int, queries: list[str], config: BenchConfig
) -> dict[str, float]:
    """Balanced /search from `config.concurrency` clients spread over `replicas` servers of
    one brain (the running one and more)."""
    more = [
        ChildServer(
            first.db, first.env, first.log_path.with_name(f"replica-{n}.log"), first.workers
        )
        for n in range(1, replicas)
    ]
    try:
        for server in more:
            server.__enter__()
            wait_for_answer(server.url, _search(queries[0], SearchMode.BALANCED), 300, server.alive)
        urls = [first.url] + [server.url for server in more]
        calls = [_search(q, SearchMode.BALANCED) for q in queries]
        _warm(urls[1:], calls, (replicas - 1) * config.workers)  # the first server is warm
        return _summary(run_calls(urls, calls, clients=config.concurrency))
    finally:
        for server in more:
            server.stop()


def _warm(urls: list[str], calls: list[Call], clients: int) -> LoadResult:
    """Every worker of these servers answers each call once before anything is timed:
    `clients` connections made at once (one a worker: they are spread evenly, and client n
    talks to url n mod their count), each sending every call. A worker's first search for a
    word reads that word's postings from the database, about twice a cached search's cost;
    warmed on only a few queries, the worker that had answered the one-client series met
    none of the concurrent series' words first, and the other met all of them there. What
    the warm-up took is reported too: each worker's first searches for these queries."""
    with ThreadPoolExecutor(clients) as pool:
        done = [pool.submit(run_calls, urls[n % len(urls)], calls) for n in range(clients)]
        results = [future.result() for future in done]
    milliseconds = tuple(ms for result in results for ms in result.milliseconds)
    statuses = Counter[int]()
    for result in results:
        statuses.update(result.statuses)
    return LoadResult(milliseconds, max(r.wall_seconds for r in results), dict(statuses))


def _series(
    queries: list[str], modes: Sequence[SearchMode] = tuple(SearchMode)
) -> Iterator[tuple[str, list[Call]]]:
    for mode in modes:
        yield f"search {mode.value}", [_search(q, mode) for q in queries]
    for mode in modes:
        yield f"recall {mode.value}", [_recall(q, mode) for q in queries]


def _search(query: str, mode: SearchMode) -> Call:
    return Call("GET", "/search", params={"q": query, "k": K, "mode": mode.value})


def _recall(query: str, mode: SearchMode) -> Call:
    return Call("POST", "/recall", body={"query": query, "k": K, "mode": mode.value})


def _summary(result: LoadResult) -> dict[str, float]:
    return summarise(result.milliseconds, result.wall_seconds).as_dict()


def _rates(documents: int, chunks: int, seconds: float) -> dict[str, Any]:
    return {
        "documents": documents,
        "chunks": chunks,
        "seconds": round(seconds, 3),
        "docs_per_second": round(documents / seconds, 1),
        "chunks_per_second": round(chunks / seconds, 1),
    }


def _incremental(
    report: Mapping[str, Any], seconds: float, changed: int, documents: int
) -> dict[str, Any]:
    return {
        "changed_files": changed,
        "updated": report["updated"],
        "unchanged": report["unchanged"],
        "chunks": report["chunks"],
        "seconds": round(seconds, 3),
        "changed_per_second": round(changed / seconds, 1),
        "files_scanned_per_second": round(documents / seconds, 1),
    }


def _change_files(corpus: Corpus, folder: Path, documents: int, seed: int) -> list[int]:
    """Edit 1% of the documents (at least one): each gets a new section at the end."""
    rng = np.random.default_rng([seed, 4])
    count = max(1, round(documents * CHANGED_SHARE))
    chosen = sorted(int(i) for i in rng.choice(documents, size=count, replace=False))
    for index in chosen:
        write_doc(folder, corpus.changed(corpus.document(index)))
    return chosen


def _restore_files(corpus: Corpus, folder: Path, indices: Sequence[int]) -> None:
    for index in indices:
        write_doc(folder, corpus.document(index))


def _disk_bytes(db: Path) -> int:
    """The database with its WAL and shared-memory files and the vector index's cache."""
    parts = [Path(f"{db}{suffix}") for suffix in ("", "-wal", "-shm")]
    parts += db.parent.glob(f"{db.name}.vectors-*.npz")
    return sum(part.stat().st_size for part in parts if part.exists())


def run(config: BenchConfig, phase: Progress = _quiet) -> dict[str, Any]:
    """The whole report: settings, environment, and one entry per scale."""
    from nexusbrain.bench.report import environment

    about = environment()
    scales = measure(config, phase)
    breaches = [
        f"{scale['documents']:,} docs: {b['message']}"
        for scale in scales
        for b in scale["envelope"]["breaches"]
    ]
    return {
        "bench": {
            "scales": list(config.scales),
            "searches": config.searches,
            "concurrency": config.concurrency,
            "workers": config.workers,
            "runs": config.runs,
            "k": K,
            "seed": config.seed,
            "http_ingest_clients": INGEST_CLIENTS,
            "http_ingest_batch": INGEST_BATCH,
        },
        "environment": about,
        "scales": scales,
        "envelope": {"name": config.envelope, "ok": not breaches, "breaches": breaches},
    }
