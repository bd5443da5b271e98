"""Statements and round trips per batch of a PostgreSQL brain's HTTP-style ingest, counted on
the client (psycopg's cursor calls), for the source tree on PYTHONPATH:

    PYTHONPATH=TREE/src BRAIN_EMBEDDER=hashing python scripts/count_round_trips.py \\
        --db 'postgresql://…?schema=NAME' [--documents 640] [--top 30] [--json]

The brain (its schema dropped first and at the end) gets one note, then the bench corpus's
first --documents documents in batches of 32 through `Brain.ingest_markdown_batch` (what
`POST /ingest/markdown/batch` calls), in this process, one writer. Counted: each statement
executed (`executemany` counts its rows, a COPY counts one), and each round trip: a
statement outside a pipeline, an `executemany`, a COPY, or a whole pipeline (a pipeline
whose results are fetched inside it makes more, which this does not see). The embedder's
check for stored vectors is counted, though it runs outside the write; the background
compactor's statements are counted when they fall in the timed part (they show as
`postings` statements). Prints the batches' chunks/s (one writer, no HTTP: not the bench's
figure), the counts per batch, and the most frequent statements.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import psycopg

from nexusbrain.bench.corpus import Corpus, CorpusSpec
from nexusbrain.brain.facade import Brain
from nexusbrain.records import MarkdownNote
from nexusbrain.storage import postgres

BATCH = 32  # documents a request, as the bench sends them


class Counter:
    """Counts psycopg's statements and round trips while installed."""

    def __init__(self) -> None:
        self.totals: collections.Counter[str] = collections.Counter()
        self.statements: collections.Counter[str] = collections.Counter()
        self.depth = 0  # of open pipelines

    def note(self, query: object, rows: int = 1, trip: bool = True) -> None:
        self.totals["statements"] += rows
        self.statements[str(query)[:72]] += rows
        self.totals["round_trips"] += trip

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        cursor, connection = psycopg.Cursor, psycopg.Connection
        saved = cursor.execute, cursor.executemany, cursor.copy, connection.pipeline
        execute, executemany, copy, pipeline = saved
        counter = self

        def counted_execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            counter.note(query, trip=counter.depth == 0)
            return execute(self, query, *args, **kwargs)

        def counted_many(self: Any, query: Any, params: Any, *args: Any, **kwargs: Any) -> Any:
            params = list(params)
            counter.note(query, rows=len(params), trip=counter.depth == 0)
            return executemany(self, query, params, *args, **kwargs)

        def counted_copy(self: Any, statement: Any, *args: Any, **kwargs: Any) -> Any:
            counter.note(statement)
            return copy(self, statement, *args, **kwargs)

        @contextlib.contextmanager
        def counted_pipeline(self: Any) -> Iterator[Any]:
            counter.totals["round_trips"] += counter.depth == 0
            counter.depth += 1
            try:
                with pipeline(self) as p:
                    yield p
            finally:
                counter.depth -= 1

        cursor.execute, cursor.executemany = counted_execute, counted_many  # type: ignore[method-assign]
        cursor.copy = counted_copy  # type: ignore[method-assign,assignment]
        connection.pipeline = counted_pipeline  # type: ignore[method-assign,assignment]
        try:
            yield
        finally:
            cursor.execute, cursor.executemany, cursor.copy, connection.pipeline = saved  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--documents", type=int, default=640)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    docs = list(Corpus(CorpusSpec()).documents(args.documents))
    postgres.drop(args.db)
    counter = Counter()
    try:
        with Brain.open(args.db) as brain:
            brain.ingest_markdown_batch([MarkdownNote("# warm\n\nfirst note", uri="warm")])
            batches = chunks = 0
            with counter.installed():
                started = time.perf_counter()
                for start in range(0, len(docs), BATCH):
                    notes = [
                        MarkdownNote(d.content, title=d.title, uri=d.name)
                        for d in docs[start : start + BATCH]
                    ]
                    chunks += sum(r.chunks for r in brain.ingest_markdown_batch(notes))
                    batches += 1
                seconds = time.perf_counter() - started
    finally:
        postgres.drop(args.db)
    report = {
        "documents": args.documents,
        "batches": batches,
        "chunks_per_second": round(chunks / seconds, 1),
        "statements_per_batch": round(counter.totals["statements"] / batches, 1),
        "round_trips_per_batch": round(counter.totals["round_trips"] / batches, 1),
        "statements": {
            q: round(n / batches, 2) for q, n in counter.statements.most_common(args.top)
        },
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)


def _print(report: dict[str, Any]) -> None:
    print(
        f"{report['batches']} batches of {BATCH}: {report['chunks_per_second']} chunks/s;"
        f" per batch {report['statements_per_batch']} statements,"
        f" {report['round_trips_per_batch']} round trips"
    )
    for query, n in report["statements"].items():
        print(f"{n:8.2f}  {query}")


if __name__ == "__main__":
    main()
