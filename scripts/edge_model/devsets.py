"""A quick score of a token table on the dev sets, for watching a fit (seconds, not minutes).

Not the repository's evaluation: documents are cut into windows of WINDOW tokens instead of
markdown chunks, and a document scores its best window. It ranks models as the real dense list
does closely enough to follow a fit; the figures to report come from eval_edge.py, which runs
the real pipeline. The dev sets are only read here to score, never to train.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

WINDOW = 256
# name: (split, graded)
BEIR = {
    "scifact": ("train", False),
    "cranfield": ("test", True),
    "cisi": ("test", False),
    "med": ("test", False),
    "techdocs": ("test", True),
}


@dataclass
class DevSet:
    name: str
    doc_of_window: np.ndarray  # window -> document index
    windows: list[list[int]]  # token ids
    queries: list[list[int]]
    qrels: list[dict[int, int]]  # per query: document index -> grade
    graded: bool
    groups: np.ndarray | None = None  # LoCoMo: each window's conversation; None: one corpus
    query_groups: np.ndarray | None = None


def _ids(tokenizer, texts: list[str]) -> list[list[int]]:
    return [e.ids for e in tokenizer.encode_batch_fast(texts, add_special_tokens=False)]


def load_beir(root: Path, name: str, tokenizer) -> DevSet:
    split, graded = BEIR[name]
    docs, texts = [], []
    for line in open(root / name / "corpus.jsonl", encoding="utf-8"):
        d = json.loads(line)
        docs.append(d["_id"])
        texts.append(f"{d.get('title', '').strip()}\n\n{d['text'].strip()}")
    index = {d: i for i, d in enumerate(docs)}
    qtext = {}
    for line in open(root / name / "queries.jsonl", encoding="utf-8"):
        q = json.loads(line)
        qtext[q["_id"]] = q["text"]
    rel: dict[str, dict[int, int]] = {}
    for line in (root / name / "qrels" / f"{split}.tsv").read_text().splitlines()[1:]:
        qid, did, grade = line.split("\t")
        if int(grade) > 0 and did in index:
            rel.setdefault(qid, {})[index[did]] = int(grade)
    qids = sorted(rel)
    windows, owner = [], []
    for i, ids in enumerate(_ids(tokenizer, texts)):
        for s in range(0, max(len(ids), 1), WINDOW):
            windows.append(ids[s : s + WINDOW])
            owner.append(i)
    return DevSet(
        name,
        np.array(owner),
        windows,
        _ids(tokenizer, [qtext[q] for q in qids]),
        [rel[q] for q in qids],
        graded,
    )


def load_locomo(root: Path, tokenizer) -> DevSet:
    samples = json.loads((root / "locomo" / "locomo_dev.json").read_text(encoding="utf-8"))
    texts, groups, turn_index, queries, qgroups, qrels = [], [], {}, [], [], []
    for g, sample in enumerate(samples):
        for key, turns in sample["conversation"].items():
            if not re.fullmatch(r"session_\d+", key) or not turns:
                continue
            for t in turns:
                text = (
                    f"{t['speaker']}: "
                    + t["text"]
                    + (f" [shares a photo: {t['blip_caption']}]" if t.get("blip_caption") else "")
                )
                turn_index[(g, t["dia_id"])] = len(texts)
                texts.append(text)
                groups.append(g)
        for qa in sample["qa"]:
            gold = set()
            for raw in qa.get("evidence", []):
                for s, t in re.findall(r"D(\d+):(\d+)", raw.replace(" ", "")):
                    found = turn_index.get((g, f"D{int(s)}:{int(t)}"))
                    if found is not None:
                        gold.add(found)
            if gold and qa["category"] != 5:
                queries.append(qa["question"])
                qgroups.append(g)
                qrels.append({d: 1 for d in gold})
    ids = [x[:WINDOW] for x in _ids(tokenizer, texts)]
    return DevSet(
        "locomo",
        np.arange(len(texts)),
        ids,
        _ids(tokenizer, queries),
        qrels,
        False,
        np.array(groups),
        np.array(qgroups),
    )


def load_all(root: Path, tokenizer, names: list[str] | None = None) -> list[DevSet]:
    names = names or [*BEIR, "locomo"]
    return [
        load_locomo(root, tokenizer) if n == "locomo" else load_beir(root, n, tokenizer)
        for n in names
    ]


def embed(table: np.ndarray, ids: list[list[int]]) -> np.ndarray:
    out = np.zeros((len(ids), table.shape[1]), np.float32)
    for i, x in enumerate(ids):
        if x:
            out[i] = table[x].mean(0)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norms, 1e-9)


def ndcg10(ranked: list[int], rel: dict[int, int], graded: bool) -> float:
    gain = (lambda g: 2**g - 1) if graded else (lambda g: 1.0)
    dcg = sum(gain(rel.get(d, 0)) / math.log2(r + 2) for r, d in enumerate(ranked[:10]) if d in rel)
    ideal = sorted((gain(g) for g in rel.values()), reverse=True)[:10]
    idcg = sum(g / math.log2(r + 2) for r, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def score(table: np.ndarray, dev: DevSet) -> float:
    """nDCG@10 (LoCoMo: R@5 within the question's conversation) of the centred dense list."""
    w = embed(table, dev.windows)
    q = embed(table, dev.queries)
    out = []
    if dev.groups is None:
        centre = w.mean(0)
        wc = w - centre
        wc /= np.maximum(np.linalg.norm(wc, axis=1, keepdims=True), 1e-9)
        sims = (q - centre) @ wc.T
        n_docs = int(dev.doc_of_window.max()) + 1
        for i in range(len(q)):
            best = np.full(n_docs, -np.inf, np.float32)
            np.maximum.at(best, dev.doc_of_window, sims[i])
            ranked = np.argsort(-best, kind="stable")[:10].tolist()
            out.append(ndcg10(ranked, dev.qrels[i], dev.graded))
        return float(np.mean(out))
    for g in np.unique(dev.groups):
        rows = np.flatnonzero(dev.groups == g)
        centre = w[rows].mean(0)
        wc = w[rows] - centre
        wc /= np.maximum(np.linalg.norm(wc, axis=1, keepdims=True), 1e-9)
        for i in np.flatnonzero(dev.query_groups == g):
            top = rows[np.argsort(-((q[i] - centre) @ wc.T), kind="stable")[:5]]
            gold = dev.qrels[i]
            out.append(len(gold.keys() & set(top.tolist())) / len(gold))
    return float(np.mean(out))


def score_all(table: np.ndarray, devs: list[DevSet]) -> dict[str, float]:
    return {d.name: round(score(table, d), 4) for d in devs}
