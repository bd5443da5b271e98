"""Independent BM25 references for docs/evaluation.md's lexical figures, in plain SQLite FTS5.

Usage: python scripts/reference_bm25.py [--datasets ../shared/datasets]

Nothing here goes through nexusbrain's ingest or search: each document (or LoCoMo turn) is one
FTS5 row with the brain's tokenizer (porter unicode61) and query terms, ranked by bm25(). It
prints:
- BEIR SciFact train and Cranfield test: nDCG@10, recall@10, recall@100, MRR, one row per
  document (title + text);
- LoCoMo dev recall@5 over categories 1-4, per conversation as the suite does, with the brain's
  columns and weights (turn text 1.0, session heading 0.5): without a context column, then with
  the neighbouring turns in one (as many as the brain's CONTEXT_TURNS; weight 0, and the
  brain's context weight).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

from nexusbrain.config import LexicalConfig
from nexusbrain.evals.locomo import ADVERSARIAL, load_locomo, questions_of
from nexusbrain.evals.trec import read_qrels, score_run
from nexusbrain.ingest.conversation import CONTEXT_TURNS
from nexusbrain.retrieval.terms import query_terms

TOKENIZE = "porter unicode61 remove_diacritics 2"
LEXICAL = LexicalConfig()  # the brain's defaults: stopwords and column weights


def match(text: str) -> str:
    terms = query_terms(text, extended_stopwords=LEXICAL.extended_stopwords)
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def beir(folder: Path, split: str) -> dict[str, float]:
    con = sqlite3.connect(":memory:")
    con.execute(f"CREATE VIRTUAL TABLE t USING fts5(id UNINDEXED, body, tokenize='{TOKENIZE}')")
    with (folder / "corpus.jsonl").open() as lines:
        for line in lines:
            doc = json.loads(line)
            con.execute(
                "INSERT INTO t VALUES (?, ?)", (doc["_id"], f"{doc['title']}\n{doc['text']}")
            )
    texts = {}
    with (folder / "queries.jsonl").open() as lines:
        for line in lines:
            query = json.loads(line)
            texts[query["_id"]] = query["text"]
    qrels = read_qrels(folder / "qrels" / f"{split}.tsv")
    run = {}
    for qid in qrels:
        rows = con.execute(
            "SELECT id FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 100", (match(texts[qid]),)
        ).fetchall()
        run[qid] = [(row[0], float(100 - i)) for i, row in enumerate(rows)]
    scored = score_run(run, qrels, ["ndcg@10", "recall@10", "recall@100", "mrr"])
    return {key: round(value, 4) for key, value in scored.mean.items()}


def locomo(path: Path, context_weight: float | None) -> float:
    """Mean recall@5 over categories 1-4; context_weight None means no context column."""
    values = []
    for sample in load_locomo(path):
        con = sqlite3.connect(":memory:")
        extra = ", ctx" if context_weight is not None else ""
        con.execute(
            "CREATE VIRTUAL TABLE t USING fts5"
            f"(id UNINDEXED, body, heading{extra}, tokenize='{TOKENIZE}')"
        )
        for session in sample.sessions:
            parts = [f"{t.speaker}: {t.content()}" for t in session.turns]
            for i, turn in enumerate(session.turns):
                row = [turn.dia_id, parts[i], f"Session session_{session.number}"]
                if context_weight is not None:
                    lo, hi = max(0, i - CONTEXT_TURNS), i + 1 + CONTEXT_TURNS
                    row.append("\n".join(parts[lo:i] + parts[i + 1 : hi]))
                con.execute(f"INSERT INTO t VALUES ({', '.join('?' * len(row))})", row)
        weights = f"0, {LEXICAL.text_weight}, {LEXICAL.heading_weight}"
        weights += f", {context_weight}" if context_weight is not None else ""
        for query in questions_of(sample, "dev").queries:
            if (query.group or "").startswith(f"{ADVERSARIAL} "):
                continue
            rows = con.execute(
                f"SELECT id FROM t WHERE t MATCH ? ORDER BY bm25(t, {weights}) LIMIT 5",
                (match(query.text),),
            ).fetchall()
            relevant = set(query.judgments)
            values.append(len(relevant & {row[0] for row in rows}) / len(relevant))
    return round(sum(values) / len(values), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, default=Path("../shared/datasets"))
    args = parser.parse_args()
    print("scifact train", beir(args.datasets / "scifact", "train"))
    print("cranfield test", beir(args.datasets / "cranfield", "test"))
    path = args.datasets / "locomo" / "locomo_dev.json"
    print("locomo dev recall@5, no context column", locomo(path, None))
    print(f"locomo dev recall@5, context of ±{CONTEXT_TURNS} turns, weight 0", locomo(path, 0.0))
    weight = LEXICAL.context_weight
    print(
        f"locomo dev recall@5, context of ±{CONTEXT_TURNS} turns, weight {weight}",
        locomo(path, weight),
    )


if __name__ == "__main__":
    main()
