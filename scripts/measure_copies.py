"""How often a result list repeats a text, with copies collapsed (the default) and without.

Usage:
  python scripts/measure_copies.py --datasets ../shared/datasets --profile edge
      [--work /tmp/nexusbrain-tune] [--only techdocs] [--mirror 0.3]

Runs every query of each dev set through `balanced` search (k=10, per chunk, as a user's
search is) on tune_hybrid.py's brains, and counts the result lists in which two hits hold the
same text once case and whitespace are set aside. The rule that collapses copies
(retrieval/copies.py) keeps equal texts indexed with different contexts apart on purpose (two
turns saying the same words on two days), so LoCoMo may keep a few.

The dev sets hold few copies of their own. `--mirror F` also measures each BEIR set in a
second brain that holds, beside every document, a second copy of a seeded share F of them
under `nightly/` (as a docs folder holds a stable and a nightly copy of one README): half of
them word for word, half with one word of the body changed.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import tune_hybrid as th

from nexusbrain.brain import Brain
from nexusbrain.records import Hit, SearchMode
from nexusbrain.retrieval.modes import PRESETS


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def repeats(hits: list[Hit]) -> int:
    """How many hits repeat the text of a hit above them."""
    seen = Counter(_normal(h.text) for h in hits)
    return sum(n - 1 for n in seen.values())


def measure(brain: Brain, queries: list[str]) -> dict[str, float]:
    balanced = PRESETS[SearchMode.BALANCED]
    out = {"queries": float(len(queries))}
    for label, config in (("kept", replace(balanced, distinct=False)), ("collapsed", balanced)):
        lists_with = hits_repeated = 0
        for text in queries:
            found = repeats(brain.search(text, k=10, config=config))
            lists_with += found > 0
            hits_repeated += found
        out[f"{label}: lists with a repeat"] = lists_with
        out[f"{label}: repeated hits"] = hits_repeated
    return out


def mirrored(corpus: dict[str, tuple[str, str]], share: float) -> dict[str, tuple[str, str]]:
    rng = random.Random(33)
    out = dict(corpus)
    for doc_id in sorted(corpus):
        if rng.random() >= share:
            continue
        title, text = corpus[doc_id]
        words = text.split(" ")
        if rng.random() < 0.5 and len(words) > 2:
            words[len(words) // 2] = "nightly"
        out[f"nightly/{doc_id}"] = (title, " ".join(words))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=Path, default=Path("../shared/datasets"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/nexusbrain-tune"))
    parser.add_argument("--profile", default="edge")
    parser.add_argument("--only", action="append")
    parser.add_argument("--mirror", type=float, help="also measure with this share mirrored")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    wanted = set(args.only or [*th.BEIR_SETS, "locomo"])
    for name, (split, _) in th.BEIR_SETS.items():
        if name not in wanted:
            continue
        corpus, queries, _ = th.beir(args.datasets / name, split)
        settings = th.brain_for(args.work, name, args.profile, th.fill_beir(corpus))
        with Brain.open(settings=settings) as brain:
            print(name, measure(brain, list(queries.values())))
        if args.mirror:
            fill = th.fill_beir(mirrored(corpus, args.mirror))
            settings = th.brain_for(args.work, f"{name}-mirror{args.mirror}", args.profile, fill)
            with Brain.open(settings=settings) as brain:
                print(f"{name} mirrored", measure(brain, list(queries.values())))
    if "locomo" in wanted:
        samples = th.locomo(args.datasets / "locomo" / "locomo_dev.json")
        settings = th.brain_for(args.work, "locomo", args.profile, th.fill_locomo(samples))
        questions = [qa["question"] for s in samples for qa in s["qa"] if qa.get("evidence")]
        with Brain.open(settings=settings) as brain:
            print("locomo", measure(brain, questions))


if __name__ == "__main__":
    main()
