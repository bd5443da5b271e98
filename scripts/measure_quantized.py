"""How much of the exact dense top 10 and top 100 quantized search keeps, and what each costs;
and the same for pgvector's HNSW index, on a PostgreSQL brain that has one.

Usage:
  python scripts/measure_quantized.py DB [--documents N] [--queries 200] [--candidates 1000,2000]
  python scripts/measure_quantized.py URL --hnsw [--ef-search 100,200,400]

DB is a brain built with the edge profile (e.g. `nexusbrain --db DB ingest-dir` of a bench
corpus written by `nexusbrain bench --workdir`), a SQLite file or a postgresql:// URL (the
dense index is the same in-process one on both backends); the queries are the bench's, about
its first N documents. Timings are medians of one process on this machine, recall is exact.
With --hnsw, the brain must have had `nexusbrain dense-index build`, and nothing written since
(the exact search centres around the live rows of now, the HNSW index around its build's).
"""

from __future__ import annotations

import argparse
import statistics
import time

from nexusbrain import storage
from nexusbrain.bench.corpus import Corpus
from nexusbrain.config import Profile
from nexusbrain.embeddings.profiles import centred, load_embedder
from nexusbrain.storage.base import DenseIndex, Vector
from nexusbrain.storage.vector_index import IndexConfig, VectorIndex


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--candidates", default="1000,2000,4000")
    parser.add_argument("--hnsw", action="store_true", help="Measure pgvector's HNSW index.")
    parser.add_argument("--ef-search", default="100,200,400")
    args = parser.parse_args()
    backend = storage.open(args.db, create=False)
    store = backend.documents
    embedder = load_embedder(Profile.EDGE)
    assert embedder is not None
    centre = centred(Profile.EDGE)
    exact = VectorIndex(
        store, embedder.model_id, embedder.dim, config=IndexConfig(exact_max=10**9, centre=centre)
    )
    exact.sync()
    vectors = embedder.encode(Corpus().queries(args.queries, args.documents))
    queries = [exact.centre(v) for v in vectors]
    print(f"{len(exact)} vectors, {len(queries)} queries")
    if args.hnsw:
        from nexusbrain.storage.postgres.hnsw import PgvectorIndex

        db = backend.db  # type: ignore[attr-defined]
        for ef in (int(e) for e in args.ef_search.split(",")):
            index = PgvectorIndex(db, embedder.model_id, embedder.dim, ef_search=ef)
            measure(f"ef_search {ef}", exact, index, [index.centre(v) for v in vectors], queries)
        return
    for candidates in (int(c) for c in args.candidates.split(",")):
        config = IndexConfig(exact_max=0, candidates=candidates, centre=centre)
        quantized = VectorIndex(store, embedder.model_id, embedder.dim, config=config)
        quantized.sync()
        measure(f"candidates {candidates}", exact, quantized, queries, queries)


def measure(
    label: str, exact: VectorIndex, other: DenseIndex, theirs: list[Vector], ours: list[Vector]
) -> None:
    """`theirs`: the queries as `other` centres them; `ours`, as the exact index does."""
    top10, top100, exact_ms, other_ms = [], [], [], []
    for mine, query in zip(ours, theirs, strict=True):
        started = time.perf_counter()
        want = [s.chunk_id for s in exact.search(mine, 100)]
        exact_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        got = [s.chunk_id for s in other.search(query, 100)]
        other_ms.append((time.perf_counter() - started) * 1000)
        top10.append(len(set(want[:10]) & set(got[:10])) / 10)
        top100.append(len(set(want) & set(got)) / 100)
    print(
        f"{label}: top-10 kept {statistics.mean(top10):.3f},"
        f" top-100 kept {statistics.mean(top100):.3f}; exact {statistics.median(exact_ms):.2f}"
        f" ms, this index {statistics.median(other_ms):.2f} ms (medians;"
        f" p95 {statistics.quantiles(other_ms, n=20)[-1]:.2f} ms)"
    )


if __name__ == "__main__":
    main()
