"""Fit the confidence curve (retrieval/confidence.py) on the five dev sets.

Usage:
  python scripts/fit_confidence.py --datasets ../shared/datasets --profile edge
      [--work /tmp/nexusbrain-tune] [--json confidence.json]

Each dev set's own questions are searched in `balanced` (labelled 1 when one of the first
five hits is relevant), and so are questions that set cannot answer: a seeded sample of the
other sets' questions and made-up words (labelled 0). The pipeline's own coverage and matched
idf weight of each result set are the features; a logistic regression (Newton's method, a
tiny ridge) weighs each set's answerable questions and its unanswerable ones equally, so the
curve is calibrated for a mix of half and half. It prints, for each set held out, the curve
fitted on the other four and how it does there (mean confidence against the observed rate on
answerable questions, AUC of answerable against unanswerable, the share of answerable
questions with a good hit that fall under the weak line, and of unanswerable ones above it),
then the curve fitted on all five: the constants of `ConfidenceModel`.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import tune_hybrid as th

from nexusbrain.brain import Brain
from nexusbrain.records import Hit, SearchFilters
from nexusbrain.retrieval.modes import ConfidenceModel

SETS = (*th.BEIR_SETS, "locomo")
SEED = 18
WEAK = ConfidenceModel().weak_below


@dataclass(frozen=True)
class Row:
    set: str
    answerable: bool
    coverage: float
    matched: float
    good: bool  # a relevant hit among the first five


def made_up(rng: random.Random, n: int) -> list[str]:
    """Syllable words ("bokitu vase") and runs of letters and digits ("q7x2kdp")."""
    out = []
    for i in range(n):
        if i % 2 == 0:
            words = [
                "".join(rng.choice("bcdfghjklmnpqrstvwxz") + rng.choice("aeiou") for _ in range(3))
                for _ in range(rng.randint(1, 4))
            ]
            out.append(" ".join(words))
        else:
            alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
            out.append("".join(rng.choice(alphabet) for _ in range(rng.randint(5, 12))))
    return out


def features(hits: list[Hit]) -> tuple[float, float]:
    if not hits or hits[0].trace.confidence is None:
        return 0.0, 0.0
    value = hits[0].trace.confidence
    return value.coverage, value.matched


def rows_for(args: argparse.Namespace) -> list[Row]:
    rng = random.Random(SEED)
    questions: dict[str, list[str]] = {}
    beir = {}
    for name, (split, _) in th.BEIR_SETS.items():
        beir[name] = th.beir(args.datasets / name, split)
        questions[name] = list(beir[name][1].values())
    samples = th.locomo(args.datasets / "locomo" / "locomo_dev.json")
    questions["locomo"] = [q["question"] for s in samples for q in s["qa"] if q["category"] != 5]
    nonsense = made_up(rng, 60)
    rows: list[Row] = []
    for name in th.BEIR_SETS:
        corpus, queries, qrels = beir[name]
        settings = th.brain_for(args.work, name, args.profile, th.fill_beir(corpus))
        with Brain.open(settings=settings) as brain:
            for qid, text in queries.items():
                hits = brain.search(text, best_per_document=True)
                good = any(h.uri in qrels[qid] for h in hits[:5])
                rows.append(Row(name, True, *features(hits), good))
            others = [q for o in SETS if o != name for q in rng.sample(questions[o], 30)]
            for text in others + nonsense:
                rows.append(Row(name, False, *features(brain.search(text)), False))
    settings = th.brain_for(args.work, "locomo", args.profile, th.fill_locomo(samples))
    with Brain.open(settings=settings) as brain:
        for sample in samples:
            within = SearchFilters(path_prefix=f"conversation://{sample['sample_id']}/")
            for qa in sample["qa"]:
                gold = th._evidence(qa.get("evidence", []))
                if not gold or qa["category"] == 5:
                    continue
                hits = brain.search(qa["question"], filters=within)
                good = any(h.unit in gold for h in hits[:5])
                rows.append(Row("locomo", True, *features(hits), good))
            others = [q for o in th.BEIR_SETS for q in rng.sample(questions[o], 8)]
            for text in others + rng.sample(nonsense, 12):
                hits = brain.search(text, filters=within)
                rows.append(Row("locomo", False, *features(hits), False))
    return rows


def design(rows: list[Row]) -> np.ndarray:
    return np.array([[1.0, r.coverage, math.log1p(r.matched)] for r in rows])


def fit(rows: list[Row], ridge: float = 1e-3) -> np.ndarray:
    x, y = design(rows), np.array([float(r.good) for r in rows])
    count: dict[tuple[str, bool], int] = {}
    for r in rows:
        count[(r.set, r.answerable)] = count.get((r.set, r.answerable), 0) + 1
    w = np.array([1.0 / count[(r.set, r.answerable)] for r in rows])
    beta = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-x @ beta))
        gradient = x.T @ (w * (p - y)) + ridge * beta
        hessian = (x * (w * p * (1 - p))[:, None]).T @ x + ridge * np.eye(len(beta))
        beta -= np.linalg.solve(hessian, gradient)
    return beta


def predict(beta: np.ndarray, rows: list[Row]) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-design(rows) @ beta))


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    pos, neg = scores[labels], scores[~labels]
    return float((pos[:, None] > neg[None]).mean() + 0.5 * (pos[:, None] == neg[None]).mean())


def held_out(rows: list[Row], name: str) -> dict[str, float | str | list[float]]:
    beta = fit([r for r in rows if r.set != name])
    test = [r for r in rows if r.set == name]
    p = predict(beta, test)
    answerable = np.array([r.answerable for r in test])
    good = np.array([r.good for r in test])
    return {
        "held_out": name,
        "curve": [round(float(b), 3) for b in beta],
        "mean_confidence": float(p[answerable].mean()),
        "observed": float(good[answerable].mean()),
        "auc": auc(p, answerable),
        "good_under_weak": float((p[good] < WEAK).mean()),
        "unanswerable_over_weak": float((p[~answerable] >= WEAK).mean()),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=Path, default=Path("../shared/datasets"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/nexusbrain-tune"))
    parser.add_argument("--profile", default="edge")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = rows_for(args)
    folds = [held_out(rows, name) for name in SETS]
    print("held out | curve (a, b, c) | confidence / observed | AUC | good < weak | bad >= weak")
    for f in folds:
        print(
            f"{f['held_out']} | {f['curve']} | {f['mean_confidence']:.2f} / {f['observed']:.2f}"
            f" | {f['auc']:.3f} | {f['good_under_weak']:.2f} | {f['unanswerable_over_weak']:.2f}"
        )
    beta = fit(rows)
    p = predict(beta, rows)
    good = np.array([r.good for r in rows])
    print(f"all five: intercept {beta[0]:.3f}, coverage {beta[1]:.3f}, matched {beta[2]:.3f}")
    for low in np.arange(0.0, 1.0, 0.2):
        inside = (p >= low) & (p < low + 0.2)
        if inside.any():
            print(
                f"  confidence {low:.1f}-{low + 0.2:.1f}: {int(inside.sum())} result sets, "
                f"mean {p[inside].mean():.2f}, a good hit in {good[inside].mean():.2f}"
            )
    if args.json:
        out = {"folds": folds, "curve": [float(b) for b in beta]}
        args.json.write_text(json.dumps(out), encoding="utf-8")


if __name__ == "__main__":
    main()
