"""Known-item regression: can the brain find a chunk again from an excerpt of it?

Queries are built from the brain's own stored chunks (read from its export): `n` chunks are
drawn with a seeded generator from the chunks of live documents that hold at least
`MIN_TOKENS` words; each query is a 200-character excerpt of its chunk, starting at a seeded
word boundary. The relevant set is the chunk plus its near-duplicates: the chunks of the same
document whose word-set Jaccard overlap with it is at least 0.5. Results are chunk ids.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nexusbrain.errors import InvalidInput
from nexusbrain.evals.metrics import Metric
from nexusbrain.evals.runner import JudgedQuery, score_queries
from nexusbrain.evals.runs import EvalRun, means, run_config
from nexusbrain.evals.targets import Retrieved, SearchRequest, SearchTarget
from nexusbrain.records import Progress

EXCERPT_CHARS = 200
MIN_TOKENS = 8
NEAR_DUPLICATE = 0.5
DEFAULT_METRICS = ("recall@1", "recall@5", "recall@10", "mrr")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class StoredChunk:
    id: int
    document_id: int
    text: str


def tokens(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard overlap of two word sets (0.0 when both are empty)."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def live_chunks(records: Iterable[Mapping[str, Any]]) -> list[StoredChunk]:
    """The chunks of documents that are not retired, from export records."""
    retired: set[int] = set()
    chunks: list[StoredChunk] = []
    for record in records:
        kind = record.get("type")
        if kind == "document" and record.get("deleted_at"):
            retired.add(int(record["id"]))
        elif kind == "chunk":
            chunks.append(
                StoredChunk(int(record["id"]), int(record["document_id"]), record["text"])
            )
    return [c for c in chunks if c.document_id not in retired]


def excerpt(text: str, rng: random.Random, size: int = EXCERPT_CHARS) -> str:
    """`size` characters of `text` (whitespace collapsed) from a random word start."""
    flat = " ".join(text.split())
    if len(flat) <= size:
        return flat
    starts = [0, *(m.start() + 1 for m in re.finditer(" ", flat[: len(flat) - size]))]
    start = starts[rng.randrange(len(starts))]
    return flat[start : start + size].strip()


def near_duplicates(chunk: StoredChunk, siblings: Sequence[StoredChunk]) -> set[str]:
    """Ids of `chunk` and of the siblings (same document) overlapping it by >= 0.5."""
    mine = tokens(chunk.text)
    same = {str(chunk.id)}
    for other in siblings:
        if other.id != chunk.id and overlap(mine, tokens(other.text)) >= NEAR_DUPLICATE:
            same.add(str(other.id))
    return same


def build_queries(chunks: Sequence[StoredChunk], n: int, seed: int) -> list[JudgedQuery]:
    """`n` known-item queries (fewer if the brain has fewer eligible chunks)."""
    if n < 1:
        raise InvalidInput(f"--n {n}: ask for at least one query")
    eligible = [c for c in chunks if len(_WORD.findall(c.text)) >= MIN_TOKENS]
    if not eligible:
        raise InvalidInput(
            f"the brain holds no chunk of {MIN_TOKENS}+ words: ingest something first"
        )
    rng = random.Random(seed)
    chosen = rng.sample(eligible, min(n, len(eligible)))
    by_document: dict[int, list[StoredChunk]] = {}
    for chunk in chunks:
        by_document.setdefault(chunk.document_id, []).append(chunk)
    return [
        JudgedQuery(
            id=f"chunk-{chunk.id}",
            text=excerpt(chunk.text, rng),
            judgments=dict.fromkeys(
                sorted(near_duplicates(chunk, by_document[chunk.document_id])), 1
            ),
            split="known-item",
        )
        for chunk in chosen
    ]


def _chunk_id(result: Retrieved) -> str:
    return str(result.chunk_id)


def run_known_item(
    target: SearchTarget,
    request: SearchRequest,
    metrics: Sequence[Metric],
    *,
    n: int,
    seed: int,
    source: str,
    progress: Progress | None = None,
) -> EvalRun:
    started = time.perf_counter()
    chunks = live_chunks(target.export_records())
    queries = build_queries(chunks, n, seed)
    scores, searching = score_queries(target, queries, request, metrics, _chunk_id, progress)
    config = run_config(
        suite="known-item",
        dataset=source,
        split="known-item",
        request=request,
        target=target.describe(),
        metrics=metrics,
        seed=seed,
        n=n,
        excerpt_chars=EXCERPT_CHARS,
        near_duplicate_overlap=NEAR_DUPLICATE,
    )
    counts = {
        "chunks": len(chunks),
        "queries": len(queries),
        "with_near_duplicates": sum(1 for q in queries if len(q.judgments) > 1),
    }
    seconds = {"search": searching, "total": time.perf_counter() - started}
    return EvalRun(
        "known-item",
        "known-item",
        means(scores, metrics),
        tuple(scores),
        config,
        {},
        counts,
        seconds,
    )
