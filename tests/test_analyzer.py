"""The analyzer's memo of stems gives what the stemmer gives, however small the memo and
whichever words it has seen."""

from __future__ import annotations

import pytest
import Stemmer
from hypothesis import given, settings
from hypothesis import strategies as st

from nexusbrain.storage import analyzer

_WORDS = st.lists(
    st.sampled_from(["running", "runs", "s", "cats", "cat", "ponies", "a1", "42", "s", "caresses"])
    | st.text("abcs", min_size=1, max_size=6),
    max_size=30,
)


def _reference(words: list[str]) -> list[str]:
    stems = Stemmer.Stemmer("porter", 0).stemWords(words)
    return [stem for stem in stems if stem]


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(_WORDS, min_size=1, max_size=8), size=st.integers(0, 12))
def test_stems_are_the_stemmer_s_whatever_the_memo_holds(texts: list[list[str]], size: int) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(analyzer, "_MEMO_SIZE", size)
        patch.setattr(analyzer, "_STEMS", {})
        longest = max(len(words) for words in texts)
        for words in texts:
            assert analyzer.tokens(" ".join(words)) == _reference(words)
            assert len(analyzer._STEMS) <= size + longest


def test_a_full_memo_is_replaced_not_grown() -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(analyzer, "_MEMO_SIZE", 4)
        patch.setattr(analyzer, "_STEMS", {})
        first = analyzer._STEMS
        assert analyzer.tokens("alpha beta gamma delta epsilon") == _reference(
            ["alpha", "beta", "gamma", "delta", "epsilon"]
        )
        assert analyzer.tokens("zeta eta") == ["zeta", "eta"]
        assert analyzer._STEMS is not first and set(analyzer._STEMS) == {"zeta", "eta"}
        assert len(first) == 5  # left whole for any thread still reading it
