"""Offline token counting for recall budgets (pure).

No tokenizer file is needed: a run of word characters costs one token per started six
characters (so "memory" is 1 and "retrieval" is 2), and every other non-space character costs
one. On English prose this lands close to what BPE tokenizers of current LLMs count, and it is
deterministic, fast and the same on every machine.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable
from itertools import accumulate
from typing import TypeVar

_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)
# Where a passage may end: after a sentence's closing mark, or at a line's end.
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])[\"')\]»”’]*(?=\s)|(?=\n)")
_WORD_END = re.compile(r"(?<=\S)(?=\s)")
_WORD = re.compile(r"\w")
WORD_PIECE_CHARS = 6
T = TypeVar("T")


def count_tokens(text: str) -> int:
    return sum(-(-(m.end() - m.start()) // WORD_PIECE_CHARS) for m in _TOKEN.finditer(text))


def fit_budget(items: Iterable[T], budget: int, text_of: Callable[[T], str]) -> tuple[list[T], int]:
    """The items, in order, that fit within `budget` tokens: each one is kept if it still
    fits after those kept before it. Returns them and the tokens they use."""
    kept: list[T] = []
    used = 0
    for item in items:
        cost = count_tokens(text_of(item))
        if used + cost <= budget:
            kept.append(item)
            used += cost
    return kept, used


def cut_to_fit(text: str, budget: int) -> str:
    """The longest start of `text` within `budget` tokens that ends at a sentence or a line
    end, unless that keeps less than half of what ending at a word would (a long sentence):
    then the longest that ends at a word. "" when no word fits."""
    if count_tokens(text) <= budget:
        return text
    matches = list(_TOKEN.finditer(text))
    ends = [m.end() for m in matches]
    costs = list(accumulate(-(-(m.end() - m.start()) // WORD_PIECE_CHARS) for m in matches))

    def cost(position: int) -> int:
        whole = bisect_right(ends, position)  # tokens that end by `position`
        return costs[whole - 1] if whole else 0

    def longest(boundary: re.Pattern[str]) -> int:
        best = 0
        for found in boundary.finditer(text):
            if cost(found.end()) > budget:
                break
            best = found.end()
        return best

    sentence, word = longest(_SENTENCE_END), longest(_WORD_END)
    end = sentence if 2 * cost(sentence) >= cost(word) else word
    part = text[:end].rstrip()
    return part if _WORD.search(part) else ""  # a lone "#" or "-" is no passage


def fit_in_order(
    items: Iterable[T],
    budget: int,
    text_of: Callable[[T], str],
    cut: Callable[[T, str], T],
) -> tuple[list[T], int, bool]:
    """The items, best first, within `budget` tokens, never a lower one in place of a higher:
    each is kept whole while it fits; the first that does not is cut to what is left (by
    `cut(item, text)`, at a sentence or line end as `cut_to_fit` finds it) and ends the list.
    Returns them, the tokens they use, and whether the last was cut."""
    kept: list[T] = []
    used = 0
    for item in items:
        text = text_of(item)
        cost = count_tokens(text)
        if used + cost <= budget:
            kept.append(item)
            used += cost
            continue
        part = cut_to_fit(text, budget - used)
        if part:
            kept.append(cut(item, part))
            used += count_tokens(part)
        return kept, used, bool(part)
    return kept, used, False
