"""Fit the confidence models (retrieval/confidence.py) of one embedding profile on the dev sets.

Usage:
  python scripts/fit_confidence.py --datasets ../shared/datasets --profile edge
      [--work /tmp/nexusbrain-tune] [--only SET ...] [--rows rows.json | --from-rows rows.json]
      [--features coverage matched ...] [--json fit.json] [--write]

Re-run it whenever a profile's embedding model changes; --write puts the model in
retrieval/modes.py (then `ruff format` it); --rows keeps the searched evidence so that
--from-rows can refit (other --features, say) without searching again.

The dev sets: SciFact train, Cranfield, CISI, MED and techdocs (BEIR layout, split test but
SciFact's train) and LoCoMo dev, each in a scratch brain of the profile (built under --work on
the first run, as scripts/tune_hybrid.py builds them, and reused). Each set's own questions are
searched in `balanced` (labelled 1 when one of the first five hits is relevant), and so are
questions that set cannot answer (labelled 0): a seeded sample of the other sets' questions
and made-up words. The features are the pipeline's own evidence of each result set
(`records.Evidence`). A logistic regression (Newton's method, a tiny ridge) weighs each set
alike: its answerable questions 3/4, its unanswerable ones 1/4, so the model is calibrated
for users of whom one question in four has no answer in their notes.

It prints, for each set held out, the model fitted on the others and how it does there
beside the shipped model (the constants in retrieval/modes.py now): the expected calibration
error over the set's own questions (what `nexusbrain eval` reports) with, in brackets, the
ECE a perfectly calibrated confidence would show at that set's size, their mean confidence
against the share with a relevant hit in the top five, the share of "good match" results
with one, of "no good match" results without one, the share `conservative` answers, and
the share of unanswerable questions it does not call "no good match"; then the precision of
"good match" at other thresholds, and the model fitted on every set: the constants of
`CONFIDENCE` in retrieval/modes.py, which --write puts there.

Profiles: `edge` and `quality` fit their `plain` model (`DENSE` below); `none` fits the
lexical model (`LEXICAL`), which `none` and `hashing` share and every search without a dense
list uses. When the searches' evidence carries a reranker's score, the model with it is
printed too, for a profile's `reranked` model.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import tune_hybrid as th

from nexusbrain.brain import Brain
from nexusbrain.config import Profile, parse_profile
from nexusbrain.evals.calibration import chance_ece, expected_calibration_error
from nexusbrain.records import Evidence, Hit, SearchFilters
from nexusbrain.retrieval import confidence as conf
from nexusbrain.retrieval.modes import ConfidenceModel

SETS = {"scifact": "train", "cranfield": "test", "cisi": "test", "med": "test", "techdocs": "test"}
ALL = (*SETS, "locomo")
SEED = 18
UNANSWERABLE_SHARE = 0.25  # of each set's weight: one question in four has no answer
RIDGE = 1e-3
THRESHOLDS = (0.7, 0.75, 0.8, 0.85, 0.9)
# What each model reads (docs/tuning.md: the margins and list ranks were measured and add
# nothing held out; --features tries other choices)
LEXICAL = (conf.Feature.COVERAGE, conf.Feature.MATCHED)
DENSE = (*LEXICAL, conf.Feature.COSINE, conf.Feature.OVERLAP)
MODES = Path(__file__).parent.parent / "src" / "nexusbrain" / "retrieval" / "modes.py"


@dataclass(frozen=True)
class Row:
    set: str
    kind: str  # "answerable", "other" (another set's question) or "made-up"
    good: bool  # a relevant hit among the first five
    evidence: Evidence | None  # None: the search returned nothing


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


def evidence_of(hits: list[Hit]) -> Evidence | None:
    found = hits[0].trace.confidence if hits else None
    return found.evidence if found is not None else None


def rows_for(args: argparse.Namespace) -> list[Row]:
    rng = random.Random(SEED)
    beir = {name: th.beir(args.datasets / name, split) for name, split in SETS.items()}
    questions = {name: list(found[1].values()) for name, found in beir.items()}
    samples = th.locomo(args.datasets / "locomo" / "locomo_dev.json")
    questions["locomo"] = [q["question"] for s in samples for q in s["qa"] if q["category"] != 5]
    nonsense = made_up(rng, 60)
    rows: list[Row] = []
    for name in SETS:
        corpus, queries, qrels = beir[name]
        others = [q for o in ALL if o != name for q in rng.sample(questions[o], 30)]
        if name not in args.only:
            continue
        started = time.perf_counter()
        settings = th.brain_for(args.work, name, args.profile, th.fill_beir(corpus))
        with Brain.open(settings=settings) as brain:
            for qid, text in queries.items():
                hits = brain.search(text, best_per_document=True)
                good = any(h.uri in qrels[qid] for h in hits[:5])
                rows.append(Row(name, "answerable", good, evidence_of(hits)))
            for kind, text in _unanswerable(others, nonsense):
                hits = brain.search(text, best_per_document=True)
                rows.append(Row(name, kind, False, evidence_of(hits)))
        print(f"  searched {name} in {time.perf_counter() - started:.0f}s", flush=True)
    if "locomo" in args.only:
        rows += locomo_rows(args, samples, questions, nonsense, rng)
    return rows


def locomo_rows(
    args: argparse.Namespace,
    samples: list[dict],
    questions: dict[str, list[str]],
    nonsense: list[str],
    rng: random.Random,
) -> list[Row]:
    started = time.perf_counter()
    rows = []
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
                rows.append(Row("locomo", "answerable", good, evidence_of(hits)))
            others = [q for o in SETS for q in rng.sample(questions[o], 8)]
            for kind, text in _unanswerable(others, rng.sample(nonsense, 12)):
                hits = brain.search(text, filters=within)
                rows.append(Row("locomo", kind, False, evidence_of(hits)))
    print(f"  searched locomo in {time.perf_counter() - started:.0f}s", flush=True)
    return rows


def _unanswerable(others: list[str], nonsense: list[str]) -> Iterator[tuple[str, str]]:
    yield from (("other", text) for text in others)
    yield from (("made-up", text) for text in nonsense)


# the fit


def design(rows: Sequence[Row], names: Sequence[conf.Feature]) -> np.ndarray:
    x = np.zeros((len(rows), len(names) + 1))
    x[:, 0] = 1.0
    for i, row in enumerate(rows):
        if row.evidence is not None:
            found = conf.features(row.evidence)
            x[i, 1:] = [found[name] for name in names]
    return x


def sample_weights(rows: Sequence[Row]) -> np.ndarray:
    """Each set weighs 1: its answerable questions 1 − UNANSWERABLE_SHARE, the rest the share."""
    count: dict[tuple[str, bool], int] = {}
    for r in rows:
        key = (r.set, r.kind == "answerable")
        count[key] = count.get(key, 0) + 1
    share = {True: 1 - UNANSWERABLE_SHARE, False: UNANSWERABLE_SHARE}
    return np.array(
        [share[r.kind == "answerable"] / count[(r.set, r.kind == "answerable")] for r in rows]
    )


def fit(rows: Sequence[Row], names: Sequence[conf.Feature]) -> ConfidenceModel:
    """Weighted logistic regression by Newton's method, the intercept unpenalised."""
    x, y, w = design(rows, names), np.array([float(r.good) for r in rows]), sample_weights(rows)
    beta = np.zeros(x.shape[1])
    penalty = RIDGE * np.eye(len(beta))
    penalty[0, 0] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(x @ beta)))
        gradient = x.T @ (w * (p - y)) + penalty @ beta
        hessian = (x * (w * p * (1 - p))[:, None]).T @ x + penalty
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    weights = {name.value: round(float(b), 4) for name, b in zip(names, beta[1:], strict=True)}
    return ConfidenceModel(round(float(beta[0]), 4), weights)  # type: ignore[arg-type]


def predict(model: ConfidenceModel, rows: Sequence[Row]) -> np.ndarray:
    return np.array([conf.chance(model, r.evidence) if r.evidence else 0.0 for r in rows])


def shipped(profile: Profile, rows: Sequence[Row]) -> np.ndarray:
    return np.array(
        [
            conf.chance(conf.chosen_model(profile, r.evidence), r.evidence) if r.evidence else 0.0
            for r in rows
        ]
    )


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    pos, neg = scores[labels], scores[~labels]
    if not len(pos) or not len(neg):
        return math.nan
    return float((pos[:, None] > neg[None]).mean() + 0.5 * (pos[:, None] == neg[None]).mean())


def figures(p: np.ndarray, rows: Sequence[Row]) -> dict[str, float]:
    """How a set's result sets fare: its own questions as `eval` scores them, and the rest."""
    answerable = np.array([r.kind == "answerable" for r in rows])
    good = np.array([r.good for r in rows])
    own, labels = p[answerable], good[answerable]
    strong, weak = own >= conf.GOOD_FROM, own < conf.WEAK_BELOW
    return {
        "ece": expected_calibration_error(own.tolist(), labels.tolist()),
        "chance_ece": chance_ece(own.tolist()),
        "mean_confidence": float(own.mean()),
        "observed": float(labels.mean()),
        "good_match": int(strong.sum()),
        "good_match_precision": float(labels[strong].mean()) if strong.any() else math.nan,
        "no_match": int(weak.sum()),
        "no_match_precision": float(1 - labels[weak].mean()) if weak.any() else math.nan,
        "conservative_answers": float((~weak).mean()),
        "unanswerable_not_weak": float((p[~answerable] >= conf.WEAK_BELOW).mean()),
        "auc": auc(p, good),
        **{
            f"precision_from_{t}": float(labels[own >= t].mean()) if (own >= t).any() else math.nan
            for t in THRESHOLDS
        },
    }


def features_of(profile: Profile, chosen: Sequence[str] | None) -> tuple[conf.Feature, ...]:
    """What a profile's plain model reads: the lexical model no dense feature."""
    if chosen:
        return tuple(conf.Feature(name) for name in chosen)
    return DENSE if profile in (Profile.EDGE, Profile.QUALITY) else LEXICAL


# output


HEAD = (
    "| set | model | ECE (of chance) | mean conf. / observed | good match: n, precision | "
    "no good match: n, precision | conservative answers | unanswerable not weak | AUC |"
)


def table_row(name: str, label: str, f: dict[str, float]) -> str:
    return (
        f"| {name} | {label} | {f['ece']:.3f} ({f['chance_ece']:.3f})"
        f" | {f['mean_confidence']:.2f} / {f['observed']:.2f}"
        f" | {f['good_match']}, {f['good_match_precision']:.3f} | {f['no_match']},"
        f" {f['no_match_precision']:.3f} | {f['conservative_answers']:.3f}"
        f" | {f['unanswerable_not_weak']:.3f} | {f['auc']:.3f} |"
    )


def model_source(model: ConfidenceModel) -> str:
    weights = ", ".join(f"{name}={w!r}" for name, w in model.weights.items())
    return f"_model({model.intercept!r}, {weights})"


def write_models(profile: Profile, model: ConfidenceModel) -> None:
    """Put the fitted model in modes.py's fitted block, as the profile's plain model (for
    `none`, the lexical model that `none` and `hashing` share)."""
    text = MODES.read_text(encoding="utf-8")
    name = "_LEXICAL" if profile in (Profile.NONE, Profile.HASHING) else f"_{profile.name}"
    line = f"{name} = {model_source(model)}\n"
    block = re.search(r"# BEGIN fitted confidence.*?\n(.*?)# END fitted confidence", text, re.S)
    if block is None:
        raise SystemExit(f"{MODES}: no '# BEGIN fitted confidence' block")
    body = block.group(1)
    found = re.search(rf"^{name} = .*?\)\n(?=\S|\Z)", body, re.S | re.M)
    body = body.replace(found.group(0), line) if found else line + body
    text = text[: block.start(1)] + body + text[block.end(1) :]
    MODES.write_text(text, encoding="utf-8")
    print(f"wrote {name} into {MODES} (run `ruff format` on it)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=Path, default=Path("../shared/datasets"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/nexusbrain-tune"))
    parser.add_argument("--profile", default="edge")
    parser.add_argument("--only", action="append", choices=ALL, help="sets to use (default all)")
    parser.add_argument("--rows", type=Path, help="also save the searched rows here")
    parser.add_argument("--from-rows", type=Path, help="fit rows saved by --rows; no search")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--write", action="store_true", help="put the model in modes.py")
    parser.add_argument(
        "--features",
        nargs="+",
        choices=[f.value for f in conf.Feature],
        help="fit these features instead of the profile's usual ones",
    )
    args = parser.parse_args()
    args.only = tuple(args.only or ALL)
    profile = parse_profile(args.profile)
    args.work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rows = load_rows(args.from_rows) if args.from_rows else rows_for(args)
    searched = time.perf_counter() - started
    if args.rows:
        args.rows.write_text(json.dumps([_row_view(r) for r in rows]), encoding="utf-8")
    names = features_of(profile, args.features)
    fitting = time.perf_counter()
    report = fit_report(profile, rows, names)
    final = fit(rows, names)
    print(f"searched in {searched:.0f}s, fitted in {time.perf_counter() - fitting:.1f}s")
    print(f"all sets ({len(rows)} result sets): {model_source(final)}")
    reranked = [r for r in rows if r.evidence is not None and r.evidence.rerank is not None]
    if reranked:  # the `reranked` model, for ProfileConfidence(plain, reranked) by hand
        print(f"with the reranker: {model_source(fit(reranked, (*names, conf.Feature.RERANK)))}")
    if args.json:
        report["model"] = {"intercept": final.intercept, "weights": dict(final.weights)}
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    if args.write:
        write_models(profile, final)


def fit_report(
    profile: Profile, rows: list[Row], names: Sequence[conf.Feature]
) -> dict[str, object]:
    sets = [name for name in ALL if any(r.set == name for r in rows)]
    print(HEAD)
    print("| --- " * 9 + "|")
    folds = []
    for name in sets:
        test = [r for r in rows if r.set == name]
        model = fit([r for r in rows if r.set != name], names)
        before, after = figures(shipped(profile, test), test), figures(predict(model, test), test)
        print(table_row(name, "shipped", before))
        print(table_row(name, "fitted without it", after))
        folds.append(
            {
                "held_out": name,
                "model": asdict(model) | {"weights": dict(model.weights)},
                "shipped": before,
                "held_out_fit": after,
            }
        )
    print("\n'good match' precision held out, from each threshold:")
    for t in THRESHOLDS:
        cells = ", ".join(
            f"{f['held_out']} {f['held_out_fit'][f'precision_from_{t}']:.3f}" for f in folds
        )
        print(f"  from {t}: {cells}")
    return {"profile": profile.value, "features": [n.value for n in names], "folds": folds}


def _row_view(row: Row) -> dict[str, object]:
    return {
        "set": row.set,
        "kind": row.kind,
        "good": row.good,
        "evidence": asdict(row.evidence) if row.evidence else None,
    }


def load_rows(path: Path) -> list[Row]:
    found = json.loads(path.read_text(encoding="utf-8"))
    return [
        Row(r["set"], r["kind"], r["good"], Evidence(**r["evidence"]) if r["evidence"] else None)
        for r in found
    ]


if __name__ == "__main__":
    main()
