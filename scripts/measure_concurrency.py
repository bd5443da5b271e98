"""Balanced /search from one client and from several, for one source tree or several,
interleaved in one session, over one brain at a bench scale.

    python scripts/measure_concurrency.py --db brain.db [--documents 20000] [--rounds 2] \
        [--searches 200] [--concurrency 8] [--workers 1] [--build] [--ingest 2000] \
        [--tree /path/to/checkout/src[=brain.db] ...]

`nexusbrain bench` builds its brains afresh on every run; this builds the bench's corpus of
--documents into --db once (`ingest-dir` of the corpus, the bench's seed: into a SQLite file
that does not exist yet, or with --build into a PostgreSQL schema, dropped first), then
serves it, so that an A/B of two trees costs minutes, not an ingest each. The queries are
the bench's own, so the figures are comparable with its report. A tree given as SRC=DB serves
a brain of its own, built by that tree's code when the file does not exist yet: for trees
whose schemas differ (an older tree cannot open a brain a newer one migrated).

Each round serves each tree in turn (one server at a time, so that they do not share the
cores), warms it with one pass of the queries from --concurrency clients, then times one pass
from one client and one from --concurrency clients. Over those two passes it counts the
server's CPU time a search and samples its RSS (its workers' too, summed as the bench does),
and at their end it reads its PSS (pages the processes share counted once). With --ingest N,
each round also feeds each tree's server the corpus's first N documents through HTTP, as the
bench does, into a fresh SQLite brain (chunks a second and the server's CPU seconds). The
report gives each tree's median over the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from nexusbrain.bench.corpus import Corpus, CorpusSpec
from nexusbrain.bench.load import Call, LoadResult, RssSampler, run_calls, wait_for_answer
from nexusbrain.bench.runner import INGEST_CLIENTS, _ingest_calls
from nexusbrain.bench.server import ChildServer, child_env, run_cli
from nexusbrain.envelopes import DEFAULT_ENVELOPE
from nexusbrain.latency import summarise
from nexusbrain.storage import postgres


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True, help="a brain: a SQLite file or a postgresql:// URL")
    parser.add_argument("--documents", type=int, default=20_000, help="the bench scale it holds")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--workers", type=int, default=1, help="serve --workers")
    parser.add_argument("--build", action="store_true", help="(re)build a postgresql:// brain")
    parser.add_argument("--ingest", type=int, default=0, help="documents through HTTP a round")
    parser.add_argument(
        "--tree", action="append", default=[], help="a src folder to serve (SRC or SRC=DB)"
    )
    args = parser.parse_args()
    corpus = Corpus(CorpusSpec())
    queries = corpus.queries(args.searches, args.documents)
    calls = [Call("GET", "/search", params={"q": q, "k": 10, "mode": "balanced"}) for q in queries]
    with tempfile.TemporaryDirectory(prefix="nexusbrain-concurrency-") as scratch:
        brains = dict(_tree_and_brain(spec, args.db) for spec in args.tree or [""])
        folder = Path(scratch) / "corpus"
        for tree, db in brains.items():
            if (args.build and db == args.db) or ("://" not in db and not Path(db).exists()):
                _build_brain(db, tree, corpus, args.documents, folder, args.build)
        if args.ingest and not folder.exists():
            corpus.write(folder, args.ingest)
        figures: dict[str, list[dict[str, float]]] = {tree: [] for tree in brains}
        for round_ in range(args.rounds):  # the trees interleaved, round by round
            for n, (tree, rows) in enumerate(figures.items()):
                log = Path(scratch) / f"server-{round_}-{n}.log"
                rows.append(_measure(args, tree, brains[tree], calls, log))
                if args.ingest:
                    fresh = Path(scratch) / f"ingest-{round_}-{n}.db"
                    rows[-1]["ingest"], rows[-1]["ingest_cpu"] = _ingest(
                        args, tree, fresh, folder, log
                    )
                print(f"round {round_ + 1} {tree or 'installed'}: {_line(rows[-1])}", flush=True)
    print(f"median of {args.rounds} rounds, {args.concurrency} clients, --workers {args.workers}:")
    for tree, rows in figures.items():
        median = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
        print(f"  {tree or 'installed'}: {_line(median)}")


def _tree_and_brain(spec: str, db: str) -> tuple[str, str]:
    tree, _, own = spec.partition("=")
    return tree, own or db


def _tree_env(tree: str) -> dict[str, str]:
    env = child_env(DEFAULT_ENVELOPE, {"PYTHONPATH": tree} if tree else {})
    if not tree:
        env.pop("PYTHONPATH", None)
    return env


def _build_brain(
    db: str, tree: str, corpus: Corpus, documents: int, folder: Path, drop: bool
) -> None:
    if drop:
        postgres.drop(db)
    if not folder.exists():
        corpus.write(folder, documents)
    report, seconds = run_cli(db, _tree_env(tree), "ingest-dir", str(folder))
    print(f"built {db}: {report['chunks']:,} chunks in {seconds:.0f} s", flush=True)


def _measure(
    args: argparse.Namespace, tree: str, db: str, calls: list[Call], log: Path
) -> dict[str, float]:
    """One round's figures from a server of this tree (the installed package: "")."""
    with ChildServer(db, _tree_env(tree), log, args.workers) as server:
        wait_for_answer(server.url, calls[0], 300, server.alive)
        run_calls(server.url, calls, clients=args.concurrency)  # warm every worker
        before = _cpu(server)
        with RssSampler(server.rss) as rss:
            one = run_calls(server.url, calls)
            many = run_calls(server.url, calls, clients=args.concurrency)
        cpu = (_cpu(server) - before) / (2 * len(calls)) * 1e3
        pss = _pss(server)
        server.check_alive()
    return _row(one, many) | {"rss": rss.peak / 2**20, "pss": pss / 2**20, "cpu": cpu}


def _cpu(server: ChildServer) -> float:
    """The CPU seconds the server's processes have used: a search's cost, which other jobs
    on the machine lengthen less than they do its wall time."""
    assert server._ps is not None
    return sum(sum(p.cpu_times()[:2]) for p in [server._ps, *server._ps.children()])


def _pss(server: ChildServer) -> int:
    """The server's proportional set size: its workers' too, a page they share counted once."""
    assert server._ps is not None
    return sum(int(p.memory_full_info().pss) for p in [server._ps, *server._ps.children()])


def _ingest(
    args: argparse.Namespace, tree: str, db: Path, folder: Path, log: Path
) -> tuple[float, float]:
    """HTTP ingest of the corpus's first --ingest documents, as the bench's: (chunks a second,
    the server's CPU seconds)."""
    with ChildServer(db, _tree_env(tree), log, args.workers) as server:
        wait_for_answer(server.url, Call("GET", "/health"), 120, server.alive)
        before = _cpu(server)
        calls = _ingest_calls(folder, args.ingest)
        result = run_calls(server.url, calls, clients=INGEST_CLIENTS, keep_bodies=True)
        cpu = _cpu(server) - before
        server.check_alive()
    return sum(int(body["chunks"]) for body in result.bodies) / result.wall_seconds, cpu


def _row(one: LoadResult, many: LoadResult) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, result in (("1", one), ("n", many)):
        summary = summarise(result.milliseconds, result.wall_seconds)
        out[f"{name}_rps"] = summary.throughput
        out[f"{name}_p50"] = summary.p50
        out[f"{name}_p95"] = summary.p95
    out["ratio"] = out["n_rps"] / out["1_rps"]
    return out


def _line(row: dict[str, float]) -> str:
    return (
        f"1 client {row['1_rps']:.1f} req/s (p50 {row['1_p50']:.1f}, p95 {row['1_p95']:.1f} ms); "
        f"N clients {row['n_rps']:.1f} req/s (p50 {row['n_p50']:.1f}, p95 {row['n_p95']:.1f} ms); "
        f"N/1 {row['ratio']:.2f}; server CPU {row['cpu']:.2f} ms a search; "
        f"peak RSS {row['rss']:.0f} MB, PSS {row['pss']:.0f} MB"
        + (
            f"; HTTP ingest {row['ingest']:,.0f} chunks/s, server CPU {row['ingest_cpu']:.1f} s"
            if "ingest" in row
            else ""
        )
    )


if __name__ == "__main__":
    main()
