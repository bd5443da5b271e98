"""Leave-one-dataset-out choice of the fusion constants over the five dev sets.

Usage:
  python scripts/fusion_lodo.py --datasets ../shared/datasets --profile edge
      [--work /tmp/nexusbrain-tune] [--json lodo.json] [--weights 0.3,0.5] [--floors none,-1]
  # score sets in separate processes, then judge them together:
  python scripts/fusion_lodo.py --only locomo --scores locomo.json
  python scripts/fusion_lodo.py --from-scores beir.json locomo.json --json lodo.json

Scores a grid of `balanced` variants (the dense weight × the dense list's lowest z) in
process, with tune_hybrid.py's brains and metrics, and each against BM25 alone by the paired
bootstrap (10,000 resamples, seeded per comparison). The rule a variant must meet on a set:
the main metric (nDCG@10; R@5 on LoCoMo) at or above BM25's, the 95% interval of the
difference not below -0.005, and recall@100 no more than 0.005 below BM25's. Then, for each
set held out, the variant chosen on the other four by two objectives:

- gain: among the variants meeting the rule on all four, the highest mean gain;
- robust: among those, the highest mean lower bound of the interval (the safest gain);

and how it does on the held-out set.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from statistics import mean
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import tune_hybrid as th

from nexusbrain.evals.bootstrap import comparison_seed, paired_bootstrap

WEIGHTS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0)
FLOORS = (None, -1.5, -1.0)
SETS = (*th.BEIR_SETS, "locomo")
MAIN = {name: "ndcg@10" for name in th.BEIR_SETS} | {"locomo": "recall@5"}


def grid(
    weights: tuple[float, ...] = WEIGHTS, floors: tuple[float | None, ...] = FLOORS
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {"bm25": {"dense": False}}
    for weight, floor in itertools.product(weights, floors):
        min_z = {} if floor is None else {"dense": floor, "dense_prf": floor}
        out[f"w{weight} z>={floor}"] = {"weights": {"bm25": 1.0, "dense": weight}, "min_z": min_z}
    return out


def scored(args: argparse.Namespace, configs: dict[str, dict[str, Any]]) -> th.Results:
    results: th.Results = {}
    wanted = set(args.only or SETS)
    for name, (split, graded) in th.BEIR_SETS.items():
        if name not in wanted:
            continue
        corpus, queries, qrels = th.beir(args.datasets / name, split)
        settings = th.brain_for(args.work, name, args.profile, th.fill_beir(corpus))
        results[name] = th.run_beir(settings, queries, qrels, graded, configs)
    if "locomo" not in wanted:
        return results
    samples = th.locomo(args.datasets / "locomo" / "locomo_dev.json")
    settings = th.brain_for(args.work, "locomo", args.profile, th.fill_locomo(samples))
    results["locomo"] = th.run_locomo(settings, samples, configs)
    return results


def judged(
    results: th.Results, base: str = "bm25", sets: tuple[str, ...] = SETS
) -> dict[str, dict[str, dict[str, float | bool]]]:
    """variant -> set -> gain over `base`, interval and whether the rule holds."""
    out: dict[str, dict[str, dict[str, float | bool]]] = {}
    for variant in results[sets[0]]:
        if variant == base or any(variant not in results[name] for name in sets):
            continue  # judged only where every set scored it
        out[variant] = {}
        for name in sets:
            metric = MAIN[name]
            before, mine = results[name][base], results[name][variant]
            boot = paired_bootstrap(
                before["per_query"][metric],
                mine["per_query"][metric],
                seed=comparison_seed(42, name, metric, base, variant),
            )
            recall_gap = mine["recall@100"] - before["recall@100"]
            out[variant][name] = {
                "gain": boot.mean_difference,
                "low": boot.low,
                "high": boot.high,
                "recall_gap": recall_gap,
                "ok": boot.mean_difference >= 0 and boot.low >= -0.005 and recall_gap >= -0.005,
            }
    return out


def folds(
    table: dict[str, dict[str, dict[str, float | bool]]], sets: tuple[str, ...] = SETS
) -> list[dict[str, Any]]:
    out = []
    for held in sets:
        train = [name for name in sets if name != held]
        meeting = [v for v in table if all(table[v][n]["ok"] for n in train)] or list(table)
        for objective, key in (("gain", "gain"), ("robust", "low")):
            chosen = max(meeting, key=lambda v, k=key: mean(float(table[v][n][k]) for n in train))
            out.append(
                {"held_out": held, "objective": objective, "chosen": chosen} | table[chosen][held]
            )
    return out


def printed(
    table: dict[str, dict[str, dict[str, float | bool]]], sets: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Print the judged table (variants in `table`'s order) and the leave-one-out folds; the
    folds."""
    print("\nvariant | " + " | ".join(sets))
    for variant, row in table.items():
        cells = [
            f"{row[n]['gain']:+.4f} [{row[n]['low']:+.4f}, {row[n]['high']:+.4f}]"
            + (" ok" if row[n]["ok"] else " --")
            for n in sets
        ]
        print(f"{variant} | " + " | ".join(cells))
    print("\nheld out | objective | chosen on the other sets | held-out gain [95% CI] | rule")
    chosen = folds(table, sets)
    for fold in chosen:
        print(
            f"{fold['held_out']} | {fold['objective']} | {fold['chosen']} | {fold['gain']:+.4f}"
            f" [{fold['low']:+.4f}, {fold['high']:+.4f}] | {'met' if fold['ok'] else 'missed'}"
        )
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=Path, default=Path("../shared/datasets"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/nexusbrain-tune"))
    parser.add_argument("--profile", default="edge")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--weights", help="dense weights, comma-separated")
    parser.add_argument("--floors", help="the dense list's lowest z, comma-separated ('none')")
    parser.add_argument("--only", action="append", help="score only this set (repeatable)")
    parser.add_argument("--scores", type=Path, help="write the raw scores here and stop")
    parser.add_argument("--from-scores", type=Path, nargs="+", help="judge these raw scores")
    args = parser.parse_args()
    if args.from_scores:
        results: th.Results = {}
        for path in args.from_scores:
            results.update(json.loads(path.read_text(encoding="utf-8")))
    else:
        args.work.mkdir(parents=True, exist_ok=True)
        weights = tuple(float(w) for w in args.weights.split(",")) if args.weights else WEIGHTS
        floors = (
            tuple(None if f == "none" else float(f) for f in args.floors.split(","))
            if args.floors
            else FLOORS
        )
        results = scored(args, grid(weights, floors))
    if args.scores:
        args.scores.write_text(json.dumps(results), encoding="utf-8")
        return
    table = judged(results)
    chosen = printed(table, SETS)
    if args.json:
        args.json.write_text(json.dumps({"table": table, "folds": chosen}), encoding="utf-8")


if __name__ == "__main__":
    main()
