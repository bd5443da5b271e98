"""Chinese, Japanese and Korean notes are found by the words a person types (a word inside a
longer run of characters, a Korean word with its particle attached): tests/data/cjk holds
eleven notes and eighteen queries judged by hand, and each query's note must come first
(conservative may withhold a weak match instead: "备份保存多久" holds a word, 多久, that its
note lacks, and bigrams across its word boundaries that no note holds)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nexusbrain.brain import Brain
from nexusbrain.clock import FrozenClock
from nexusbrain.config import Profile, Settings
from nexusbrain.storage import analyzer
from nexusbrain.storage.analyzer import tokens

CORPUS = Path(__file__).parent / "data" / "cjk"


def _judged() -> list[tuple[str, str]]:
    lines = (CORPUS / "queries.tsv").read_text(encoding="utf-8").splitlines()
    return [tuple(line.split("\t")) for line in lines if line and not line.startswith("#")]  # type: ignore[misc]


@pytest.mark.parametrize("profile", [Profile.NONE, Profile.HASHING, Profile.EDGE])
def test_each_judged_query_finds_its_note_first(
    tmp_path: Path, clock: FrozenClock, profile: Profile
) -> None:
    settings = Settings(db=tmp_path / "cjk.db", embedder=profile)
    with Brain.open(settings=settings, clock=clock) as brain:
        report = brain.ingest_dir(CORPUS)
        assert report.added == 11 and not report.errors
        brain.admin.embed_missing()
        judged = _judged()
        assert len(judged) == 18
        for mode in ("conservative", "balanced", "tokenmax"):
            missed, withheld = [], []
            for query, relevant in judged:
                hits = brain.search(query, k=3, mode=mode)
                if not hits and mode == "conservative":
                    withheld.append(query)  # a weak match is withheld there, never a wrong one
                elif not hits or Path(hits[0].uri).name != relevant:
                    missed.append((query, [Path(h.uri).name for h in hits]))
            assert missed == [], (profile, mode)
            assert len(withheld) <= 1, withheld


def test_runs_become_overlapping_bigrams_and_korean_particles_do_not_hide_a_word() -> None:
    assert tokens("数据库备份") == ["数据", "据库", "库备", "备份"]
    assert set(tokens("数据库")) <= set(tokens("每天备份生产数据库"))
    assert set(tokens("비밀번호")) <= set(tokens("비밀번호를 잊었으면"))
    assert tokens("サーバー障害") == ["サー", "ーバ", "バー", "ー障", "障害"]
    assert tokens("Tokyo 東京 office") == ["tokyo", "東京", "offic"]


# Characters on both sides of each CJK block's bounds, and typographic punctuation
_NEAR_BOUNDS = st.sampled_from(
    [chr(c + d) for first, last in analyzer._CJK_SPANS for c in (first, last) for d in (-1, 0, 1)]
    + list("—–“”‘’…•€ a1é")
)


@settings(max_examples=300, deadline=None)
@given(st.text(_NEAR_BOUNDS, max_size=12) | st.text(max_size=12))
def test_a_text_holds_cjk_exactly_when_the_pattern_finds_it(text: str) -> None:
    assert analyzer._has_cjk(text) == bool(analyzer._cjk()[0].search(text))


def test_punctuation_past_ascii_does_not_compile_the_cjk_patterns() -> None:
    analyzer._cjk.cache_clear()
    assert tokens("café — “quoted” … done") == ["cafe", "quot", "done"]
    assert analyzer._cjk.cache_info().currsize == 0
    assert tokens("東京都 café") == ["東京", "京都", "cafe"]
    assert analyzer._cjk.cache_info().currsize == 1
