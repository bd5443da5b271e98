"""nDCG@10 on a BEIR dev set, measured every few seconds while a brain switches its model
(issue 32: switching models never makes search worse while it happens).

Usage: python scripts/measure_switch.py ../shared/datasets/med --split test \
           [--from edge] [--to quality] [--every 5]

1. Ingests the corpus into a scratch brain with the `--from` model and embeds every chunk.
2. Scores every judged query of the split (nDCG@10, documents, balanced mode): the old model.
3. Opens the brain with the `--to` model: search keeps the old model while the new one embeds
   the brain in the background (brain/models.py). Every `--every` seconds it scores the
   queries again and prints how far the switch got, until the brain has switched; then once
   more with the new model.
Prints one JSON line a measurement, and a last line with the lowest nDCG@10 seen during the
switch against the old model's.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from nexusbrain.brain import Brain
from nexusbrain.config import CaptureConfig, Settings, model_settings, parse_embedder
from nexusbrain.evals.beir import beir_queries, read_corpus
from nexusbrain.evals.metrics import evaluate, mean, parse_metric
from nexusbrain.evals.runner import JudgedQuery

NDCG = parse_metric("ndcg@10")


def settings(db: Path, model: str) -> Settings:
    chosen = Settings.from_env(db)
    return replace(
        chosen,
        embedder=parse_embedder(model)[0],
        models=model_settings(embedder=model),
        capture=CaptureConfig(enabled=False),
    )


def score(brain: Brain, queries: list[JudgedQuery]) -> float:
    values = []
    for query in queries:
        hits = brain.search(query.text, k=10, best_per_document=True, mode="balanced")
        values.append(evaluate(NDCG, [h.uri for h in hits], query.judgments))
    return mean(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--from", dest="old", default="edge")
    parser.add_argument("--to", dest="new", default="quality")
    parser.add_argument("--every", type=float, default=5.0)
    args = parser.parse_args()
    queries = beir_queries(args.folder, args.split)
    with tempfile.TemporaryDirectory(prefix="nexusbrain-switch-") as folder:
        db = Path(folder) / "brain.db"
        with Brain.open(settings=settings(db, args.old)) as brain:
            for document in read_corpus(args.folder):
                if document.markdown().strip():
                    brain.ingest_markdown(
                        document.markdown(), title=document.title or None, uri=document.id
                    )
            brain.admin.embed_missing()
            before = score(brain, queries)
            chunks = brain.stats().store.chunks
        print(json.dumps({"model": args.old, "chunks": chunks, "ndcg@10": round(before, 4)}))
        started = time.monotonic()
        during: list[float] = []
        with Brain.open(settings=settings(db, args.new)) as brain:
            while brain.models.next is not None:
                stats = brain.stats().embedder
                value = score(brain, queries)
                during.append(value)
                print(
                    json.dumps(
                        {
                            "seconds": round(time.monotonic() - started, 1),
                            "search_model": stats.model_id,
                            "switch_embedded": stats.switch_embedded,
                            "chunks": chunks,
                            "ndcg@10": round(value, 4),
                        }
                    ),
                    flush=True,
                )
                time.sleep(args.every)
            after = score(brain, queries)
            print(
                json.dumps(
                    {
                        "seconds": round(time.monotonic() - started, 1),
                        "search_model": brain.stats().embedder.model_id,
                        "switched": True,
                        "ndcg@10": round(after, 4),
                    }
                )
            )
        lowest = min(during, default=before)
        print(
            json.dumps(
                {
                    "old": round(before, 4),
                    "lowest_during": round(lowest, 4),
                    "measurements_during": len(during),
                    "new": round(after, 4),
                    "never_below_old": lowest >= before,
                }
            )
        )
        sys.exit(0 if lowest >= before else 1)


if __name__ == "__main__":
    main()
