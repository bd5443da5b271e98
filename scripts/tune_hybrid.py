"""Ablation of the hybrid pipeline on dev data (SciFact train, Cranfield, CISI, MED, techdocs,
LoCoMo dev).

Usage:
  python scripts/tune_hybrid.py --datasets ../shared/datasets --profile edge [--only scifact]
      [--variants JSON] [--json results.json] [--db-url postgresql://…?schema=tune]
  python scripts/tune_hybrid.py --judge results.json

Builds one scratch brain per dataset (cached under --work, or with --db-url as schemas
`<schema>_<dataset>_<profile>` of that PostgreSQL database; reused when they exist), then scores
each variant of the search config in process. Only dev sets are used; the numbers in
docs/tuning.md come from this script. Variants are named `name: field=value ...` overrides of
the `balanced` preset. When a variant named `bm25` is among them, each other variant's gain
over it on the main metric (nDCG@10; R@5 on LoCoMo) follows, with its paired-bootstrap 95%
interval (10,000 resamples, seed 42 keyed by set, metric and variant); `--judge` prints that
for results written earlier with --json.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from nexusbrain import storage
from nexusbrain.brain import Brain
from nexusbrain.config import Settings, parse_profile
from nexusbrain.errors import NotFound
from nexusbrain.evals.bootstrap import comparison_seed, paired_bootstrap
from nexusbrain.evals.locomo import session_time
from nexusbrain.evals.metrics import graded_ndcg_at_k, ndcg_at_k, recall_at_k
from nexusbrain.ingest.conversation import Session, Turn
from nexusbrain.records import SearchFilters, SearchMode
from nexusbrain.retrieval.modes import PRESETS, PRFConfig, SearchConfig
from nexusbrain.storage import postgres

VARIANTS: dict[str, dict[str, Any]] = {
    "bm25": {"dense": False},
    "dense": {"weights": {"dense": 1.0, "bm25": 0.0}},
    "rrf k2 d0.3 (conservative)": {"fusion": "rrf"},
    "zscore d0.3 (balanced)": {},
    "zscore d0.3 + rocchio (tokenmax)": {"prf": True},
    "zscore + rocchio + rm3 5 terms": {"prf": True, "prf_config": {"expansion_terms": 5}},
}


def beir(folder: Path, split: str) -> tuple[dict[str, tuple[str, str]], dict[str, str], dict]:
    corpus = {}
    for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        corpus[doc["_id"]] = (doc.get("title", ""), doc["text"])
    queries = {}
    for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        queries[q["_id"]] = q["text"]
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels" / f"{split}.tsv").read_text().splitlines()[1:]:
        qid, did, grade = line.split("\t")
        if int(grade) > 0:
            qrels.setdefault(qid, {})[did] = int(grade)
    return corpus, {q: queries[q] for q in qrels}, qrels


def brain_for(
    work: Path, name: str, profile: str, fill: Callable[[Brain], None], server: str | None = None
) -> Settings:
    """The settings of a scratch brain holding the dataset (built on the first run): a file
    under `work`, or a schema of the `server` database."""
    db: str | Path = work / f"{name}-{profile}.db"
    if server is None:
        fresh = not Path(db).exists()
    else:
        db = postgres.scratch_url(server, f"{name}_{profile}")
        try:
            storage.open(db, create=False).close()
            fresh = False
        except NotFound:
            fresh = True
    settings = Settings(db=db, embedder=parse_profile(profile))
    with Brain.open(settings=settings) as brain:
        if fresh:
            started = time.perf_counter()
            fill(brain)
            print(f"  built {name}-{profile} in {time.perf_counter() - started:.1f}s")
        brain.admin.embed_missing()
        brain.admin.refresh_index()
    return settings


def variant(settings: Settings, overrides: dict[str, Any]) -> tuple[Brain, SearchConfig]:
    """The brain (its lexical settings overridden) and the search config of a variant."""
    values = dict(overrides)
    lexical = replace(settings.lexical, **values.pop("lexical", {}))
    return Brain.open(settings=replace(settings, lexical=lexical)), config_of(values)


def config_of(overrides: dict[str, Any]) -> SearchConfig:
    base = PRESETS[SearchMode.BALANCED]
    values = dict(overrides)
    for mapping in ("weights", "min_z"):
        if mapping in values:
            values[mapping] = MappingProxyType(dict(values[mapping]))
    if "prf_config" in values:
        values["prf_config"] = replace(PRFConfig(), **values["prf_config"])
    return replace(base, **values)


# name: (split, graded nDCG). Cranfield's and techdocs' qrels are graded; the others binary.
BEIR_SETS = {
    "scifact": ("train", False),
    "cranfield": ("test", True),
    "cisi": ("test", False),
    "med": ("test", False),
    "techdocs": ("test", True),
}
Results = dict[str, dict[str, dict[str, Any]]]  # set: variant: {metric: mean, per_query: ...}


def run_beir(
    settings: Settings, queries: dict, qrels: dict, graded: bool, configs: dict
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, overrides in configs.items():
        brain, config = variant(settings, overrides)
        ndcg, r100, started = [], [], time.perf_counter()
        for qid, text in queries.items():
            hits = brain.search(text, k=100, config=config, best_per_document=True)
            ranked = [h.uri for h in hits]
            rel = qrels[qid]
            ndcg.append(
                graded_ndcg_at_k(ranked, rel, 10) if graded else ndcg_at_k(ranked, set(rel), 10)
            )
            r100.append(recall_at_k(ranked, set(rel), 100))
        ms = (time.perf_counter() - started) * 1000 / len(queries)
        brain.close()
        print(
            f"  {name:28s} nDCG@10 {statistics.mean(ndcg):.4f}  R@100 {statistics.mean(r100):.4f}"
            f"  {ms:.1f} ms/q"
        )
        out[name] = {
            "ndcg@10": statistics.mean(ndcg),
            "recall@100": statistics.mean(r100),
            "per_query": {"ndcg@10": ndcg, "recall@100": r100},
        }
    return out


def fill_beir(corpus: dict[str, tuple[str, str]]) -> Callable[[Brain], None]:
    def fill(brain: Brain) -> None:
        batch = []
        for doc_id, (title, text) in corpus.items():
            if not (title.strip() or text.strip()):
                continue  # Cranfield has a few empty documents
            batch.append((doc_id, f"# {title.strip()}\n\n{text.strip()}" if title else text))
        for doc_id, content in batch:
            brain.ingest_markdown(content, uri=doc_id)

    return fill


DIA = re.compile(r"D(\d+):(\d+)")


def locomo(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))


def fill_locomo(samples: list[dict]) -> Callable[[Brain], None]:
    def fill(brain: Brain) -> None:
        for sample in samples:
            conv = sample["conversation"]
            sessions = []
            for key, turns in conv.items():
                if not re.fullmatch(r"session_\d+", key) or not turns:
                    continue
                stamp = session_time(conv.get(f"{key}_date_time"))
                sessions.append(
                    Session(
                        id=key,
                        conversation=sample["sample_id"],
                        timestamp=stamp,
                        turns=tuple(
                            Turn(role=t["speaker"], content=_turn_text(t), id=t["dia_id"])
                            for t in turns
                        ),
                    )
                )
            brain.ingest_conversation(sessions)

    return fill


def _turn_text(turn: dict) -> str:
    text = turn["text"]
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def _evidence(ids: Iterable[str]) -> set[str]:
    out = set()
    for raw in ids:
        for s, t in DIA.findall(raw.replace(" ", "")):
            out.add(f"D{int(s)}:{int(t)}")
    return out


def run_locomo(settings: Settings, samples: list[dict], configs: dict) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, overrides in configs.items():
        brain, config = variant(settings, overrides)
        r5: dict[int, list[float]] = {}
        r100: list[float] = []
        started, n = time.perf_counter(), 0
        for sample in samples:
            filters = SearchFilters(path_prefix=f"conversation://{sample['sample_id']}/")
            for qa in sample["qa"]:
                gold = _evidence(qa.get("evidence", []))
                if not gold or qa["category"] == 5:
                    continue
                hits = brain.search(qa["question"], k=100, filters=filters, config=config)
                units = [h.unit or "" for h in hits]
                r5.setdefault(qa["category"], []).append(recall_at_k(units, gold, 5))
                r100.append(recall_at_k(units, gold, 100))
                n += 1
        every = [v for vs in r5.values() for v in vs]
        per = "  ".join(f"c{c} {statistics.mean(v):.3f}" for c, v in sorted(r5.items()))
        ms = (time.perf_counter() - started) * 1000 / n
        brain.close()
        print(
            f"  {name:28s} R@5 {statistics.mean(every):.4f}  ({per})"
            f"  R@100 {statistics.mean(r100):.4f}  {ms:.1f} ms/q"
        )
        out[name] = {
            "recall@5": statistics.mean(every),
            "recall@100": statistics.mean(r100),
            "per_query": {"recall@5": every, "recall@100": r100},
        }
    return out


def judge(results: Results) -> None:
    """Each variant's gain over `bm25` on each set's main metric, with its 95% interval."""
    for set_name, variants in results.items():
        base = variants.get("bm25")
        if base is None:
            continue
        metric = "recall@5" if set_name == "locomo" else "ndcg@10"
        for name, scored in variants.items():
            if name == "bm25":
                continue
            boot = paired_bootstrap(
                base["per_query"][metric],
                scored["per_query"][metric],
                seed=comparison_seed(42, set_name, metric, "bm25", name),
            )
            gap = scored["recall@100"] - base["recall@100"]
            print(
                f"  {set_name:9s} {name:28s} {metric} {boot.mean_difference:+.4f}"
                f" [{boot.low:+.4f}, {boot.high:+.4f}]  R@100 {gap:+.4f} over bm25"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=Path, default=Path("../shared/datasets"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/nexusbrain-tune"))
    parser.add_argument("--profile", default="edge")
    parser.add_argument("--only", action="append")
    parser.add_argument("--variants", help="JSON object of the variants to try (replaces the list)")
    parser.add_argument("--json", type=Path, help="also write every mean and per-query value here")
    parser.add_argument("--judge", type=Path, help="only compare the variants of this --json file")
    parser.add_argument("--db-url", help="build the brains in this PostgreSQL database instead")
    args = parser.parse_args()
    if args.judge:
        judge(json.loads(args.judge.read_text(encoding="utf-8")))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    configs = dict(VARIANTS)
    if args.variants:
        configs = json.loads(args.variants)
    wanted = set(args.only or [*BEIR_SETS, "locomo"])
    results: Results = {}
    for set_name, (split, graded) in BEIR_SETS.items():
        if set_name not in wanted:
            continue
        corpus, queries, qrels = beir(args.datasets / set_name, split)
        print(f"{set_name} {split} ({len(queries)} queries), profile {args.profile}")
        settings = brain_for(args.work, set_name, args.profile, fill_beir(corpus), args.db_url)
        results[set_name] = run_beir(settings, queries, qrels, graded, configs)
    if "locomo" in wanted:
        samples = locomo(args.datasets / "locomo" / "locomo_dev.json")
        print(f"locomo dev, profile {args.profile}")
        settings = brain_for(args.work, "locomo", args.profile, fill_locomo(samples), args.db_url)
        results["locomo"] = run_locomo(settings, samples, configs)
    if args.json:
        args.json.write_text(json.dumps(results), encoding="utf-8")
    judge(results)


if __name__ == "__main__":
    main()
