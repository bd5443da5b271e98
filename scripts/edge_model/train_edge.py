#!/usr/bin/env python3
"""Fit the edge model (a static token table, model2vec format) to the all-MiniLM-L6-v2 teacher.

python train_edge.py --init models/m2v_nopca_f32 --data data --out models/edge [options]

1. vocabulary: the init's WordPiece vocabulary plus the --words most frequent whole words of
   the corpus (data/texts.jsonl) that WordPiece cuts into pieces; a new word's row starts as the
   sum of its pieces' rows, so that every text keeps its vector. The tokenizer stays BERT's
   uncased WordPiece (a longer match wins), so nexusbrain's own WordPiece reads it.
2. regression: each row of the table is fitted so that the normalised mean of a text's rows
   matches the teacher's vector of that text (featurize.py; loss 1 - cosine). The teacher saw the
   first 64 tokens, the student sees the whole text (--student-window: the same 64). Adam,
   one-cycle schedule. Then the mean row is subtracted from every row.
3. projection on the --dim principal axes, then relational distillation (--rel-epochs, 6):
   in each batch of texts, every text's softmax over its cosines to the others is fitted to the
   teacher's (KL), so that the student learns which texts the teacher puts together. It runs on
   the final axes, so that the projection does not undo it.
4. contrastive (off unless --con-epochs, and only with --rel-epochs 0): InfoNCE with in-batch
   negatives on pairs mined without labels (data/pairs.jsonl: a heading and its section, a man
   page's NAME line and its DESCRIPTION, a term and its definition, a sentence and the rest of
   its passage, a turn and its reply), both directions, with the regression loss kept as a pull
   towards the teacher (--keep). It did not help (docs/design/embedding.md).
5. int8, saved with the tokenizer and the arguments.

The dev sets are only scored (devsets.py, a quick proxy), never trained on. The regressed table
is cached under data/ (keyed by the arguments that make it), so that a change to a later stage
does not redo it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import devsets
import numpy as np
import torch
from safetensors.numpy import load_file, save_file
from tokenizers import Tokenizer

TEACHER_TOKENS = 62  # the teacher's 64 less [CLS] and [SEP]
DOC_TOKENS = 256
# pairs of each kind the contrastive step draws from (the rest of a large kind is left out)
PAIR_CAPS = {
    "ict": 80_000,
    "wordnet": 40_000,
    "dict": 40_000,
    "go": 35_096,
    "chat": 60_000,
    "man-name": 10_000,
    "doc-heading": 10_000,
    "pydoc-heading": 10_000,
    "pypi-heading": 10_000,
    "pypi-summary": 10_000,
}


def log(*parts: object) -> None:
    print(time.strftime("%H:%M:%S"), *parts, flush=True)


# ---------------------------------------------------------------- vocabulary


def extend_vocabulary(spec: dict, texts: list[str], n_words: int, min_count: int) -> list[str]:
    """Add the corpus's most frequent whole words that WordPiece would cut to the vocabulary."""
    vocab = spec["model"]["vocab"]
    counts: Counter[str] = Counter()
    for t in texts:
        counts.update(re.findall(r"[a-z]+", t.lower()))
    added = [
        w
        for w, c in counts.most_common()
        if c >= min_count and 4 <= len(w) <= 20 and w not in vocab
    ][:n_words]
    for w in added:
        vocab[w] = len(vocab)
    return added


def init_rows(table: np.ndarray, old: Tokenizer, words: list[str]) -> np.ndarray:
    rows = np.zeros((len(words), table.shape[1]), np.float32)
    for i, w in enumerate(words):
        ids = old.encode(w, add_special_tokens=False).ids
        rows[i] = table[ids].sum(0) if ids else 0
    return rows


# ---------------------------------------------------------------- pooling


def bags(ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    flat = torch.tensor([t for x in ids for t in x], dtype=torch.long)
    offsets = torch.tensor(
        np.concatenate(([0], np.cumsum([len(x) for x in ids])[:-1])), dtype=torch.long
    )
    return flat, offsets


def pool(table: torch.Tensor, ids: list[list[int]]) -> torch.Tensor:
    flat, offsets = bags(ids)
    return torch.nn.functional.embedding_bag(flat, table, offsets, mode="mean")


def teacher_window(texts: list[str], teacher_tok: Tokenizer) -> list[str]:
    """Each text cut where the teacher's tokens stopped (64 with [CLS] and [SEP])."""
    out = []
    for t, e in zip(
        texts, teacher_tok.encode_batch_fast(texts, add_special_tokens=False), strict=True
    ):
        out.append(t[: e.offsets[TEACHER_TOKENS - 1][1]] if len(e.ids) > TEACHER_TOKENS else t)
    return out


def teacher_vectors(folder: Path) -> tuple[list[str], torch.Tensor]:
    """featurize.py's texts and vectors: all of them, or the shards finished so far."""
    texts = [json.loads(line) for line in open(folder / "texts.jsonl", encoding="utf-8")]
    if (folder / "vectors.npy").exists():
        vectors = np.load(folder / "vectors.npy")
    else:
        vectors = np.concatenate([np.load(p) for p in sorted((folder / "shards").glob("*.npy"))])
    return texts[: len(vectors)], torch.from_numpy(vectors.astype(np.float32))


# ---------------------------------------------------------------- stages


def step(opt: torch.optim.Optimizer, sched, loss: torch.Tensor) -> None:
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()


def report(what: str, E: torch.Tensor, devs) -> None:
    with torch.no_grad():
        log(what, devsets.score_all(E.detach().numpy(), devs))


def regress(E: torch.nn.Parameter, ids: list[list[int]], Y: torch.Tensor, a, devs) -> None:
    keep = [i for i, x in enumerate(ids) if x]
    rng = np.random.default_rng(a.seed)
    rng.shuffle(keep)
    val, tr = np.array(keep[:2000]), np.array(keep[2000:])
    opt = torch.optim.Adam([E], lr=a.lr)
    steps = a.reg_epochs * ((len(tr) + a.bs - 1) // a.bs)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=a.lr, total_steps=steps, pct_start=0.05)

    def cos(ix: np.ndarray) -> torch.Tensor:
        return torch.nn.functional.cosine_similarity(pool(E, [ids[i] for i in ix]), Y[ix], dim=1)

    for ep in range(a.reg_epochs):
        rng.shuffle(tr)
        for s in range(0, len(tr), a.bs):
            step(opt, sched, (1 - cos(tr[s : s + a.bs])).mean())
        with torch.no_grad():
            val_cos = float(cos(val).mean())
        report(f"regression epoch {ep}: val cos {val_cos:.4f}", E, devs)


def contrast(
    E: torch.nn.Parameter,
    pairs: list[tuple[list[int], list[int]]],
    reg_ids: list[list[int]],
    Y: torch.Tensor,
    a,
    devs,
) -> None:
    rng = np.random.default_rng(a.seed + 1)
    opt = torch.optim.Adam([E], lr=a.con_lr)
    steps = a.con_epochs * (len(pairs) // a.con_bs)
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=a.con_lr, total_steps=steps, pct_start=0.05
    )
    labels = torch.arange(a.con_bs)
    reg_pool = np.array([i for i, x in enumerate(reg_ids) if x])
    done = 0
    for _ep in range(a.con_epochs):
        order = rng.permutation(len(pairs))
        for s in range(0, len(order) - a.con_bs + 1, a.con_bs):
            batch = [pairs[i] for i in order[s : s + a.con_bs]]
            q = torch.nn.functional.normalize(pool(E, [b[0] for b in batch]), dim=1)
            d = torch.nn.functional.normalize(pool(E, [b[1] for b in batch]), dim=1)
            logits = q @ d.T * a.scale
            loss = (
                torch.nn.functional.cross_entropy(logits, labels)
                + torch.nn.functional.cross_entropy(logits.T, labels)
            ) / 2
            if a.keep:
                ix = rng.choice(reg_pool, a.bs, replace=False)
                cos = torch.nn.functional.cosine_similarity(
                    pool(E, [reg_ids[i] for i in ix]), Y[ix], dim=1
                )
                loss = loss + a.keep * (1 - cos).mean()
            step(opt, sched, loss)
            done += 1
            if done % a.eval_every == 0:
                report(f"contrastive step {done}/{steps}: loss {float(loss):.3f}", E, devs)


def relate(E: torch.nn.Parameter, ids: list[list[int]], Y: torch.Tensor, a, devs) -> None:
    """Relational distillation: in each batch, every text's softmax over its cosines to the
    others, the student's against the teacher's (KL), so that the student learns which texts the
    teacher puts near each other rather than where it puts each one."""
    keep = np.array([i for i, x in enumerate(ids) if x])
    rng = np.random.default_rng(a.seed + 2)
    opt = torch.optim.Adam([E], lr=a.rel_lr)
    steps = a.rel_epochs * (len(keep) // a.rel_bs)
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=a.rel_lr, total_steps=steps, pct_start=0.05
    )
    Yc = torch.nn.functional.normalize(Y - Y.mean(0, keepdim=True), dim=1)
    eye = torch.eye(a.rel_bs, dtype=torch.bool)
    for ep in range(a.rel_epochs):
        order = rng.permutation(keep)
        for s in range(0, len(order) - a.rel_bs + 1, a.rel_bs):
            ix = order[s : s + a.rel_bs]
            x = torch.nn.functional.normalize(pool(E, [ids[i] for i in ix]), dim=1)
            x = torch.nn.functional.normalize(x - x.mean(0, keepdim=True), dim=1)
            t = Yc[ix]
            teacher = (t @ t.T / a.rel_tau).masked_fill(eye, -1e4).softmax(1)
            student = (x @ x.T / a.rel_tau).masked_fill(eye, -1e4).log_softmax(1)
            loss = torch.nn.functional.kl_div(student, teacher, reduction="batchmean")
            step(opt, sched, loss)
        report(f"relational epoch {ep}: loss {float(loss):.4f}", E, devs)


def project(W: np.ndarray, dim: int) -> np.ndarray:
    """The rows on their `dim` principal axes (float32)."""
    from sklearn.decomposition import PCA

    if dim >= W.shape[1]:
        return W
    # the principal axes, but no centring: subtracting the mean row from every row moves
    # every text's mean by the same vector and cost 0.06 nDCG@10 on SciFact (0.42 -> 0.36)
    axes = PCA(n_components=dim, svd_solver="full", random_state=0).fit(W).components_
    return (W @ axes.T).astype(np.float32)


def to_int8(W: np.ndarray, unk: int) -> np.ndarray:
    W = W / np.abs(W).max() * 127
    Q = np.clip(np.round(W), -127, 127).astype(np.int8)
    Q[unk] = 0  # nexusbrain and model2vec agree on a text with [UNK] only if its row is zero
    return Q


# ---------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--init", type=Path, required=True)
    ap.add_argument("--data", type=Path, default=Path("data"))
    ap.add_argument(
        "--dev", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "datasets"
    )
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--words", type=int, default=3000, help="whole words added to the vocabulary")
    ap.add_argument("--min-count", type=int, default=20)
    ap.add_argument("--reg-epochs", type=int, default=4)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--bs", type=int, default=256)
    ap.add_argument("--con-epochs", type=int, default=0, help="0: no contrastive step (what ships)")
    ap.add_argument("--con-lr", type=float, default=1e-3)
    ap.add_argument("--con-bs", type=int, default=512)
    ap.add_argument("--scale", type=float, default=20.0, help="InfoNCE inverse temperature")
    ap.add_argument(
        "--keep", type=float, default=1.0, help="weight of the regression loss while contrasting"
    )
    ap.add_argument(
        "--student-window",
        action="store_true",
        help="the student sees only what the teacher saw (else the whole text, up to 512 tokens)",
    )
    ap.add_argument(
        "--reg-sources",
        default="",
        help="comma-separated corpus sources to regress on (default: every source)",
    )
    ap.add_argument(
        "--kinds", default="", help="comma-separated pair kinds to contrast on (default: all)"
    )
    ap.add_argument(
        "--centre-teacher",
        action="store_true",
        help="regress onto the teacher's vectors less their mean (renormalised)",
    )
    ap.add_argument(
        "--rel-epochs",
        type=int,
        default=6,
        help="epochs of relational distillation after the regression (0: none; 6 ships)",
    )
    ap.add_argument("--rel-lr", type=float, default=1e-3)
    ap.add_argument("--rel-bs", type=int, default=512)
    ap.add_argument("--rel-tau", type=float, default=0.05, help="softmax temperature of both sides")
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-every", type=int, default=200)
    a = ap.parse_args()
    if a.rel_epochs and a.con_epochs:
        raise SystemExit("--con-epochs runs in the teacher's space: use it with --rel-epochs 0")
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    torch.set_num_threads(a.threads)
    started = time.time()

    spec = json.loads((a.init / "tokenizer.json").read_text())
    old_tok = Tokenizer.from_str(json.dumps(spec))
    stored = load_file(str(a.init / "model.safetensors"))["embeddings"]
    table = stored.astype(np.float32)
    if stored.dtype == np.int8:  # a finished model: rows back to the float scale Adam's rate suits
        table /= np.median(np.linalg.norm(table, axis=1))
    teacher_space = table.shape[1] == 384
    if not teacher_space and (a.reg_epochs or a.keep):
        raise SystemExit(
            f"--init {a.init} is not in the teacher's 384 dimensions: use --reg-epochs 0 --keep 0"
        )
    texts, Y = teacher_vectors(a.data / "teacher")
    all_texts = [json.loads(l)["t"] for l in open(a.data / "texts.jsonl", encoding="utf-8")]
    added = extend_vocabulary(spec, all_texts, a.words, a.min_count)
    tok = Tokenizer.from_str(json.dumps(spec))
    table = np.concatenate([table, init_rows(table, old_tok, added)])
    log(f"vocabulary {len(table)} ({len(added)} words added: {added[:12]} ...)")
    devs = devsets.load_all(a.dev, tok)
    log("init", devsets.score_all(table, devs))

    if a.reg_sources:
        source_of = {}
        for line in open(a.data / "texts.jsonl", encoding="utf-8"):
            row = json.loads(line)
            source_of[row["t"]] = row["s"]
        wanted = set(a.reg_sources.split(","))
        chosen = [i for i, t in enumerate(texts) if source_of.get(t) in wanted]
        texts, Y = [texts[i] for i in chosen], Y[chosen]
        log(f"regression on {len(texts)} texts of {sorted(wanted)}")
    if a.centre_teacher:
        Y = torch.nn.functional.normalize(Y - Y.mean(0, keepdim=True), dim=1)
    seen = teacher_window(texts, old_tok) if a.student_window else texts
    reg_ids = [e.ids[:512] for e in tok.encode_batch_fast(seen, add_special_tokens=False)]
    E = torch.nn.Parameter(torch.from_numpy(table))
    key = hashlib.sha256(
        f"{a.init}|{a.words}|{a.min_count}|{a.reg_epochs}|{a.lr}|{a.bs}|{a.seed}|{len(texts)}|{a.student_window}|{a.reg_sources}{'|centred' if a.centre_teacher else ''}".encode()
    ).hexdigest()[:10]
    cache = a.data / f"table_reg_{key}.npy"
    if cache.exists():
        E.data = torch.from_numpy(np.load(cache))
        log("regression table from", cache)
    elif a.reg_epochs:
        regress(E, reg_ids, Y, a, devs)
        np.save(cache, E.detach().numpy())
    if a.reg_epochs:
        # The teacher's vectors share one direction, and the fit puts it into every row, where
        # it swamps what tells texts apart: take the mean row out (SciFact 0.41 -> 0.44 and
        # techdocs 0.17 -> 0.27 on the quick proxy, 33k texts).
        E.data -= E.data.mean(0, keepdim=True)
        log("rows centred", devsets.score_all(E.detach().numpy(), devs))
    reg_seconds = time.time() - started
    if a.rel_epochs:
        # on the final axes, so that the projection does not undo what it learns
        E = torch.nn.Parameter(torch.from_numpy(project(E.detach().numpy(), a.dim)))
        log(f"pca {a.dim}", devsets.score_all(E.detach().numpy(), devs))
        relate(E, reg_ids, Y, a, devs)

    if a.con_epochs:
        by_kind: dict[str, list[tuple[str, str]]] = {}
        for line in open(a.data / "pairs.jsonl", encoding="utf-8"):
            p = json.loads(line)
            by_kind.setdefault(p["k"], []).append((p["q"], p["d"]))
        kinds = set(a.kinds.split(",")) if a.kinds else set(by_kind)
        chosen = [
            pq
            for k, ps in sorted(by_kind.items())
            if k in kinds
            for pq in ps[: PAIR_CAPS.get(k, 0)]
        ]
        q_ids = [
            e.ids[:DOC_TOKENS]
            for e in tok.encode_batch_fast([q for q, _ in chosen], add_special_tokens=False)
        ]
        d_ids = [
            e.ids[:DOC_TOKENS]
            for e in tok.encode_batch_fast([d for _, d in chosen], add_special_tokens=False)
        ]
        pairs = [(q, d) for q, d in zip(q_ids, d_ids, strict=True) if q and d]
        log(
            f"contrastive: {len(pairs)} pairs",
            {k: min(len(v), PAIR_CAPS.get(k, 0)) for k, v in by_kind.items()},
        )
        contrast(E, pairs, reg_ids, Y, a, devs)
    W = E.detach().numpy()
    log("float32 table", devsets.score_all(W, devs))
    Q = to_int8(project(W, a.dim), spec["model"]["vocab"]["[UNK]"])
    final = devsets.score_all(Q.astype(np.float32), devs)
    log(f"pca {a.dim} int8", final)

    a.out.mkdir(parents=True, exist_ok=True)
    save_file({"embeddings": Q}, str(a.out / "model.safetensors"))
    (a.out / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False))
    config = json.loads((a.init / "config.json").read_text())
    config.update(
        {
            "apply_pca": a.dim,
            "hidden_dim": a.dim,
            "embedding_dtype": "int8",
            "normalize": True,
            "tokenizer_name": "all-MiniLM-L6-v2 WordPiece (Apache-2.0) + corpus words",
        }
    )
    config.pop("sif_coefficient", None)
    (a.out / "config.json").write_text(json.dumps(config, indent=4))
    args = {k: str(v) if isinstance(v, Path) else v for k, v in vars(a).items()}
    args.update(
        {
            "vocabulary": len(Q),
            "words_added": len(added),
            "regression_texts": len(texts),
            "proxy_scores": final,
            "seconds": round(time.time() - started),
            "regression_seconds": round(reg_seconds),
        }
    )
    (a.out / "training_args.json").write_text(json.dumps(args, indent=1))
    log("saved", a.out, f"{(a.out / 'model.safetensors').stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
