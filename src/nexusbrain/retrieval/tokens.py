"""Offline token counting for recall budgets (pure).

No tokenizer file is needed: a run of word characters costs one token per started six
characters (so "memory" is 1 and "retrieval" is 2), and every other non-space character costs
one. On English prose this lands close to what BPE tokenizers of current LLMs count, and it is
deterministic, fast and the same on every machine.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar

_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)
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
