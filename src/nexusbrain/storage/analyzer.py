"""The lexical analyzer: text into the tokens the lexical index holds, the same for every
backend and for queries (pure).

- Text is NFKC-normalised and case-folded ("Ｆｉｌｅ²" → "file2"), and accents on Latin,
  Greek and Cyrillic letters are dropped ("café" → "cafe").
- Tokens are runs of letters and digits; anything else, the underscore included, separates
  them ("foo_bar" is two tokens).
- A run of Chinese, Japanese or Korean characters becomes its overlapping character bigrams
  ("東京都" → "東京", "京都"; a lone character stays one token), since those scripts do not
  put spaces between words: a word a person types is then found inside a longer run.
- Other tokens are stemmed with the Porter stemmer ("running" → "run").

Stopwords are kept: they count towards a chunk's length, and a query drops its own
(retrieval/terms.py).
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable

import Stemmer

_ASCII_RUN = re.compile(r"[a-z0-9]+")
_RUN = re.compile(r"[^\W_]+")
# Han (with extensions and compatibility forms), kana and Hangul
_CJK_CHARS = (
    "\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0002fa1f\U00030000-\U0003134f"
)
_CJK_FIRST = "\u1100"  # the first character of _CJK_CHARS
# _CJK_CHARS as (first, last) code points: a text is searched for them without _cjk's patterns
_CJK_SPANS = tuple(
    (ord(_CJK_CHARS[i]), ord(_CJK_CHARS[i + 2])) for i in range(0, len(_CJK_CHARS), 3)
)
_ACCENTED_BELOW = "\u0530"  # Latin, Greek and Cyrillic end here
_local = threading.local()  # a stemmer is not safe to share between threads
# Each word's stem, memoised: a dict lookup is several times cheaper than a call into the
# stemmer, and most words in a text have been seen before. Cleared when it holds more than
# _MEMO_SIZE words (some tens of MB), so an odd corpus cannot grow it without end.
_STEMS: dict[str, str] = {}
_MEMO_SIZE = 300_000


def tokens(text: str) -> list[str]:
    """The index tokens of `text`, in order."""
    if text.isascii():
        return _stemmed(_ASCII_RUN.findall(text.lower()))
    folded = _folded(text)
    if not _has_cjk(folded):  # accents, dashes, curly quotes, Greek: no bigrams to make
        return _stemmed(_RUN.findall(folded))
    cjk, pieces = _cjk()
    out: list[str] = []
    plain: list[str] = []
    for run in _RUN.findall(folded):
        if not cjk.search(run):
            plain.append(run)
            continue
        out += _stemmed(plain)
        plain = []
        for piece in pieces.findall(run):
            out += _bigrams(piece) if cjk.match(piece) else _stemmed([piece])
    return out + _stemmed(plain)


def _has_cjk(text: str) -> bool:
    return any(
        first <= ord(char) <= last
        for char in set(text)
        if char >= _CJK_FIRST
        for first, last in _CJK_SPANS
    )


@functools.cache
def _cjk() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A CJK character, and a run of CJK or of other characters: compiled on the first text
    that holds a CJK character (their character classes take ~4 ms to compile, and most
    texts have none: a fresh process's first search met a dash, a curly quote or an ellipsis
    in its hits' text and paid for them)."""
    return re.compile(f"[{_CJK_CHARS}]"), re.compile(f"[{_CJK_CHARS}]+|[^{_CJK_CHARS}]+")


def _bigrams(piece: str) -> list[str]:
    return [piece] if len(piece) == 1 else [piece[i : i + 2] for i in range(len(piece) - 1)]


def analyzed(text: str) -> str:
    """The tokens of `text` joined by spaces: what the SQLite backend hands FTS5."""
    return " ".join(tokens(text))


def query_tokens(words: Iterable[str]) -> Counter[str]:
    """How many times each token occurs in the query's words, in first-seen order."""
    counts: Counter[str] = Counter()
    for word in words:
        counts.update(tokens(word))
    return counts


def _folded(text: str) -> str:
    """NFKC, case-folded, with combining accents dropped from Latin, Greek and Cyrillic."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
    kept: list[str] = []
    base = ""
    for char in decomposed:
        if unicodedata.combining(char):
            if base < _ACCENTED_BELOW:
                continue
        else:
            base = char
        kept.append(char)
    return unicodedata.normalize("NFC", "".join(kept))


def _stemmed(words: list[str]) -> list[str]:
    try:
        stems = list(map(_STEMS.__getitem__, words))
    except KeyError:
        stems = _stem_new(words)
    if "" in stems:  # Porter takes a lone "s" to nothing
        return [stem for stem in stems if stem]
    return stems


def _stem_new(words: list[str]) -> list[str]:
    global _STEMS
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        # its own cache is left off: the memo does that job, and faster
        stemmer = _local.stemmer = Stemmer.Stemmer("porter", 0)
    memo = _STEMS
    if len(memo) > _MEMO_SIZE:
        # replaced, not cleared, so that a thread reading the old one still finds its words
        memo = _STEMS = {}
    new = list(dict.fromkeys(word for word in words if word not in memo))
    memo.update(zip(new, stemmer.stemWords(new), strict=True))
    return list(map(memo.__getitem__, words))
