"""The near-duplicate signature: copies match, edited copies stay near, other texts are far,
and the value of a text never changes (brains store it)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nexusbrain.storage.signature import SHINGLE, distance, signature

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


_MASK = 2**64 - 1


def _mixed(value: int) -> int:
    value ^= value >> 30
    value = value * 0xBF58476D1CE4E5B9 & _MASK
    value ^= value >> 27
    value = value * 0x94D049BB133111EB & _MASK
    return value ^ (value >> 31)


def _reference(text: str) -> int:
    """The module docstring's recipe in plain Python, a word and a bit at a time."""
    words = [w for w in re.split(rb"[\t\n\v\f\r ]+", text.casefold().encode("utf-8")) if w]
    if not words:
        return 0
    hashes = [
        _mixed(
            sum((b + 1) * pow(0x100000001B3, min(i, 63) + 1, 2**64) for i, b in enumerate(w))
            & _MASK
        )
        for w in words
    ]
    hashes += [0] * (SHINGLE - len(hashes))
    odd = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9)
    shingles = []
    for start in range(len(hashes) - SHINGLE + 1):
        combined = 0
        for offset in range(SHINGLE):
            combined ^= hashes[start + offset] * odd[offset] & _MASK
        shingles.append(_mixed(combined))
    value = sum(
        1 << bit for bit in range(64) if 2 * sum(s >> bit & 1 for s in shingles) > len(shingles)
    )
    return value - (1 << 64) if value >= 1 << 63 else value


@given(st.text(alphabet=st.sampled_from("ab Zé\t\n\x0b\x0c\r\xa0ß✓ "), max_size=120) | st.text())
def test_the_signature_is_the_recipe_in_plain_python(text: str) -> None:
    assert signature(text) == _reference(text)


def test_the_recipe_gives_the_fixed_value() -> None:
    assert _reference(DEPLOY) == 3_128_356_910_122_836_215
