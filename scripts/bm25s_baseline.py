"""An independent BM25 (bm25s) on the five dev sets: the bar `--lexical-only` must reach.

Usage (a scratch venv, not the project's dependencies):
  python3 -m venv /tmp/bm25s-venv
  /tmp/bm25s-venv/bin/pip install bm25s==0.3.16 PyStemmer ir-measures==0.4.3 numpy scipy
  /tmp/bm25s-venv/bin/python scripts/bm25s_baseline.py --datasets ../shared/datasets [--json]

Settings (issue 18): bm25s method lucene, k1 1.5, b 0.75, bm25s's English stopwords (Lucene's
set), the Snowball English stemmer (PyStemmer), a document is title + " " + text.
- BEIR sets: nDCG@10 and R@100 with ir-measures on the queries with at least one judgment
  (score > 0), run depth 100, scored by rank so that ir-measures keeps bm25s's order (raw
  scores give the same figures except Cranfield, 0.3727, where trec_eval breaks score ties by
  doc id). nDCG is trec_eval's, linear gain on the grade: the same number as
  `graded_ndcg_at_k` in nexusbrain.evals.metrics, which tune_hybrid uses on Cranfield
  (binary nDCG@10 there would be 0.3885).
- LoCoMo dev: one BM25 document per turn (`speaker: text`, and ` [shares a photo: caption]`
  when the turn has one), as scripts/tune_hybrid.py ingests it. One index over all five
  conversations (tune_hybrid's one brain); each question ranks only its own conversation's
  turns (tune_hybrid's path filter). R@5 = share of the evidence turns in the top 5, averaged
  over every question of categories 1-4 with evidence, with tune_hybrid's evidence parsing.
  `--per-conversation` builds one index per conversation instead (the `eval locomo` suite's
  scratch workspace per conversation).
Flags move single settings (stemmer, stopwords, k1, b, method, query de-duplication) for the
ablations in issue 18.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import bm25s
import ir_measures
import numpy as np
import Stemmer
from ir_measures import R, nDCG

BEIR_SETS = (("scifact", "train"), ("cranfield", "test"), ("cisi", "test"), ("med", "test"))
DIA = re.compile(r"D(\d+):(\d+)")  # tune_hybrid's evidence parsing


def _extended_stopwords() -> frozenset[str]:
    """nexusbrain's extended list (LexicalConfig.extended_stopwords), read from the source."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from nexusbrain.retrieval.terms import FEEDBACK_STOPWORDS

    return FEEDBACK_STOPWORDS


class Settings(argparse.Namespace):
    k1: float = 1.5
    b: float = 0.75
    method: str = "lucene"
    stemmer: str = "english"
    stopwords: str = "en"
    dedup: bool = False


def _stopwords(name: str) -> list[str]:
    if name == "none":
        return []
    if name == "extended":
        return sorted(_extended_stopwords())
    return list(bm25s.stopwords.STOPWORDS_EN)  # "en": Lucene's English set


def _tokens(texts: Sequence[str], s: Settings, *, query: bool = True) -> list[list[str]]:
    stemmer = None if s.stemmer == "none" else Stemmer.Stemmer(s.stemmer)
    found = bm25s.tokenize(
        list(texts),
        stopwords=_stopwords(s.stopwords),
        stemmer=stemmer,
        return_ids=False,
        show_progress=False,
    )
    assert isinstance(found, list)
    if query and s.dedup:  # nexusbrain's query_terms: each distinct word once
        return [list(dict.fromkeys(t)) for t in found]
    return found


def _index(texts: Sequence[str], s: Settings) -> bm25s.BM25:
    retriever = bm25s.BM25(method=s.method, k1=s.k1, b=s.b)
    retriever.index(_tokens(texts, s, query=False), show_progress=False)
    return retriever


def _scores(retriever: bm25s.BM25, tokens: list[str]) -> np.ndarray:
    ids = retriever.get_tokens_ids(tokens)
    if not ids:
        return np.zeros(retriever.scores["num_docs"], np.float32)
    return np.asarray(retriever.get_scores_from_ids(ids))


def _top(scores: np.ndarray, k: int) -> list[int]:
    order = np.lexsort((np.arange(len(scores)), -scores))  # score, then corpus order
    return [int(i) for i in order[:k] if scores[i] > 0]


def beir(folder: Path, split: str, s: Settings) -> dict[str, float]:
    ids, texts = [], []
    for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        ids.append(str(doc["_id"]))
        texts.append(f"{doc.get('title') or ''} {doc.get('text') or ''}")
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels" / f"{split}.tsv").read_text().splitlines()[1:]:
        qid, did, grade = line.split("\t")
        if int(grade) > 0:
            qrels.setdefault(qid, {})[did] = int(grade)
    queries = {}
    for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if q["_id"] in qrels:
            queries[q["_id"]] = q["text"]
    retriever = _index(texts, s)
    run: dict[str, dict[str, float]] = {}
    for qid, tokens in zip(queries, _tokens(list(queries.values()), s), strict=True):
        top = _top(_scores(retriever, tokens), 100)
        run[qid] = {ids[i]: float(100 - rank) for rank, i in enumerate(top)}
        if not run[qid]:
            run[qid] = {"__none__": 0.0}  # keep the query in the mean (scores 0)
    found = ir_measures.calc_aggregate([nDCG @ 10, R @ 100], qrels, run)
    return {"ndcg@10": round(found[nDCG @ 10], 4), "recall@100": round(found[R @ 100], 4)}


def _evidence(raw: Iterable[str]) -> set[str]:
    out = set()
    for entry in raw:
        for session, turn in DIA.findall(entry.replace(" ", "")):
            out.add(f"D{int(session)}:{int(turn)}")
    return out


def locomo(path: Path, s: Settings, per_conversation: bool) -> dict[str, float]:
    samples = json.loads(path.read_text(encoding="utf-8"))
    turns: list[tuple[str, str, str]] = []  # (conversation, dia_id, text)
    for sample in samples:
        for key, session in sample["conversation"].items():
            if not re.fullmatch(r"session_\d+", key) or not session:
                continue
            for t in session:
                text = t["text"]
                if t.get("blip_caption"):
                    text += f" [shares a photo: {t['blip_caption']}]"
                turns.append((sample["sample_id"], t["dia_id"], f"{t['speaker']}: {text}"))
    owner = np.array([c for c, _, _ in turns])
    indexes = {}
    if per_conversation:
        for conv in dict.fromkeys(owner.tolist()):
            rows = np.flatnonzero(owner == conv)
            indexes[conv] = (rows, _index([turns[i][2] for i in rows], s))
    else:
        every = _index([t[2] for t in turns], s)
    recall: dict[int, list[float]] = {}
    for sample in samples:
        conv = sample["sample_id"]
        asked = [
            (qa, gold)
            for qa in sample["qa"]
            if (gold := _evidence(qa.get("evidence", []))) and qa["category"] != 5
        ]
        tokens = _tokens([qa["question"] for qa, _ in asked], s)
        for (qa, gold), words in zip(asked, tokens, strict=True):
            if per_conversation:
                rows, retriever = indexes[conv]
                scores = _scores(retriever, words)
            else:
                rows = np.flatnonzero(owner == conv)
                scores = _scores(every, words)[rows]
            top = {turns[rows[i]][1] for i in _top(scores, 5)}
            recall.setdefault(qa["category"], []).append(len(top & gold) / len(gold))
    out = {"recall@5": round(statistics.mean(v for vs in recall.values() for v in vs), 4)}
    out |= {f"c{c} recall@5": round(statistics.mean(v), 4) for c, v in sorted(recall.items())}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, default=Path("../shared/datasets"))
    parser.add_argument("--only", action="append", help="scifact, cranfield, cisi, med, locomo")
    parser.add_argument("--k1", type=float, default=1.5)
    parser.add_argument("--b", type=float, default=0.75)
    parser.add_argument("--method", default="lucene", help="bm25s method: lucene, robertson...")
    parser.add_argument("--stemmer", default="english", help="PyStemmer algorithm, or none")
    parser.add_argument("--stopwords", default="en", choices=["en", "extended", "none"])
    parser.add_argument("--dedup", action="store_true", help="each distinct query word once")
    parser.add_argument("--per-conversation", action="store_true", help="LoCoMo: own index")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(namespace=Settings())
    wanted = args.only or [name for name, _ in BEIR_SETS] + ["locomo"]
    results: dict[str, dict[str, float]] = {}
    for name, split in BEIR_SETS:
        if name in wanted:
            results[name] = beir(args.datasets / name, split, args)
    if "locomo" in wanted:
        path = args.datasets / "locomo" / "locomo_dev.json"
        results["locomo"] = locomo(path, args, args.per_conversation)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"bm25s {bm25s.__version__} method={args.method} k1={args.k1} b={args.b}"
        f" stemmer={args.stemmer} stopwords={args.stopwords} dedup={args.dedup}"
    )
    for name, metrics in results.items():
        shown = "  ".join(f"{k} {v:.4f}" for k, v in metrics.items())
        print(f"  {name:10s} {shown}")


if __name__ == "__main__":
    main()
