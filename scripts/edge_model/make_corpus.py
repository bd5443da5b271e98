#!/usr/bin/env python3
"""Build the training corpus of the edge model: texts to regress the teacher on, and pairs mined
without labels for the contrastive step. Offline, from what Debian and PyPI packages install.

python make_corpus.py OUT_DIR [--dev ../../../shared/datasets]

Writes OUT_DIR/texts.jsonl ({"t": text, "s": source}) and OUT_DIR/pairs.jsonl ({"q": query-like
text, "d": the passage it leads to, "k": kind}), deduplicated, in a deterministic order, and
prints the counts per source. Sources (licences in NOTICE.edge_model):

  man       manual pages in /usr/share/man/man[1-8] (English): NAME line -> DESCRIPTION
  doc       READMEs and prose (.md, .rst, .txt) under /usr/share/doc: heading -> section
  pydoc     the Python 3.11 documentation sources (python3.11-doc): heading -> section
  pypi      descriptions of installed PyPI distributions and npm's docs: summary -> description
  wordnet   WordNet 3.0 glosses (wordnet-base): lemmas -> gloss
  dict      GCIDE, FOLDOC and the Jargon File (dict-gcide, dict-foldoc, dict-jargon): headword -> entry
  go        Gene Ontology term definitions (r-bioc-go.db's GO.sqlite): term -> definition
  chat      chit-chat conversations (PyPI chitchat-dataset, chatterbot-corpus): turn -> reply
  ict       a sentence of any passage above (but chat) -> the rest of the passage

No dev-set text: the files of the packages the techdocs dev set was built from (git, git-man,
cmake, cmake-data, vim-runtime, ...) are skipped, and every text or pair sharing a run of
SHINGLE words with any dev-set document or query (SciFact, Cranfield, CISI, MED, techdocs,
LoCoMo) is dropped.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import itertools
import json
import random
import re
import sqlite3
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

SHINGLE = 10
MIN_WORDS = 6
MAX_CHARS = 1500
# Debian packages whose files the techdocs dev set was built from: never read.
DEV_PACKAGES = (
    "git",
    "git-man",
    "cmake",
    "cmake-data",
    "vim-runtime",
    "vim",
    "vim-common",
    "vim-tiny",
    "vim-nox",
    "vim-gtk3",
    "xxd",
)
SEED = 0

Texts = list[tuple[str, str]]
Pairs = list[tuple[str, str, str]]


def clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()[:MAX_CHARS]


def words(text: str) -> int:
    return len(text.split())


def dev_files() -> set[str]:
    out: set[str] = set()
    for pkg in DEV_PACKAGES:
        got = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True)
        out.update(line.strip() for line in got.stdout.splitlines())
    return out


# ---------------------------------------------------------------- man pages (troff to text)

_ESCAPES = [
    (re.compile(r"\\f(\[[^]]*\]|\(..|.)"), ""),  # font changes
    (re.compile(r"\\s[+-]?\d"), ""),  # size changes
    (re.compile(r"\\\*(\[[^]]*\]|\(..|.)"), ""),  # strings
    (re.compile(r"\\\((em|en|hy|mi|aq|dq|lq|rq|oq|cq|bu|co|rg|tm)"), " "),
    (re.compile(r"\\\[[a-z]+\]"), " "),
    (re.compile(r"\\[-]"), "-"),
    (re.compile(r"\\[e\\]"), "\\\\"),
    (re.compile(r"\\[&|^%)c:]"), ""),
    (re.compile(r"\\[ ~0]"), " "),
    (re.compile(r"\\."), ""),
]


def troff_text(line: str) -> str:
    for pattern, repl in _ESCAPES:
        line = pattern.sub(repl, line)
    return line


def man_sections(raw: str) -> dict[str, list[str]]:
    """Section name -> its paragraphs, from man(7) or mdoc(7) source."""
    sections: dict[str, list[str]] = {}
    name, para, skipping = "", [], False

    def flush() -> None:
        if name and para:
            sections.setdefault(name, []).append(clean(" ".join(para)))
        para.clear()

    for line in raw.splitlines():
        if skipping:
            skipping = not line.startswith("..")
            continue
        if line.startswith(('.\\"', "'\\\"", '.\\"')):
            continue
        if line.startswith((".de", ".ig")):
            skipping = True
            continue
        if line.startswith((".", "'")):
            macro, _, rest = line[1:].partition(" ")
            if macro in ("SH", "Sh", "SS", "Ss"):
                flush()
                if macro in ("SH", "Sh"):
                    name = troff_text(rest).strip('" ').upper()
                continue
            if macro in ("PP", "LP", "P", "TP", "IP", "HP", "sp", "br", "Pp", "It", "Bl", "El"):
                flush()
                if macro == "IP" and rest:
                    para.append(troff_text(rest.split('"')[1] if '"' in rest else rest.split()[0]))
                continue
            if macro in (
                "B",
                "I",
                "BR",
                "RB",
                "IR",
                "RI",
                "BI",
                "IB",
                "SM",
                "Nm",
                "Nd",
                "Ar",
                "Fl",
                "Cm",
                "Pa",
                "Xr",
                "Em",
                "Sy",
                "Li",
                "Dq",
                "Qq",
                "Ql",
                "Op",
                "Ev",
                "Fn",
            ):
                text = troff_text(rest).replace('"', "")
                if macro == "Nd":
                    text = "- " + text
                if macro == "Fl":
                    text = "-" + text
                para.append(text)
            continue
        para.append(troff_text(line))
    flush()
    return sections


def man_pages(skip: set[str]) -> Iterator[tuple[str, dict[str, list[str]]]]:
    for path in sorted(glob.glob("/usr/share/man/man[1-8]/*")):
        if path in skip or Path(path).is_symlink():
            continue
        if Path(path).name.startswith("gcloud") and zlib.crc32(path.encode()) % 5:
            continue  # 13,000 near-identical Google Cloud SDK pages: keep one in five
        try:
            raw = (
                gzip.open(path, "rt", errors="replace").read()
                if path.endswith(".gz")
                else Path(path).read_text(errors="replace")
            )
        except (OSError, EOFError, zlib.error):
            continue
        if raw.lstrip().startswith(".so "):
            continue  # a redirect to another page
        yield path, man_sections(raw)


def from_man(skip: set[str], texts: Texts, pairs: Pairs) -> None:
    for _, sections in man_pages(skip):
        name = " ".join(sections.get("NAME", []))
        if name:
            texts.append((name, "man"))
        desc = sections.get("DESCRIPTION", [])
        desc = [p for p in desc if words(p) >= MIN_WORDS]
        if name and desc and " - " in name:
            pairs.append((name.split(" - ", 1)[1], desc[0], "man-name"))
        kept = 0
        for section, paras in sections.items():
            if section in (
                "NAME",
                "SYNOPSIS",
                "AUTHOR",
                "AUTHORS",
                "COPYRIGHT",
                "SEE ALSO",
                "REPORTING BUGS",
                "BUGS",
                "HISTORY",
                "COLOPHON",
            ):
                continue
            for p in paras:
                if words(p) >= MIN_WORDS and kept < 40:
                    texts.append((p, "man"))
                    kept += 1


# ---------------------------------------------------------------- markdown / rst prose

_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")
_MD_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def prose_sections(raw: str) -> list[tuple[str, list[str]]]:
    """(heading, paragraphs) of a markdown or reStructuredText file; code and directives dropped."""
    lines = raw.splitlines()
    out: list[tuple[str, list[str]]] = [("", [])]
    i, fence = 0, False
    para: list[str] = []

    def flush() -> None:
        if para:
            text = " ".join(x.strip() for x in para)
            text = re.sub(r":[a-z:]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`", r"\1", text)
            text = re.sub(r"`+([^`]*)`+_?", r"\1", text)
            text = re.sub(r"!?\[([^]]*)\]\([^)]*\)", r"\1", text)  # [text](url) -> text
            text = re.sub(r"<[^>]+>", " ", text).replace("**", "").replace("*", "")
            text = clean(text)
            if words(text) >= MIN_WORDS and not text.endswith("::"):
                out[-1][1].append(text)
        para.clear()

    while i < len(lines):
        line = lines[i]
        if line.strip().startswith(("```", "~~~")):
            flush()
            fence = not fence
        elif fence:
            pass
        elif _MD_HEADING.match(line):
            flush()
            out.append((clean(_MD_HEADING.match(line).group(1)), []))  # type: ignore[union-attr]
        elif (
            i + 1 < len(lines)
            and line.strip()
            and _RST_UNDERLINE.match(lines[i + 1])
            and len(lines[i + 1].strip()) >= len(line.strip()) - 1
        ):
            flush()
            out.append((clean(line), []))
            i += 1
        elif (
            _RST_UNDERLINE.match(line)
            or not line.strip()
            or line.startswith(("    ", "\t", "..", ">>>", "$ ", "|", "+-", "- - "))
        ):
            flush()
        else:
            para.append(line)
        i += 1
    flush()
    return [(h, ps) for h, ps in out if ps]


def from_prose(
    raw: str, source: str, title: str, texts: Texts, pairs: Pairs, cap: int = 60
) -> None:
    sections = prose_sections(raw)
    kept = 0
    for heading, paras in sections:
        for p in paras:
            if kept < cap:
                texts.append((p, source))
                kept += 1
        if words(heading) >= 2 and re.search("[a-zA-Z]{3}", heading):
            query = (
                heading if not title or title.lower() in heading.lower() else f"{title}: {heading}"
            )
            pairs.append((query, paras[0], f"{source}-heading"))
            texts.append((query, source))


def doc_files(skip: set[str]) -> Iterator[Path]:
    dev_dirs = {f"/usr/share/doc/{p}" for p in DEV_PACKAGES}
    for path in sorted(glob.glob("/usr/share/doc/**/*", recursive=True)):
        p = Path(path)
        if path in skip or any(path.startswith(d + "/") for d in dev_dirs) or not p.is_file():
            continue
        if path.startswith("/usr/share/doc/python3.11/"):
            continue  # read as pydoc
        name = p.name.lower().removesuffix(".gz")
        if re.match(
            r"(changelog|news|copyright|changes|history|authors|thanks|todo|credits)", name
        ):
            continue
        if name.startswith("readme") or name.endswith((".md", ".markdown", ".rst", ".txt")):
            yield p


def read_maybe_gz(path: Path) -> str:
    try:
        if path.suffix == ".gz":
            return gzip.open(path, "rt", errors="replace").read()
        return path.read_text(errors="replace")
    except (OSError, EOFError, zlib.error, UnicodeError):
        return ""


def from_docs(skip: set[str], texts: Texts, pairs: Pairs) -> None:
    for path in doc_files(skip):
        raw = read_maybe_gz(path)
        if raw and len(raw) < 2_000_000:
            from_prose(raw, "doc", path.parent.name, texts, pairs)


def from_pydoc(texts: Texts, pairs: Pairs) -> None:
    for path in sorted(
        glob.glob("/usr/share/doc/python3.11/html/_sources/**/*.txt", recursive=True)
    ):
        from_prose(Path(path).read_text(errors="replace"), "pydoc", "", texts, pairs, cap=200)


def from_pypi(texts: Texts, pairs: Pairs) -> None:
    seen: set[str] = set()
    roots = [
        *glob.glob("/usr/lib/python3/dist-packages"),
        *glob.glob("/usr/local/lib/python3*/dist-packages"),
        *glob.glob(f"{sys.prefix}/lib/python3*/site-packages"),
        *glob.glob(str(Path(__file__).resolve().parents[2] / ".venv/lib/python3*/site-packages")),
    ]
    for root in roots:
        for meta in sorted(glob.glob(f"{root}/*.dist-info/METADATA")):
            head, _, body = Path(meta).read_text(errors="replace").partition("\n\n")
            fields = dict(
                (k.strip(), v.strip()) for k, _, v in (l.partition(":") for l in head.splitlines())
            )
            name = fields.get("Name", "").lower()
            if not name or name in seen:
                continue
            seen.add(name)
            summary = fields.get("Summary", "")
            before = len(texts)
            from_prose(body, "pypi", name, texts, pairs)
            if summary and words(summary) >= 3 and len(texts) > before:
                pairs.append((summary, texts[before][0], "pypi-summary"))
                texts.append((summary, "pypi"))
    for path in sorted(glob.glob("/usr/lib/node_modules/**/*.md", recursive=True)):
        from_prose(Path(path).read_text(errors="replace"), "pypi", "npm", texts, pairs)


# ---------------------------------------------------------------- definitions


def from_wordnet(texts: Texts, pairs: Pairs) -> None:
    for pos in ("noun", "verb", "adj", "adv"):
        for line in open(f"/usr/share/wordnet/data.{pos}", encoding="latin-1"):
            if line.startswith("  "):
                continue  # licence header
            head, _, gloss = line.partition(" | ")
            f = head.split()
            n = int(f[3], 16)
            lemmas = [re.sub(r"\(.*?\)$", "", f[4 + 2 * i]).replace("_", " ") for i in range(n)]
            lemma = ", ".join(dict.fromkeys(lemmas))
            texts.append((f"{lemma}: {gloss.strip()}", "wordnet"))
            definition = gloss.split(";")[0].strip()
            if words(definition) >= 4:
                pairs.append((lemma, definition, "wordnet"))


def dictd(name: str) -> Iterator[tuple[str, str]]:
    data = gzip.open(f"/usr/share/dictd/{name}.dict.dz").read()
    digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    def b64(s: str) -> int:
        v = 0
        for c in s:
            v = v * 64 + digits.index(c)
        return v

    for line in open(f"/usr/share/dictd/{name}.index", encoding="utf-8", errors="replace"):
        word, off, size = line.rstrip("\n").split("\t")[:3]
        if word.startswith("00-database"):
            continue
        yield word, data[b64(off) : b64(off) + b64(size)].decode("utf-8", "replace")


def from_dicts(texts: Texts, pairs: Pairs) -> None:
    for name in ("gcide", "foldoc", "jargon"):
        for word, entry in dictd(name):
            body = re.sub(r"[{}]", "", entry)
            body = re.sub(r"\\[^\\]*\\", "", body)  # gcide pronunciations
            body = re.sub(r"\[[^]]*\]", "", body)  # etymologies, sources ([1913 Webster])
            text = clean(body)
            if words(text) < MIN_WORDS:
                continue
            texts.append((text, "dict"))
            rest = clean(body.split("\n", 1)[1]) if "\n" in body else ""
            if words(rest) >= MIN_WORDS and words(word) <= 4:
                pairs.append((word, rest, "dict"))


def from_go(path: str, texts: Texts, pairs: Pairs) -> None:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    for term, definition in con.execute("select term, definition from go_term order by go_id"):
        if definition and words(definition) >= 4:
            texts.append((f"{term}: {definition}", "go"))
            pairs.append((term, definition, "go"))
    con.close()


# ---------------------------------------------------------------- conversations


def from_chat(texts: Texts, pairs: Pairs) -> None:
    import chitchat_dataset

    data = json.loads((Path(chitchat_dataset.__file__).parent / "dataset.json").read_text())
    for cid in sorted(data):
        turns = [clean(" ".join(m["text"] for m in group)) for group in data[cid]["messages"]]
        turns = [t for t in turns if t]
        for a, b in itertools.pairwise(turns):
            if words(a) >= 3 and words(b) >= MIN_WORDS:
                pairs.append((a, b, "chat"))
        texts.extend((t, "chat") for t in turns if words(t) >= 4)
    import chatterbot_corpus
    import yaml  # chatterbot-corpus's own dependency is not installed: read its YAML plainly

    root = Path(chatterbot_corpus.__file__).parent / "data" / "english"
    for path in sorted(root.glob("*.yml")):
        for convo in yaml.safe_load(path.read_text()).get("conversations", []):
            convo = [clean(str(x)) for x in convo]
            for a, b in itertools.pairwise(convo):
                pairs.append((a, b, "chat"))
            texts.extend((t, "chat") for t in convo if words(t) >= 4)


# ---------------------------------------------------------------- inverse cloze

_SENTENCE_END = re.compile(r"(?<=[a-z0-9)][.!?])\s+(?=[A-Z])")


def ict_pairs(texts: Texts, rng: random.Random) -> Pairs:
    """A sentence of a passage of three or more, and the rest of that passage (the inverse cloze
    task): a claim-like line and the text around it, from the prose of docs, man pages and GO."""
    out: Pairs = []
    for text, source in texts:
        if source in ("chat", "dict", "wordnet") or words(text) < 30:
            continue
        sentences = _SENTENCE_END.split(text)
        if len(sentences) < 3:
            continue
        i = rng.randrange(len(sentences))
        if words(sentences[i]) >= MIN_WORDS:
            rest = " ".join(sentences[:i] + sentences[i + 1 :])
            out.append((sentences[i], rest, "ict"))
    return out


# ---------------------------------------------------------------- dev-set hygiene


def shingles(text: str) -> Iterator[int]:
    toks = re.findall(r"[a-z0-9]+", text.lower())
    for i in range(len(toks) - SHINGLE + 1):
        yield hash(" ".join(toks[i : i + SHINGLE]))


def dev_shingles(dev: Path) -> set[int]:
    out: set[int] = set()
    for name in ("scifact", "cranfield", "cisi", "med", "techdocs"):
        for fname in ("corpus.jsonl", "queries.jsonl"):
            for line in open(dev / name / fname, encoding="utf-8"):
                doc = json.loads(line)
                out.update(shingles(f"{doc.get('title', '')} {doc['text']}"))
    for sample in json.loads((dev / "locomo" / "locomo_dev.json").read_text()):
        for _key, turns in sample["conversation"].items():
            if isinstance(turns, list):
                for t in turns:
                    out.update(shingles(t.get("text", "")))
        for qa in sample["qa"]:
            out.update(shingles(f"{qa['question']} {qa.get('answer', '')}"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument(
        "--dev", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "datasets"
    )
    ap.add_argument("--go", default="data/GO.sqlite")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    skip = dev_files()
    texts: Texts = []
    pairs: Pairs = []
    for step in (
        lambda: from_man(skip, texts, pairs),
        lambda: from_docs(skip, texts, pairs),
        lambda: from_pydoc(texts, pairs),
        lambda: from_pypi(texts, pairs),
        lambda: from_wordnet(texts, pairs),
        lambda: from_dicts(texts, pairs),
        lambda: from_go(a.go, texts, pairs),
        lambda: from_chat(texts, pairs),
    ):
        step()
        print(f"  {len(texts)} texts, {len(pairs)} pairs", flush=True)
    pairs += ict_pairs(texts, random.Random(SEED))
    print(f"  {len(pairs)} pairs with the inverse cloze ones", flush=True)
    banned = dev_shingles(a.dev)
    dropped = {"texts": 0, "pairs": 0}

    def clean_of_dev(*parts: str) -> bool:
        return not any(s in banned for part in parts for s in shingles(part))

    unique: dict[str, str] = {}
    for t, s in texts:
        if t and t not in unique:
            if clean_of_dev(t):
                unique[t] = s
            else:
                dropped["texts"] += 1
    seen_pairs: set[tuple[str, str]] = set()
    kept_pairs = []
    for q, d, k in pairs:
        if q and d and q != d and (q, d) not in seen_pairs:
            seen_pairs.add((q, d))
            if clean_of_dev(q, d):
                kept_pairs.append((q, d, k))
            else:
                dropped["pairs"] += 1
    rng = random.Random(SEED)
    order = list(unique.items())
    rng.shuffle(order)
    rng.shuffle(kept_pairs)
    with open(a.out / "texts.jsonl", "w") as f:
        for t, s in order:
            f.write(json.dumps({"t": t, "s": s}) + "\n")
    with open(a.out / "pairs.jsonl", "w") as f:
        for q, d, k in kept_pairs:
            f.write(json.dumps({"q": q, "d": d, "k": k}) + "\n")
    by_source: dict[str, int] = {}
    for _, s in order:
        by_source[s] = by_source.get(s, 0) + 1
    by_kind: dict[str, int] = {}
    for *_, k in kept_pairs:
        by_kind[k] = by_kind.get(k, 0) + 1
    print(
        json.dumps(
            {
                "texts": len(order),
                "pairs": len(kept_pairs),
                "texts_by_source": by_source,
                "pairs_by_kind": by_kind,
                "dropped_for_dev_overlap": dropped,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
