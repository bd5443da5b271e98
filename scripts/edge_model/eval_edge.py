"""Score an edge model directory with the real search pipeline on every dev set: the dense list
alone, BM25 alone and the default (`balanced`), and compare two such runs.

Usage (from the repository root, in the project's venv):
  python scripts/edge_model/eval_edge.py --model src/nexusbrain/data/models/edge --json old.json
  python scripts/edge_model/eval_edge.py --model scripts/edge_model/models/edge --json new.json
  python scripts/edge_model/eval_edge.py --compare old.json new.json

The runs are scripts/tune_hybrid.py's (its scratch brains, loaders and variants: "dense" is the
dense list alone, BM25's weight 0), over SciFact train, Cranfield, CISI, MED, techdocs and
LoCoMo dev, with the edge profile's model read from --model instead of the package's: this
script points `profiles.MODELS` at a folder holding a link named `edge` to it. The scratch
brains are kept per model (under --work, by the model file's hash). `--compare` prints each
variant's difference between the two runs on each set's main metric (nDCG@10; R@5 on LoCoMo)
with its paired-bootstrap 95% interval (10,000 resamples).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tune_hybrid

from nexusbrain.embeddings import profiles
from nexusbrain.evals.bootstrap import comparison_seed, paired_bootstrap

VARIANTS = {
    "bm25": {"dense": False},
    "dense": {"weights": {"dense": 1.0, "bm25": 0.0}},
    "balanced": {},
}
BEIR_SETS = {**tune_hybrid.BEIR_SETS, "techdocs": ("test", True)}


def use_model(model: Path) -> None:
    """Make the edge profile load `model` (a model2vec-format folder)."""
    folder = Path(tempfile.mkdtemp(prefix="edge-model-"))
    (folder / "edge").symlink_to(model.resolve())
    profiles.MODELS = folder
    profiles.load_embedder.cache_clear()


def run(model: Path, datasets: Path, work: Path, only: list[str] | None) -> tune_hybrid.Results:
    use_model(model)
    digest = hashlib.sha256((model / "model.safetensors").read_bytes()).hexdigest()[:12]
    work = work / digest
    work.mkdir(parents=True, exist_ok=True)
    wanted = set(only or [*BEIR_SETS, "locomo"])
    results: tune_hybrid.Results = {}
    for name, (split, graded) in BEIR_SETS.items():
        if name in wanted:
            corpus, queries, qrels = tune_hybrid.beir(datasets / name, split)
            print(f"{name} {split} ({len(queries)} queries), model {model} ({digest})")
            settings = tune_hybrid.brain_for(work, name, "edge", tune_hybrid.fill_beir(corpus))
            results[name] = tune_hybrid.run_beir(settings, queries, qrels, graded, VARIANTS)
    if "locomo" in wanted:
        samples = tune_hybrid.locomo(datasets / "locomo" / "locomo_dev.json")
        print(f"locomo dev, model {model} ({digest})")
        settings = tune_hybrid.brain_for(work, "locomo", "edge", tune_hybrid.fill_locomo(samples))
        results["locomo"] = tune_hybrid.run_locomo(settings, samples, VARIANTS)
    return results


def compare(old: tune_hybrid.Results, new: tune_hybrid.Results) -> None:
    for name in new:
        if name not in old:
            continue
        metric = "recall@5" if name == "locomo" else "ndcg@10"
        for variant in new[name]:
            a, b = old[name][variant], new[name][variant]
            boot = paired_bootstrap(
                a["per_query"][metric],
                b["per_query"][metric],
                seed=comparison_seed(42, name, metric, "old", variant),
            )
            print(
                f"  {name:9s} {variant:9s} {metric} {a[metric]:.4f} -> {b[metric]:.4f}"
                f"  {boot.mean_difference:+.4f} [{boot.low:+.4f}, {boot.high:+.4f}]"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path)
    parser.add_argument("--datasets", type=Path, default=Path("../shared/datasets"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/nexusbrain-edge-eval"))
    parser.add_argument("--only", action="append")
    parser.add_argument("--json", type=Path, help="write every mean and per-query value here")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"))
    args = parser.parse_args()
    if args.compare:
        old, new = (json.loads(p.read_text(encoding="utf-8")) for p in args.compare)
        compare(old, new)
        return
    if args.model is None:
        parser.error("--model or --compare is required")
    results = run(args.model, args.datasets, args.work, args.only)
    if args.json:
        args.json.write_text(json.dumps(results), encoding="utf-8")


if __name__ == "__main__":
    main()
