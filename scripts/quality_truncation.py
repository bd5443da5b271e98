"""What the quality profile's truncation costs: SciFact train (dev), dense alone and `balanced`,
with every chunk cut at each of several token counts.

Usage:
  python scripts/quality_truncation.py [--datasets ../shared/datasets] [--work /tmp/truncation]
      [--tokens 128,256,512]

One scratch brain per token count (kept under --work and reused), its chunks embedded by
`OnnxEmbedder(max_tokens=N)`; queries are cut the same way (none is that long). Scored per
document (best chunk per document), as scripts/tune_hybrid.py does. Prints nDCG@10, R@100 and
how long embedding the corpus took. The figures in docs/tuning.md come from this script.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings
from nexusbrain.embeddings.onnx import OnnxEmbedder
from nexusbrain.embeddings.profiles import MODELS
from nexusbrain.evals.metrics import ndcg_at_k, recall_at_k
from nexusbrain.storage import open as open_backend

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tune_hybrid import beir, config_of, fill_beir

VARIANTS = {"dense": {"weights": {"dense": 1.0, "bm25": 0.0}}, "balanced": {}}


def brain_with(db: Path, tokens: int) -> Brain:
    settings = Settings(db=db, embedder=Profile.QUALITY)
    embedder = OnnxEmbedder(MODELS / "minilm", max_tokens=tokens)
    return Brain(open_backend(db, settings.lexical), embedder, settings)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=Path, default=Path("../shared/datasets"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/truncation"))
    parser.add_argument("--tokens", default="128,256,512")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    corpus, queries, qrels = beir(args.datasets / "scifact", "train")
    for tokens in (int(t) for t in args.tokens.split(",")):
        db = args.work / f"scifact-t{tokens}.db"
        with brain_with(db, tokens) as brain:
            started = time.perf_counter()
            if brain.stats().store.chunks == 0:
                fill_beir(corpus)(brain)
            brain.admin.embed_missing()
            built = time.perf_counter() - started
            for name, overrides in VARIANTS.items():
                config = config_of(overrides)
                ndcg, r100 = [], []
                for qid, text in queries.items():
                    hits = brain.search(text, k=100, config=config, best_per_document=True)
                    ranked = [h.uri for h in hits]
                    ndcg.append(ndcg_at_k(ranked, set(qrels[qid]), 10))
                    r100.append(recall_at_k(ranked, set(qrels[qid]), 100))
                print(
                    f"{tokens:4d} tokens {name:9s} nDCG@10 {statistics.fmean(ndcg):.4f}"
                    f"  R@100 {statistics.fmean(r100):.4f}  (built in {built:.0f}s)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
