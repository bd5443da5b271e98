from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nexusbrain.ingest.chunking import (
    ChunkingConfig,
    chunk_markdown,
    iter_headings,
    iter_markup,
)
from nexusbrain.records import ChunkDraft

Row = tuple[int, int, int, int, tuple[str, ...]]
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_DEFAULT = ChunkingConfig()


def rows(text: str, config: ChunkingConfig = _DEFAULT, start: int = 0) -> list[Row]:
    """(char_start, char_end, line_start, line_end, heading_path) of each chunk, text checked."""
    spans = chunk_markdown(text, config, start=start)
    assert [s.ordinal for s in spans] == list(range(len(spans)))
    assert all(s.text == text[s.char_start : s.char_end] for s in spans)
    return [(s.char_start, s.char_end, s.line_start, s.line_end, s.heading_path) for s in spans]


# --- hand-written cases ----------------------------------------------------------------


def test_empty_and_whitespace_only_input_give_no_chunks() -> None:
    assert chunk_markdown("") == []
    assert chunk_markdown(" \n\t\r\n\u3000\n") == []
    assert chunk_markdown("text\n\n  \n", start=4) == []


def test_single_paragraph_is_trimmed() -> None:
    assert chunk_markdown("\n  Hello world.  \n\n") == [
        ChunkDraft(0, 3, 15, 2, 2, (), "Hello world.")
    ]


def test_headings_cut_chunks_and_nest() -> None:
    text = "# Install\n\nIntro text.\n\n## Linux\n\napt install\n\n## Mac\nbrew\n# Usage\nrun it\n"
    assert rows(text) == [
        (0, 22, 1, 3, ("Install",)),
        (24, 45, 5, 7, ("Install", "Linux")),
        (47, 58, 9, 10, ("Install", "Mac")),
        (59, 73, 11, 12, ("Usage",)),
    ]


def test_deeper_headings_pop_when_a_shallower_one_comes() -> None:
    text = "# A\n## B\n### C\nc\n## D\nd\n# E\ne"
    assert [path for *_, path in rows(text)] == [("A", "B", "C"), ("A", "D"), ("E",)]


def test_heading_only_section_joins_the_next_chunk() -> None:
    assert rows("# A\n## B\ntext\n") == [(0, 13, 1, 3, ("A", "B"))]


def test_heading_only_section_at_the_end_stays_alone() -> None:
    assert rows("text\n\n# End\n") == [(0, 4, 1, 1, ()), (6, 11, 3, 3, ("End",))]


def test_heading_joins_its_first_block_beyond_target_but_not_beyond_max() -> None:
    text = "# Head\n\nparagraph!!"
    assert rows(text, ChunkingConfig(target_chars=10, max_chars=30)) == [(0, 19, 1, 3, ("Head",))]
    assert rows(text, ChunkingConfig(target_chars=10, max_chars=12)) == [
        (0, 6, 1, 1, ("Head",)),
        (8, 19, 3, 3, ("Head",)),
    ]


def test_blocks_pack_greedily_up_to_target() -> None:
    text = "aaa\n\nbbb\n\nccc\n\nddddddddddd"
    assert rows(text, ChunkingConfig(target_chars=12, max_chars=20)) == [
        (0, 8, 1, 3, ()),
        (10, 13, 5, 5, ()),
        (15, 26, 7, 7, ()),
    ]
    assert rows(text, ChunkingConfig(target_chars=13, max_chars=20)) == [
        (0, 13, 1, 5, ()),
        (15, 26, 7, 7, ()),
    ]


def test_fence_with_blank_and_hash_lines_is_one_uncut_block() -> None:
    text = "intro\n\n```py\n# not a heading\n\nmore code\n```\n\nafter\n"
    assert rows(text, ChunkingConfig(target_chars=10, max_chars=20)) == [
        (0, 5, 1, 1, ()),
        (7, 43, 3, 7, ()),
        (45, 50, 9, 9, ()),
    ]


def test_fence_closes_only_on_same_char_at_least_as_long() -> None:
    assert rows("~~~~\n# a\n~~~\n# b\n~~~~\n# c") == [
        (0, 21, 1, 5, ()),
        (22, 25, 6, 6, ("c",)),
    ]
    assert rows("```\n# x\n~~~\n````  \n# y") == [(0, 16, 1, 4, ()), (19, 22, 5, 5, ("y",))]


def test_unclosed_fence_runs_to_the_end_and_is_never_split() -> None:
    text = "# H\n```\ncode\n\n# not heading\n\n"
    assert rows(text, ChunkingConfig(target_chars=5, max_chars=10)) == [(0, 27, 1, 5, ("H",))]


def test_backtick_fence_info_with_backtick_is_not_a_fence() -> None:
    assert rows("``` a`b\n# h") == [(0, 7, 1, 1, ()), (8, 11, 2, 2, ("h",))]


def test_long_paragraph_splits_at_sentence_ends() -> None:
    text = "First sentence here. Second one is longer, right? Third!"
    assert rows(text, ChunkingConfig(target_chars=20, max_chars=30)) == [
        (0, 20, 1, 1, ()),
        (21, 49, 1, 1, ()),
        (50, 56, 1, 1, ()),
    ]


def test_long_sentence_splits_at_whitespace() -> None:
    text = "aaaa bbbb\ncccc dddd"
    assert rows(text, ChunkingConfig(target_chars=10, max_chars=12)) == [
        (0, 9, 1, 1, ()),
        (10, 19, 2, 2, ()),
    ]


def test_long_word_splits_hard_at_max() -> None:
    assert rows("x" * 20, ChunkingConfig(target_chars=4, max_chars=8)) == [
        (0, 8, 1, 1, ()),
        (8, 16, 1, 1, ()),
        (16, 20, 1, 1, ()),
    ]


def test_crlf_and_cr_line_endings_count_as_one_line_each() -> None:
    assert rows("a\r\nb\r\n\r\n# H\r\nc\rd") == [(0, 4, 1, 2, ()), (8, 16, 4, 6, ("H",))]
    assert rows("x\r\ry") == [(0, 4, 1, 3, ())]


def test_start_skips_front_matter_but_offsets_and_lines_stay_absolute() -> None:
    text = "---\ntitle: x\n---\n# Body\ntext\n"
    assert rows(text, start=17) == [(17, 28, 4, 5, ("Body",))]
    assert rows("abc def", start=2) == [(2, 7, 1, 1, ())]


def test_start_outside_the_text_is_an_error() -> None:
    with pytest.raises(ValueError, match="outside"):
        chunk_markdown("abc", start=4)
    with pytest.raises(ValueError, match="outside"):
        chunk_markdown("abc", start=-1)


def test_setext_headings() -> None:
    text = "Title\n=====\n\nbody\n\nSub\n---\nx\n"
    assert rows(text) == [(0, 17, 1, 4, ("Title",)), (19, 28, 6, 8, ("Title", "Sub"))]


def test_dashes_after_a_list_or_at_the_top_are_breaks_not_headings() -> None:
    assert rows("- a\n---\nz") == [(0, 9, 1, 3, ())]
    assert rows("---\ntext") == [(0, 8, 1, 2, ())]


def test_lines_that_are_not_atx_headings() -> None:
    text = "#hashtag\n####### seven\n    # indented\n## Title ##\nbody\n# \n"
    assert rows(text) == [
        (0, 37, 1, 3, ()),
        (38, 54, 4, 5, ("Title",)),
        (55, 56, 6, 6, ("",)),
    ]


def test_heading_text_drops_closing_hashes_only_after_space() -> None:
    text = "# foo#\n### ###\n#\tbar #  \n```\n# in fence\n```\nBaz\n==="
    assert [(h.level, h.text) for h in iter_headings(text)] == [
        (1, "foo#"),
        (3, ""),
        (1, "bar"),
        (1, "Baz"),
    ]


def test_config_must_have_positive_target_within_max() -> None:
    with pytest.raises(ValueError, match="target_chars"):
        ChunkingConfig(target_chars=0, max_chars=10)
    with pytest.raises(ValueError, match="target_chars"):
        ChunkingConfig(target_chars=11, max_chars=10)


# --- properties ------------------------------------------------------------------------

_FREE_TEXT = st.text(
    st.characters(codec="utf-8", exclude_characters="\r\n"),
    max_size=12,
)
_TOKEN = st.sampled_from(
    [
        "word",
        "Ünïcødé",
        "漢字",
        "😀",
        ". ",
        "? ",
        "! ",
        " ",
        "  ",
        "\t",
        "\u3000",
        "#",
        "`",
        "x" * 30,
    ]
)
_PLAIN = st.lists(st.one_of(_TOKEN, _FREE_TEXT), max_size=10).map("".join)
_LINE = st.one_of(
    _PLAIN,
    _PLAIN,
    st.builds(lambda n, t: " " * (n % 4) + "#" * (1 + n % 7) + " " + t, st.integers(0, 20), _PLAIN),
    st.sampled_from(["```", "```py", "~~~", "~~~~", "````", "", "", " ", "---", "===", "- a"]),
    st.sampled_from(["[ref]: https://x.io", "- [a](#b)", "* [c][d] – e", "[![b](i.svg)](u)"]),
    st.sampled_from(["<!-- note -->", "<img src=x>", "1. <https://y.io>"]),
)
_ENDING = st.sampled_from(["\n", "\n", "\r\n", "\r"])


@st.composite
def markdownish(draw: st.DrawFn) -> str:
    lines = draw(st.lists(st.tuples(_LINE, _ENDING), max_size=30))
    return "".join(line + ending for line, ending in lines) + draw(_PLAIN)


@st.composite
def configs(draw: st.DrawFn) -> ChunkingConfig:
    target = draw(st.integers(1, 120))
    return ChunkingConfig(target_chars=target, max_chars=draw(st.integers(target, 240)))


def _line_of(text: str, offset: int) -> int:
    return len(_LINE_BREAK.findall(text, 0, offset)) + 1


@settings(max_examples=300, deadline=None)
@given(markdownish(), configs(), st.data())
def test_spans_are_exact_ordered_covering_and_bounded(
    text: str, config: ChunkingConfig, data: st.DataObject
) -> None:
    start = data.draw(st.integers(0, len(text)))
    spans = chunk_markdown(text, config, start=start)
    covered = [False] * len(text)
    previous_end = start
    for ordinal, span in enumerate(spans):
        assert span.ordinal == ordinal
        assert previous_end <= span.char_start < span.char_end
        assert span.text == text[span.char_start : span.char_end]
        assert not span.text[0].isspace() and not span.text[-1].isspace()
        assert len(span.text) <= config.max_chars or "```" in span.text or "~~~" in span.text
        assert span.line_start == _line_of(text, span.char_start)
        assert span.line_end == _line_of(text, span.char_end - 1)
        covered[span.char_start : span.char_end] = [True] * len(span.text)
        previous_end = span.char_end
    for left_out in iter_markup(text, start=start):
        assert not any(covered[slice(*left_out)])
        covered[slice(*left_out)] = [True] * (left_out[1] - left_out[0])
    assert all(covered[i] or text[i].isspace() for i in range(start, len(text)))


@settings(max_examples=150, deadline=None)
@given(st.lists(_PLAIN, max_size=8), st.lists(_PLAIN, min_size=1, max_size=8), configs())
def test_a_closed_fence_lands_whole_in_one_chunk(
    before: list[str], body: list[str], config: ChunkingConfig
) -> None:
    clean = [line.replace("`", "'") for line in before]
    head = "".join(line + "\n\n" for line in clean)
    fence = "```\n" + "\n\n".join(line.replace("`", "'") for line in body) + "\n```"
    text = head + fence + "\n\nafter"
    inside = [s for s in chunk_markdown(text, config) if s.char_start <= len(head) < s.char_end]
    assert len(inside) == 1
    assert inside[0].char_end >= len(head) + len(fence)


@settings(max_examples=100, deadline=None)
@given(markdownish())
def test_a_chunk_with_its_own_heading_ends_its_path_with_it(text: str) -> None:
    titles = {h.char_start: h.text for h in iter_headings(text)}
    for span in chunk_markdown(text):
        own = [titles[i] for i in titles if span.char_start <= i < span.char_end]
        if own:
            assert span.heading_path[-1] == own[-1]
