"""Offline token counting for recall budgets (pure).

No tokenizer file is needed: a run of word characters costs one token per started six
characters (so "memory" is 1 and "retrieval" is 2), and every other non-space character costs
one. On English prose this lands close to what BPE tokenizers of current LLMs count, and it is
deterministic, fast and the same on every machine.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)
WORD_PIECE_CHARS = 6


def count_tokens(text: str) -> int:
    return sum(-(-(m.end() - m.start()) // WORD_PIECE_CHARS) for m in _TOKEN.finditer(text))
