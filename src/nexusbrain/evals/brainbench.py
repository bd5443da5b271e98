"""brainbench: the mode-independent system suite, small enough to run in every sweep.

* Ingest: a synthetic corpus (`bench.corpus`, the generator `nexusbrain bench` uses: Zipfian
  words, log-normal sizes, markdown structure), `DOCUMENTS` documents into a scratch workspace
  through the normal ingest path; documents and chunks per second.
* Search latency: `QUERIES` keyword queries from the same generator, each searched once in the
  default mode (top 10, one result per document); p50 and p99 wall times (nearest rank).
* Graph correctness: a fixed script of bitemporal facts on a scratch graph, checked against
  the answers it must give (supersession, as-of valid time, as-of transaction time, history,
  two-hop traversal, duplicates). The metric is the share of checks that pass; each failure is
  named in the run's details.

None of it depends on the search mode, so a sweep runs it once and records mode "n/a".
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from nexusbrain.bench.corpus import Corpus, CorpusSpec
from nexusbrain.brain import Brain
from nexusbrain.clock import FrozenClock
from nexusbrain.config import Profile, Settings
from nexusbrain.evals.targets import SearchRequest, WorkspaceFactory
from nexusbrain.graph import AsOf, Graph
from nexusbrain.graph.model import CURRENT
from nexusbrain.latency import percentile
from nexusbrain.records import WriteStatus

DOCUMENTS = 150
QUERIES = 60
BATCH = 50


@dataclass(frozen=True, slots=True)
class BrainbenchResult:
    metrics: dict[str, float]
    latencies_ms: tuple[float, ...]
    failed_checks: tuple[str, ...]
    corpus: str


def run_brainbench(
    factory: WorkspaceFactory, *, seed: int, documents: int = DOCUMENTS, queries: int = QUERIES
) -> BrainbenchResult:
    corpus = Corpus(CorpusSpec(seed=seed))
    docs = list(corpus.documents(documents))
    asked = corpus.queries(queries, documents)
    with factory() as workspace:
        started = time.perf_counter()
        for start in range(0, len(docs), BATCH):
            batch = docs[start : start + BATCH]
            workspace.add_markdown([(d.name, d.title, d.content) for d in batch])
        ingest_seconds = time.perf_counter() - started
        chunks = sum(1 for r in workspace.export_records() if r.get("type") == "chunk")
        latencies = []
        request = SearchRequest(k=10, mode="balanced", best_per_document=True)
        for query in asked:
            began = time.perf_counter()
            workspace.search(query, request)
            latencies.append((time.perf_counter() - began) * 1000)
    failed = graph_failures()
    metrics = {
        "ingest_docs_per_s": len(docs) / ingest_seconds,
        "ingest_chunks_per_s": chunks / ingest_seconds,
        "search_p50_ms": percentile(latencies, 50),
        "search_p99_ms": percentile(latencies, 99),
        "graph_checks_passed": 1 - len(failed) / len(GRAPH_CHECKS),
    }
    label = f"synthetic corpus (bench.corpus seed {seed}, {documents} documents, {queries} queries)"
    return BrainbenchResult(metrics, tuple(latencies), tuple(failed), label)


# graph correctness

T1 = datetime(2020, 1, 1, tzinfo=UTC)
T2 = datetime(2022, 1, 1, tzinfo=UTC)


def _script(graph: Graph, clock: FrozenClock) -> datetime:
    """The facts every check reads; returns the transaction time between the two jobs."""
    graph.relate("Ada", "works_at", "Acme", valid_at=T1)
    graph.relate("Acme", "located_in", "Berlin", valid_at=T1)
    between = clock()
    clock.advance(days=1)
    graph.relate("Ada", "works_at", "Globex", valid_at=T2)
    graph.relate("Globex", "located_in", "Paris", valid_at=T2)
    clock.advance(days=1)
    return between


def _targets(graph: Graph, as_of: AsOf = CURRENT) -> set[str]:
    return {r.to_name for r in graph.relations("Ada", type="works_at", as_of=as_of)}


def _windows(graph: Graph) -> dict[str, datetime | None]:
    return {r.to_name: r.invalid_at for r in graph.relations("Ada", type="works_at")}


def _history(graph: Graph) -> list[tuple[datetime | None, str | None]]:
    acme = next(r for r in graph.relations("Ada", type="works_at") if r.to_name == "Acme")
    return [(v.invalid_at, v.reason) for v in graph.history(acme.id).versions]


def _two_hops(graph: Graph, valid: datetime) -> set[str]:
    hops = graph.traverse("Ada", depth=2, as_of=AsOf(valid=valid)).hops
    return {h.relationship.to_name for h in hops if h.depth == 2}


NOW = datetime(2025, 6, 1, tzinfo=UTC)
GRAPH_CHECKS: dict[str, Callable[[Graph, datetime], bool]] = {
    "a new functional fact closes the old one's valid window": lambda g, _: (
        _windows(g) == {"Acme": T2, "Globex": None}
    ),
    "as of a valid time, the fact that held then": lambda g, _: (
        _targets(g, AsOf(valid=datetime(2021, 1, 1, tzinfo=UTC))) == {"Acme"}
        and _targets(g, AsOf(valid=NOW)) == {"Globex"}
    ),
    "as of a transaction time, what was known then": lambda g, known: (
        _targets(g, AsOf(known=known)) == {"Acme"}
    ),
    "history keeps the contradicted version and its successor": lambda g, _: (
        _history(g) == [(None, "contradicted"), (T2, None)]
    ),
    "two-hop traversal holds one valid time throughout": lambda g, _: (
        _two_hops(g, NOW) == {"Paris"}
        and _two_hops(g, datetime(2021, 1, 1, tzinfo=UTC)) == {"Berlin"}
    ),
    "re-stating a current fact is a duplicate": lambda g, _: (
        g.relate("Ada", "works_at", "Globex", valid_at=T2).status is WriteStatus.DUPLICATE
    ),
}


def graph_failures() -> list[str]:
    """The names of the graph checks that fail, on a fresh scratch graph."""
    with tempfile.TemporaryDirectory(prefix="nexusbrain-brainbench-") as folder:
        clock = FrozenClock(datetime(2026, 1, 1, tzinfo=UTC))
        settings = Settings(db=Path(folder) / "graph.db", embedder=Profile.NONE)
        with Brain.open(settings=settings, clock=clock) as brain:
            known = _script(brain.graph, clock)
            return [
                name
                for name, check in GRAPH_CHECKS.items()
                if not _passes(check, brain.graph, known)
            ]


def _passes(check: Callable[[Graph, datetime], bool], graph: Graph, known: datetime) -> bool:
    try:
        return bool(check(graph, known))
    except Exception:  # a check that raises has failed; the run reports which
        return False
