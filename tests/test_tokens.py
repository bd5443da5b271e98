"""Token budgets: a passage cut to fit is a start of the text, within the budget, ending at a
sentence or line end where one is near enough, and at a word end otherwise."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from nexusbrain.retrieval.tokens import count_tokens, cut_to_fit, fit_in_order

TEXT = "The first sentence is here. The second one follows! A third? Yes.\nNew line text."


def test_a_cut_ends_at_a_sentence_when_one_is_near() -> None:
    assert cut_to_fit(TEXT, 8) == "The first sentence is here."
    assert cut_to_fit(TEXT, 5) == "The first sentence is"  # no sentence end fits: a word end
    assert (
        cut_to_fit(TEXT, 20) == "The first sentence is here. The second one follows! A third? Yes."
    )
    assert cut_to_fit(TEXT, 100) == TEXT
    assert cut_to_fit("# Heading", 1) == ""  # a lone mark is no passage


@given(st.text(alphabet="ab .!?\n#,", max_size=200), st.integers(0, 60))
def test_a_cut_is_a_start_within_the_budget(text: str, budget: int) -> None:
    part = cut_to_fit(text, budget)
    assert text.startswith(part)
    assert part == text or count_tokens(part) <= budget
    if part and part != text:
        assert text[len(part)].isspace()  # it ends where a word does


def test_the_first_hit_that_does_not_fit_is_cut_and_ends_the_list() -> None:
    texts = ["short one.", "a much longer passage. It goes on and on and on.", "tiny"]
    kept, used, cut = fit_in_order(texts, 10, lambda t: t, lambda _, part: part.upper())
    assert kept == ["short one.", "A MUCH LONGER PASSAGE."] and cut
    assert used == count_tokens("short one.") + count_tokens("a much longer passage.")
