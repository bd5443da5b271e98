"""The near-duplicate signature: copies match, edited copies stay near, other texts are far,
and the value of a text never changes (brains store it)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nexusbrain.storage.signature import distance, signature

DEPLOY = (
    "The deploy failed because the signing key had expired. Rotate the key in the vault, "
    "then run the deploy again; the pipeline reads the new key at its next start. "
)
SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "scifact" / "corpus.jsonl"


def test_the_value_of_a_text_is_fixed() -> None:
    # stored with every chunk: a change here needs a migration that computes them again
    assert signature("") == 0
    assert signature("The deploy failed.") == signature("the   DEPLOY\n failed.")
    assert signature(DEPLOY) == 3_128_356_910_122_836_215


def test_a_signature_fits_a_signed_64_bit_column() -> None:
    values = [signature(f"text number {n} " * (n % 7 + 1)) for n in range(500)]
    assert all(-(2**63) <= v < 2**63 for v in values)
    assert any(v < 0 for v in values) and any(v > 0 for v in values)


@given(st.lists(st.sampled_from([" ", "  ", "\n", "\t", " \n "]), min_size=60, max_size=60))
def test_whitespace_and_case_do_not_change_it(gaps: list[str]) -> None:
    words = (DEPLOY * 2).split()
    assert len(gaps) >= len(words)
    spaced = "".join(
        (w.upper() if n % 3 == 0 else w) + gap
        for n, (w, gap) in enumerate(zip(words, gaps, strict=False))
    )
    assert signature(spaced) == signature(DEPLOY * 2)


def test_a_one_word_edit_is_near_and_another_text_is_far() -> None:
    words = " ".join(f"{w}{n}" for n, w in enumerate((DEPLOY * 4).split())).split()
    edited = [*words[:30], "lapsed", *words[31:]]
    assert distance(signature(" ".join(words)), signature(" ".join(edited))) <= 3
    other = "Backups run nightly at 02:00 to the NAS, and a copy goes to cold storage weekly."
    assert distance(signature(" ".join(words)), signature(other)) > 16


def test_short_texts_match_only_their_copies() -> None:
    assert signature("yes") == signature("YES")
    assert distance(signature("yes"), signature("no")) > 16
    assert distance(signature("rotate the key"), signature("rotate the keys")) > 16


def test_no_two_abstracts_of_scifact_are_near() -> None:
    if not SCIFACT.exists():
        pytest.skip("the SciFact dev set is not beside the clone")
    with SCIFACT.open(encoding="utf-8") as lines:
        texts = [json.loads(line)["text"] for _, line in zip(range(1000), lines, strict=False)]
    values = [signature(t) for t in texts if len(t.split()) >= 30]
    rng = random.Random(3)
    pairs = [rng.sample(range(len(values)), 2) for _ in range(20_000)]
    assert min(distance(values[a], values[b]) for a, b in pairs) > 12
    words = texts[0].split()
    dropped = " ".join(words[:20] + words[21:])  # one word fewer
    assert distance(signature(texts[0]), signature(dropped)) <= 3
