"""What the result set's confidence costs a search, in process, beside the whole search.

Usage:
  PYTHONPATH=TREE/src python scripts/time_confidence.py --db BRAIN.db \
      --queries ../shared/datasets/techdocs/queries.jsonl [--passes 3] [--limit 300]

Opens an existing brain (a dev set's, as scripts/tune_hybrid.py or fit_confidence.py build
them), warms it, searches the first 50 questions once, then searches every question (a
BEIR queries.jsonl, up to --limit) --passes times in `balanced` and prints, per pass, the
CPU milliseconds a search and those spent in `Searcher._confidence` (timed by wrapping it),
then their medians. Run it for two trees in turn, interleaved, in one session (the machine
drifts): PYTHONPATH picks the tree.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import nexusbrain
from nexusbrain.brain import Brain
from nexusbrain.retrieval import pipeline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--limit", type=int, default=300)
    args = parser.parse_args()
    lines = args.queries.read_text(encoding="utf-8").splitlines()
    queries = [json.loads(line)["text"] for line in lines if line.strip()][: args.limit]
    spent = [0.0]
    inner = pipeline.Searcher._confidence

    def timed(self: pipeline.Searcher, *a: Any, **k: Any) -> Any:
        started = time.process_time()
        try:
            return inner(self, *a, **k)
        finally:
            spent[0] += time.process_time() - started

    pipeline.Searcher._confidence = timed  # type: ignore[method-assign]
    passes = []
    with Brain.open(args.db, create=False) as brain:
        brain.admin.warm()
        for query in queries[:50]:
            brain.search(query)
        for _ in range(args.passes):
            spent[0] = 0.0
            started = time.process_time()
            for query in queries:
                brain.search(query)
            whole = (time.process_time() - started) * 1000 / len(queries)
            passes.append((whole, spent[0] * 1000 / len(queries)))
    tree = Path(nexusbrain.__file__).parents[2]
    cells = " ".join(f"{a:.3f}/{b:.3f}" for a, b in passes)
    print(
        f"{tree}: {len(queries)} searches a pass, CPU ms search/confidence {cells}; medians "
        f"{statistics.median(a for a, _ in passes):.3f} / "
        f"{statistics.median(b for _, b in passes):.4f} ms"
    )


if __name__ == "__main__":
    main()
