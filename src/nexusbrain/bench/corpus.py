"""A deterministic synthetic markdown corpus for benchmarks.

Words come from a made-up vocabulary (syllables, shorter words more frequent) drawn with a
Zipf-Mandelbrot law, so a few words are everywhere and most are rare, as in real text. Document
sizes are log-normal (median ~1.8 KB, a long tail up to 48 KB), like a notes vault. Documents
have a title, `##`/`###` sections, paragraphs, bullet lists, fenced code blocks and the odd
[[wikilink]] to another note.

Document `i` depends only on the seed and `i` (its own `numpy.random.Generator`), so a corpus of
10k documents is the first 10k documents of a corpus of 100k, and any document can be
regenerated alone.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

_ONSETS = ("b c d f g h j k l m n p r s t v w z br cr dr fl gr pl pr st tr ch sh th").split()
_VOWELS = ("a e i o u ai ea io ou").split()
_CODAS = ("", "", "", "n", "r", "s", "t", "l", "m", "x", "nd", "st")
_LANGUAGES = ("python", "sh", "sql", "yaml")
DEFAULT_SEED = 20260102


@dataclass(frozen=True, slots=True)
class CorpusSpec:
    """The knobs of the corpus. The defaults are what `nexusbrain bench` uses."""

    seed: int = DEFAULT_SEED
    vocabulary: int = 40_000
    zipf_exponent: float = 1.07  # ~English word frequencies
    zipf_shift: float = 2.7  # Mandelbrot's q: flattens the very top ranks
    median_chars: int = 1_800
    size_sigma: float = 0.8  # of the log-normal document size
    min_chars: int = 200
    max_chars: int = 48_000
    code_share: float = 0.25  # chance that a section carries a code block
    list_share: float = 0.2  # chance that a section carries a bullet list
    link_share: float = 0.3  # chance that a document links to another


@dataclass(frozen=True, slots=True)
class SyntheticDoc:
    index: int
    name: str  # path relative to the corpus folder
    title: str
    content: str


class Corpus:
    def __init__(self, spec: CorpusSpec | None = None) -> None:
        self.spec = spec or CorpusSpec()
        self.words = _vocabulary(self.spec.seed, self.spec.vocabulary)
        ranks = np.arange(1, len(self.words) + 1, dtype=np.float64)
        weights = (ranks + self.spec.zipf_shift) ** -self.spec.zipf_exponent
        self._cdf = np.cumsum(weights / weights.sum())

    def document(self, index: int) -> SyntheticDoc:
        rng = np.random.default_rng([self.spec.seed, index])
        title = self.title(index)
        budget = self._size(rng)
        parts = [f"# {title}", self._paragraph(rng)]
        size = sum(map(len, parts))
        while size < budget:
            section = self._section(rng, index)
            parts.append(section)
            size += len(section) + 2
        return SyntheticDoc(index, name_of(index), title, "\n\n".join(parts) + "\n")

    def documents(self, count: int, start: int = 0) -> Iterator[SyntheticDoc]:
        for index in range(start, start + count):
            yield self.document(index)

    def title(self, index: int) -> str:
        rng = np.random.default_rng([self.spec.seed, index, 1])
        words = self._draw(rng, int(rng.integers(2, 6)))
        return f"{' '.join(words).capitalize()} {index}"

    def changed(self, doc: SyntheticDoc, revision: int = 1) -> SyntheticDoc:
        """The document after an edit: one new section at the end."""
        rng = np.random.default_rng([self.spec.seed, doc.index, 2, revision])
        content = doc.content + "\n" + self._section(rng, doc.index) + "\n"
        return SyntheticDoc(doc.index, doc.name, doc.title, content)

    def queries(self, count: int, documents: int) -> list[str]:
        """Keyword queries (2-5 of a document's less common words) about random documents."""
        rng = np.random.default_rng([self.spec.seed, 3])
        out = []
        for index in rng.integers(0, documents, size=count):
            text = self.document(int(index)).content.lower()
            words = list(dict.fromkeys(w for w in text.split() if w.isalpha()))
            content = [w for w in words if self._rank(w) >= 50]
            pool = content or words
            take = min(len(pool), int(rng.integers(2, 6)))
            picked = rng.choice(len(pool), size=take, replace=False)
            out.append(" ".join(pool[int(i)] for i in sorted(picked)))
        return out

    def write(self, folder: Path, count: int) -> int:
        """Write documents 0..count-1 as files under `folder`; returns the bytes written."""
        written = 0
        for doc in self.documents(count):
            written += write_doc(folder, doc)
        return written

    # building blocks

    def _draw(self, rng: np.random.Generator, n: int) -> list[str]:
        ranks: NDArray[np.intp] = np.searchsorted(self._cdf, rng.random(n), side="right")
        ranks = np.minimum(ranks, len(self.words) - 1)
        words = self.words
        return [words[r] for r in ranks]

    def _rank(self, word: str) -> int:
        return _ranks(self.spec.seed, self.spec.vocabulary).get(word, len(self.words))

    def _size(self, rng: np.random.Generator) -> int:
        spec = self.spec
        size = rng.lognormal(np.log(spec.median_chars), spec.size_sigma)
        return int(np.clip(size, spec.min_chars, spec.max_chars))

    def _sentence(self, rng: np.random.Generator) -> str:
        words = self._draw(rng, int(rng.integers(6, 26)))
        return " ".join(words).capitalize() + "."

    def _paragraph(self, rng: np.random.Generator) -> str:
        return " ".join(self._sentence(rng) for _ in range(int(rng.integers(2, 9))))

    def _section(self, rng: np.random.Generator, index: int) -> str:
        level = "###" if rng.random() < 0.3 else "##"
        heading = " ".join(self._draw(rng, int(rng.integers(1, 5)))).capitalize()
        blocks = [f"{level} {heading}", self._paragraph(rng)]
        if rng.random() < self.spec.list_share:
            items = (" ".join(self._draw(rng, int(rng.integers(2, 8)))) for _ in range(4))
            blocks.append("\n".join(f"- {item}" for item in items))
        if rng.random() < self.spec.code_share:
            blocks.append(self._code(rng))
        if rng.random() < self.spec.link_share / 3 and index > 0:
            other = int(rng.integers(0, index))
            blocks.append(f"See also [[{self.title(other)}]].")
        if rng.random() < 0.5:
            blocks.append(self._paragraph(rng))
        return "\n\n".join(blocks)

    def _code(self, rng: np.random.Generator) -> str:
        language = _LANGUAGES[int(rng.integers(0, len(_LANGUAGES)))]
        lines = []
        for _ in range(int(rng.integers(2, 12))):
            a, b, c = self._draw(rng, 3)
            lines.append(f"{a}_{b} = {c}({a}, {int(rng.integers(0, 100))})")
        return f"```{language}\n" + "\n".join(lines) + "\n```"


def name_of(index: int) -> str:
    """Documents spread over folders of 1,000 files each."""
    return f"d{index // 1000:04d}/n{index:07d}.md"


def write_doc(folder: Path, doc: SyntheticDoc) -> int:
    path = folder / doc.name
    path.parent.mkdir(parents=True, exist_ok=True)
    data = doc.content.encode("utf-8")
    path.write_bytes(data)
    return len(data)


@functools.cache
def _vocabulary(seed: int, size: int) -> tuple[str, ...]:
    """`size` distinct made-up words, shortest first (frequent words are short)."""
    rng = np.random.default_rng([seed, 0])
    seen: dict[str, None] = {}
    while len(seen) < size:
        counts = rng.choice([1, 1, 2, 2, 2, 3], size=size)
        parts = np.stack(
            [
                rng.integers(0, len(_ONSETS), size=(size, 3)),
                rng.integers(0, len(_VOWELS), size=(size, 3)),
                rng.integers(0, len(_CODAS), size=(size, 3)),
            ],
            axis=-1,
        ).tolist()
        for count, word_parts in zip(counts.tolist(), parts, strict=True):
            word = "".join(_ONSETS[o] + _VOWELS[v] + _CODAS[c] for o, v, c in word_parts[:count])
            seen.setdefault(word)
            if len(seen) == size:
                break
    return tuple(sorted(seen, key=len))


@functools.cache
def _ranks(seed: int, size: int) -> dict[str, int]:
    return {word: rank for rank, word in enumerate(_vocabulary(seed, size))}
