"""How much of the exact dense top 10 and top 100 quantized search keeps, and what each costs.

Usage:
  python scripts/measure_quantized.py DB [--documents N] [--queries 200] [--candidates 1000,2000]

DB is a brain built with the edge profile (e.g. `nexusbrain --db DB ingest-dir` of a bench
corpus written by `nexusbrain bench --workdir`), a SQLite file or a postgresql:// URL (the
dense index is the same in-process one on both backends); the queries are the bench's, about
its first N documents. Timings are medians of one process on this machine, recall is exact.
"""

from __future__ import annotations

import argparse
import statistics
import time

from nexusbrain import storage
from nexusbrain.bench.corpus import Corpus
from nexusbrain.config import Profile
from nexusbrain.embeddings.profiles import centred, load_embedder
from nexusbrain.storage.vector_index import IndexConfig, VectorIndex


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--candidates", default="1000,2000,4000")
    args = parser.parse_args()
    store = storage.open(args.db, create=False).documents
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
    for candidates in (int(c) for c in args.candidates.split(",")):
        config = IndexConfig(exact_max=0, candidates=candidates, centre=centre)
        quantized = VectorIndex(store, embedder.model_id, embedder.dim, config=config)
        quantized.sync()
        top10, top100, exact_ms, quantized_ms = [], [], [], []
        for query in queries:
            started = time.perf_counter()
            want = [s.chunk_id for s in exact.search(query, 100)]
            exact_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            got = [s.chunk_id for s in quantized.search(query, 100)]
            quantized_ms.append((time.perf_counter() - started) * 1000)
            top10.append(len(set(want[:10]) & set(got[:10])) / 10)
            top100.append(len(set(want) & set(got)) / 100)
        print(
            f"candidates {candidates}: top-10 kept {statistics.mean(top10):.3f},"
            f" top-100 kept {statistics.mean(top100):.3f};"
            f" exact {statistics.median(exact_ms):.2f} ms, quantized"
            f" {statistics.median(quantized_ms):.2f} ms (medians)"
        )


if __name__ == "__main__":
    main()
