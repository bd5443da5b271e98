#!/usr/bin/env python3
"""Build the generic (non-dev-set) training corpus for the static model.

Sources (all offline, none of them SciFact / Cranfield / LoCoMo):
  * WordNet 3.0 glosses (Debian package wordnet-base: /usr/share/wordnet/data.{noun,verb,adj,adv});
    one text per synset: "lemma, lemma: gloss".  WordNet 3.0 licence (permissive, BSD-like).
  * Python 3.11 documentation prose (Debian package python3.11-doc: /usr/share/doc/python3.11/html/_sources),
    paragraphs of >= 12 words, code blocks / directives dropped.  PSF licence.
Writes corpus.txt (one text per line, deduplicated, deterministic order).
"""

import glob
import re
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "corpus.txt"
texts = []

for pos in ("noun", "verb", "adj", "adv"):
    for line in open(f"/usr/share/wordnet/data.{pos}", encoding="latin-1"):
        if line.startswith("  "):
            continue  # licence header
        head, _, gloss = line.partition(" | ")
        f = head.split()
        n = int(f[3], 16)
        words = [re.sub(r"\(.*?\)$", "", f[4 + 2 * i]).replace("_", " ") for i in range(n)]
        texts.append(", ".join(dict.fromkeys(words)) + ": " + gloss.strip())

n_wn = len(texts)
for path in sorted(glob.glob("/usr/share/doc/python3.11/html/_sources/**/*.txt", recursive=True)):
    raw = open(path, encoding="utf-8", errors="replace").read()
    for para in re.split(r"\n\s*\n", raw):
        lines = para.strip().splitlines()
        if not lines or lines[0].lstrip().startswith(
            ("..", ">>>", "::", "$", "%", "#", "+", "|", "=", "-", "*")
        ):
            continue
        if any(l.startswith("    ") for l in lines):
            continue  # indented code / directive bodies
        t = " ".join(l.strip() for l in lines)
        t = re.sub(r":[a-z:]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`", r"\1", t)  # :func:`x` -> x
        t = re.sub(r"`+([^`]*)`+_?", r"\1", t).replace("**", "").replace("*", "")
        if len(t.split()) >= 12 and not t.endswith("::"):
            texts.append(t[:2000])

texts = list(dict.fromkeys(t for t in texts if t.strip()))
with open(out, "w") as f:
    for t in texts:
        f.write(t.replace("\n", " ") + "\n")
print(
    f"{len(texts)} texts ({n_wn} WordNet synsets, {len(texts) - n_wn} Python-doc paragraphs after dedup) -> {out}"
)
