"""nDCG@10 on a BEIR dev set, measured every few seconds while a brain switches its model
(issue 32: switching models never makes search worse while it happens).

Usage: python scripts/measure_switch.py ../shared/datasets/med --split test \
           [--from edge] [--to quality] [--every 5] \
           [--pad-to 20000 [--pad-with ../shared/datasets/scifact ...]]

1. Ingests the corpus into a scratch brain with the `--from` model and embeds every chunk.
   With `--pad-to CHUNKS` it then adds distractor documents until the brain holds at least
   CHUNKS chunks: the corpora of the `--pad-with` folders first (other dev sets, none of them
   judged for these queries: their uris are prefixed so they never match a judgment), then
   documents of the bench's synthetic corpus (bench/corpus.py). The judged queries stay the
   dev set's.
2. Scores every judged query of the split (nDCG@10, documents, balanced mode): the old model.
3. Opens the brain with the `--to` model: search keeps the old model while the new one embeds
   the brain in the background (brain/models.py). Every `--every` seconds it scores the
   queries again and prints how far the switch got, until the brain has switched; then once
   more with the new model. A measurement in which the switch completed asked some queries
   of each model: it is printed, marked, and left out of the lowest figure.
Prints one JSON line a measurement, and a last line with the lowest nDCG@10 seen during the
switch against the old model's.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from nexusbrain.bench.corpus import Corpus
from nexusbrain.brain import Brain
from nexusbrain.config import CaptureConfig, Settings, model_settings, parse_embedder
from nexusbrain.evals.beir import beir_queries, read_corpus
from nexusbrain.evals.metrics import evaluate, mean, parse_metric
from nexusbrain.evals.runner import JudgedQuery
from nexusbrain.records import MarkdownNote

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


def dev_set(folder: Path, prefix: str = "") -> Iterator[MarkdownNote]:
    for document in read_corpus(folder):
        if document.markdown().strip():
            yield MarkdownNote(
                document.markdown(), title=document.title or None, uri=prefix + document.id
            )


def distractors(folders: Sequence[Path]) -> Iterator[MarkdownNote]:
    """The other dev sets' documents, then the synthetic corpus's, without end."""
    for folder in folders:
        yield from dev_set(folder, prefix=f"pad:{folder.name}:")
    for doc in Corpus().documents(10**9):
        yield MarkdownNote(doc.content, title=doc.title, uri=f"pad:synthetic:{doc.name}")


def ingest(brain: Brain, notes: Iterator[MarkdownNote], until: int | None = None) -> int:
    """Ingest the notes, 64 a transaction, until the brain holds `until` chunks (passed by
    less than a batch) or the notes end; the brain's chunks after."""
    chunks = brain.stats().store.chunks
    batch: list[MarkdownNote] = []
    for note in notes:
        batch.append(note)
        if len(batch) == 64:
            chunks += sum(r.chunks for r in brain.ingest_markdown_batch(batch))
            batch = []
            if until is not None and chunks >= until:
                break
    if batch:
        brain.ingest_markdown_batch(batch)
    return brain.stats().store.chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--from", dest="old", default="edge")
    parser.add_argument("--to", dest="new", default="quality")
    parser.add_argument("--every", type=float, default=5.0)
    parser.add_argument("--pad-to", type=int, default=None, metavar="CHUNKS")
    parser.add_argument("--pad-with", type=Path, action="append", default=[], metavar="FOLDER")
    args = parser.parse_args()
    queries = beir_queries(args.folder, args.split)
    with tempfile.TemporaryDirectory(prefix="nexusbrain-switch-") as folder:
        db = Path(folder) / "brain.db"
        started = time.monotonic()
        with Brain.open(settings=settings(db, args.old)) as brain:
            judged = ingest(brain, dev_set(args.folder))
            chunks = judged
            if args.pad_to is not None:
                chunks = ingest(brain, distractors(args.pad_with), until=args.pad_to)
            brain.admin.embed_missing()
            before = score(brain, queries)
        print(
            json.dumps(
                {
                    "model": args.old,
                    "chunks": chunks,
                    "judged_set_chunks": judged,
                    "queries": len(queries),
                    "ndcg@10": round(before, 4),
                    "build_seconds": round(time.monotonic() - started, 1),
                }
            ),
            flush=True,
        )
        started = time.monotonic()
        during: list[float] = []
        with Brain.open(settings=settings(db, args.new)) as brain:
            while brain.models.next is not None:
                stats = brain.stats().embedder
                value = score(brain, queries)
                # a switch that completes while the queries are asked leaves a measurement of
                # both models: it is printed, but is not one taken during the switch
                mixed = brain.models.next is None
                if not mixed:
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
                        | ({"switched_while_measured": True} if mixed else {})
                    ),
                    flush=True,
                )
                time.sleep(args.every)
            switched = time.monotonic()
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
                    "switch_seconds": round(switched - started, 1),
                    "never_below_old": lowest >= before,
                }
            )
        )
        sys.exit(0 if lowest >= before else 1)


if __name__ == "__main__":
    main()
