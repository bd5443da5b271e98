"""Sweep the quality reranker's depth, weight and passage cut over the six dev sets, and time it.

Usage:
  python scripts/tune_rerank.py score --datasets ../shared/datasets --only med --out med.json
      [--depths 10,20,30] [--weights 0.3,0.5,0.7,1.0] [--cuts 256,128] [--sample 40]
  python scripts/tune_rerank.py check --datasets ../shared/datasets --only med
  python scripts/tune_rerank.py judge med.json cisi.json ... [--json lodo.json]
  python scripts/tune_rerank.py latency med.json scifact.json ... [--rounds 1]

`score` builds each set's edge brain through the eval harness itself (evals/beir.py,
evals/locomo.py over `nexusbrain eval`'s scratch brains, one per LoCoMo conversation), and for
each judged query takes the fused ranking the `balanced` mode cuts its hits from. The quality
model (MiniLM, one thread, its vectors kept by text hash) scores the fused top candidates once
per passage cut; every depth x weight x cut is then applied offline with the reranker's own
`combine` and the pipeline's `distinct`, and scored by the harness's metrics (replayed through
the same suite, so that queries, judgments and averages are the eval's). It also keeps the
candidate texts of a sample of queries for `latency`.

`check` runs the real pipeline with the reranker installed for two settings on a set and
asserts that every query's ranking equals the offline one (the sweep's faithfulness).

`judge` chooses leave-one-dataset-out with fusion_lodo.py's rule and folds, against `edge`
alone (nDCG@10; R@5 on LoCoMo, the eval's averages, adversarial questions apart).

`latency` times the reranker's score call per search with nothing cached (a fresh cache per
search, the model's own thread count: one per core), at each depth and cut, interleaved.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import fusion_lodo as lodo
import tune_hybrid as th

from nexusbrain.brain import Brain
from nexusbrain.cli.eval_targets import BrainTarget, ModelChoice, scratch_factory
from nexusbrain.embeddings.onnx import OnnxEmbedder
from nexusbrain.embeddings.profiles import MODELS
from nexusbrain.evals import beir, locomo
from nexusbrain.evals.runner import the_metrics
from nexusbrain.evals.runs import EvalRun
from nexusbrain.evals.targets import Retrieved, SearchRequest, Workspace, WorkspaceFactory
from nexusbrain.ingest.conversation import Session
from nexusbrain.records import SearchFilters, SearchMode
from nexusbrain.rerankers.cosine import CosineReranker
from nexusbrain.retrieval.copies import distinct
from nexusbrain.retrieval.modes import RerankConfig, preset
from nexusbrain.retrieval.rerank import combine
from nexusbrain.retrieval.vectors import embed_text

DEPTHS = (10, 20, 30)
WEIGHTS = (0.3, 0.5, 0.7, 1.0)
CUTS = (256, 128)
BASE = "edge"
K = 100  # results kept per search: BEIR's eval asks 100; LoCoMo's 10 are the first 10 of them
METRICS = the_metrics(["ndcg@10", "recall@5", "recall@10", "recall@100"])
Setting = tuple[int, float, int]  # depth, weight, cut


def name_of(setting: Setting) -> str:
    depth, weight, cut = setting
    return f"d{depth} w{weight} t{cut}"


def scorer(cut: int, threads: int | None = 1) -> CosineReranker:
    """The quality reranker at a passage cut (the query is cut alike, as the model's
    tokenizer does)."""
    return CosineReranker(OnnxEmbedder(MODELS / "minilm", threads=threads, max_tokens=cut))


class Recorder(BrainTarget):
    """A scratch brain that answers the harness with edge alone, and records what every
    setting would have answered (by scope and query)."""

    def __init__(
        self,
        brain: Brain,
        settings: Sequence[Setting],
        scorers: Mapping[int, CosineReranker],
        rankings: dict[str, dict[tuple[str | None, str], list[Retrieved]]],
        samples: list[dict[str, Any]],
        sample_rate: float,
        fraction: float = 1.0,
    ) -> None:
        super().__init__(brain, label="scratch")
        self.settings, self.scorers, self.rankings = settings, scorers, rankings
        self.samples, self.sample_rate, self.fraction = samples, sample_rate, fraction
        self.rng = random.Random(7)

    def search(
        self, query: str, request: SearchRequest, *, path_prefix: str | None = None
    ) -> list[Retrieved]:
        searcher = self.brain._searcher  # the fused ranking a search cuts its hits from
        config = preset(SearchMode(request.mode))
        filters = SearchFilters(path_prefix=path_prefix)
        answer = searcher.answer(
            query, K, filters, config, best_per_document=request.best_per_document
        )
        kept = answer.kept
        chunks = searcher.store.fetch_chunks([f.chunk_id for f in kept])
        alone = _shown(kept, chunks)
        if [r.chunk_id for r in alone] != [h.chunk_id for h in answer.hits]:
            raise AssertionError(f"the offline edge ranking differs from the search's: {query!r}")
        key = (path_prefix, query)
        self.rankings.setdefault(BASE, {})[key] = alone
        top = kept[: max(s[0] for s in self.settings)]
        texts = [
            embed_text(chunks[f.chunk_id][0].text, chunks[f.chunk_id][0].heading_path) for f in top
        ]
        if self.rng.random() < self.sample_rate:
            self.samples.append({"query": query, "texts": texts})
        if not chosen(query, self.fraction):
            for setting in self.settings:  # not in the sample: judged by no variant
                self.rankings.setdefault(name_of(setting), {})[key] = alone
            return alone[: request.k]
        scores = {cut: s.score(query, texts) for cut, s in self.scorers.items()}
        for depth, weight, cut in self.settings:
            head = top[:depth]
            order = combine([f.score for f in head], scores[cut][:depth], weight)
            moved = [head[i] for i in order] + kept[depth:]
            self.rankings.setdefault(name_of((depth, weight, cut)), {})[key] = _shown(moved, chunks)
        return alone[: request.k]


def chosen(query: str, fraction: float) -> bool:
    """Whether a query is in the seeded sample that `--fraction` scores (by its text's hash)."""
    if fraction <= 0.0:
        return False
    drawn = int(hashlib.sha256(query.encode("utf-8")).hexdigest()[:8], 16)
    return fraction >= 1.0 or drawn < fraction * 2**32


def _shown(kept: Sequence[Any], chunks: Mapping[int, Any]) -> list[Retrieved]:
    """The hits a search shows from this order: the first K distinct texts (copies.py)."""
    out = []
    for fused in distinct(kept, chunks, K).kept:
        chunk, head = chunks[fused.chunk_id]
        out.append(Retrieved(fused.chunk_id, head.uri, chunk.unit, ""))
    return out


@dataclass
class Replay:
    """A workspace that stores nothing and answers each query with a recorded ranking."""

    ranking: Mapping[tuple[str | None, str], list[Retrieved]]

    def search(
        self, query: str, request: SearchRequest, *, path_prefix: str | None = None
    ) -> list[Retrieved]:
        return self.ranking[(path_prefix, query)][: request.k]

    def describe(self) -> Mapping[str, Any]:
        return {"target": "replay"}

    def export_records(self) -> Iterator[Mapping[str, Any]]:
        return iter(())

    def add_markdown(self, items: Sequence[tuple[str, str, str]]) -> None:
        pass

    def add_folder(self, folder: Path) -> int:
        return 0

    def add_sessions(self, sessions: Sequence[Session], index_roles: Sequence[str] | None) -> None:
        pass


def factory_of(make: Any) -> WorkspaceFactory:
    @contextmanager
    def opened() -> Iterator[Workspace]:
        yield make()

    return opened


def recording(
    settings: Sequence[Setting], scorers: Mapping[int, CosineReranker], recorder: dict[str, Any]
) -> WorkspaceFactory:
    edge = scratch_factory(models=ModelChoice(embedder="edge", reranker="none"))

    @contextmanager
    def opened() -> Iterator[Workspace]:
        with edge() as workspace:
            assert isinstance(workspace, BrainTarget)
            yield Recorder(workspace.brain, settings, scorers, **recorder)

    return opened


def suite(name: str, datasets: Path, factory: WorkspaceFactory, request: SearchRequest) -> EvalRun:
    if name == "locomo":
        return locomo.run_locomo(datasets / "locomo" / "locomo_dev.json", factory, request, METRICS)
    split = th.BEIR_SETS[name][0]
    return beir.run_beir(datasets / name, split, factory, request, METRICS)


def request_of(name: str) -> SearchRequest:
    """The eval's request: BEIR's one result per document, LoCoMo's chunks (turns)."""
    return SearchRequest(K, "balanced", best_per_document=name != "locomo")


def averaged(run: EvalRun, fraction: float) -> dict[str, Any]:
    """A run as tune_hybrid's results hold it: the eval's means, and the per-query scores
    those means average (LoCoMo's adversarial questions apart, as the eval reports them), over
    the queries in the sample."""
    apart = f"{locomo.ADVERSARIAL} "
    scores = [
        s
        for s in run.per_query
        if not (s.group or "").startswith(apart) and chosen(s.query, fraction)
    ]
    out: dict[str, Any] = {m.key: statistics.mean(s.scores[m.key] for s in scores) for m in METRICS}
    out["per_query"] = {m.key: [s.scores[m.key] for s in scores] for m in METRICS}
    return out


def score(args: argparse.Namespace) -> None:
    settings = list(itertools.product(args.depths, args.weights, args.cuts))
    scorers = {cut: scorer(cut) for cut in args.cuts}
    rankings: dict[str, dict[tuple[str | None, str], list[Retrieved]]] = {}
    samples: list[dict[str, Any]] = []
    name = args.only
    started = time.perf_counter()
    recorder = {
        "rankings": rankings,
        "samples": samples,
        "sample_rate": args.sample_rate,
        "fraction": args.fraction,
    }
    suite(name, args.datasets, recording(settings, scorers, recorder), request_of(name))
    recorded = time.perf_counter() - started
    results = (
        {}
        if args.fraction <= 0
        else {  # 0: only the latency samples
            variant: averaged(
                suite(
                    name, args.datasets, factory_of(lambda r=ranking: Replay(r)), request_of(name)
                ),
                args.fraction,
            )
            for variant, ranking in rankings.items()
        }
    )
    for variant, row in results.items():
        print(f"{name} {variant:16s} " + "  ".join(f"{m.key} {row[m.key]:.4f}" for m in METRICS))
    cached = {cut: s.cached() for cut, s in scorers.items()}
    queries = len(next(iter(results.values()))["per_query"]["ndcg@10"]) if results else 0
    print(f"{name}: {queries} queries, recorded in {recorded:.0f} s, texts embedded: {cached}")
    args.out.write_text(
        json.dumps({"results": {name: results}, "samples": {name: samples}, "seconds": recorded}),
        encoding="utf-8",
    )


def check(args: argparse.Namespace) -> None:
    """The real pipeline, the reranker installed, against the offline ranking."""
    chosen: list[Setting] = [(30, 1.0, 256), (10, 0.5, 128)]
    scorers = {cut: scorer(cut) for cut in {c for _, _, c in chosen}}
    rankings: dict[str, dict[tuple[str | None, str], list[Retrieved]]] = {}
    recorder = {"rankings": rankings, "samples": [], "sample_rate": 0.0}
    name = args.only
    edge = scratch_factory(models=ModelChoice(embedder="edge", reranker="none"))
    request = request_of(name)
    mismatches = 0

    @contextmanager
    def opened() -> Iterator[Workspace]:
        nonlocal mismatches
        with edge() as workspace:
            assert isinstance(workspace, BrainTarget)
            recording_ = Recorder(workspace.brain, chosen, scorers, **recorder)
            yield recording_
            searcher = workspace.brain._searcher
            for depth, weight, cut in chosen:
                searcher.reranker, searcher.rerank_budget = scorers[cut], 600.0
                config = replace(
                    preset(SearchMode.BALANCED), rerank=RerankConfig(depth, 600.0, weight)
                )
                for (scope, query), offline in rankings[name_of((depth, weight, cut))].items():
                    hits = workspace.brain.search(
                        query,
                        k=K,
                        filters=SearchFilters(path_prefix=scope),
                        config=config,
                        best_per_document=request.best_per_document,
                    )
                    if [h.chunk_id for h in hits] != [r.chunk_id for r in offline]:
                        mismatches += 1
            searcher.reranker = None
            for ranking in rankings.values():
                ranking.clear()  # the next conversation's brain numbers its chunks anew

    suite(name, args.datasets, opened, request)
    print(f"{name}: {mismatches} rankings differ between the pipeline and the offline sweep")
    if mismatches:
        raise SystemExit(1)


def judge(args: argparse.Namespace) -> None:
    results: th.Results = {}
    for path in args.scores:
        results.update(json.loads(path.read_text(encoding="utf-8"))["results"])
    sets = tuple(name for name in lodo.SETS if name in results)  # those scored so far
    table = lodo.judged(results, base=BASE, sets=sets)
    ranked = sorted(  # the best mean gain first
        table.items(), key=lambda v: -statistics.mean(float(c["gain"]) for c in v[1].values())
    )
    chosen = lodo.printed(dict(ranked), sets)
    print("\nset | metric | edge | " + " | ".join(args.show or []))
    for name in sets:
        metric = lodo.MAIN[name]
        cells = [f"{results[name][v][metric]:.4f}" for v in [BASE, *(args.show or [])]]
        print(f"{name} | {metric} | " + " | ".join(cells))
    if args.json:
        args.json.write_text(json.dumps({"table": table, "folds": chosen}), encoding="utf-8")


def latency(args: argparse.Namespace) -> None:
    """Wall time of one score call per search, nothing cached, interleaved over settings."""
    samples: list[dict[str, Any]] = []
    for path in args.scores:
        for found in json.loads(path.read_text(encoding="utf-8"))["samples"].values():
            samples.extend(found)
    embedders = {cut: scorer(cut, threads=None).embedder for cut in args.cuts}
    for embedder in embedders.values():
        embedder.encode(["warm up"])
    timings: dict[tuple[int, int], list[float]] = {}
    for _ in range(args.rounds):
        for sample in samples:
            for depth, cut in itertools.product(args.depths, args.cuts):
                fresh = CosineReranker(embedders[cut])  # nothing cached
                started = time.perf_counter()
                fresh.score(sample["query"], sample["texts"][:depth])
                timings.setdefault((depth, cut), []).append(time.perf_counter() - started)
    print(f"{len(samples)} searches x {args.rounds} rounds, load average {os.getloadavg()}")
    print("depth | cut | p50 ms | p95 ms | max ms")
    for (depth, cut), found in sorted(timings.items()):
        found.sort()
        p95 = found[min(len(found) - 1, int(0.95 * len(found)))]
        cells = (statistics.median(found), p95, found[-1])
        print(f"{depth} | {cut} | " + " | ".join(f"{1000 * c:.0f}" for c in cells))


def _numbers(kind: type, text: str) -> tuple[Any, ...]:
    return tuple(kind(x) for x in text.split(","))


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    for command in ("score", "check"):
        one = sub.add_parser(command)
        one.add_argument("--datasets", type=Path, default=Path("../shared/datasets"))
        one.add_argument("--only", required=True, choices=lodo.SETS)
        one.add_argument("--depths", type=lambda t: _numbers(int, t), default=DEPTHS)
        one.add_argument("--weights", type=lambda t: _numbers(float, t), default=WEIGHTS)
        one.add_argument("--cuts", type=lambda t: _numbers(int, t), default=CUTS)
        one.add_argument("--sample-rate", type=float, default=0.05)
        one.add_argument("--fraction", type=float, default=1.0, help="score this share of queries")
        one.add_argument("--out", type=Path)
    judging = sub.add_parser("judge")
    judging.add_argument("scores", type=Path, nargs="+")
    judging.add_argument("--show", action="append", help="also list this variant's means")
    judging.add_argument("--json", type=Path)
    timing = sub.add_parser("latency")
    timing.add_argument("scores", type=Path, nargs="+")
    timing.add_argument("--depths", type=lambda t: _numbers(int, t), default=DEPTHS)
    timing.add_argument("--cuts", type=lambda t: _numbers(int, t), default=CUTS)
    timing.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    {"score": score, "check": check, "judge": judge, "latency": latency}[args.command](args)


if __name__ == "__main__":
    main()
