from __future__ import annotations

import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nexusbrain.ingest.frontmatter import (
    MAX_TITLE_CHARS,
    FrontMatter,
    parse_front_matter,
    readable_title,
    title_from,
)


def test_block_is_parsed_and_body_starts_after_the_closing_line() -> None:
    text = "---\ntitle: Notes\ntags: [a, b]\ndate: 2024-05-01\n---\n# Body\n"
    front = parse_front_matter(text)
    assert dict(front.data) == {
        "title": "Notes",
        "tags": ["a", "b"],
        "date": datetime.date(2024, 5, 1),
    }
    assert text[front.body_start :] == "# Body\n"


def test_no_block_gives_empty_data_and_zero_offset() -> None:
    assert parse_front_matter("# Title\n---\na: 1\n---\n") == FrontMatter({}, 0)
    assert parse_front_matter("") == FrontMatter({}, 0)
    assert parse_front_matter(" ---\na: 1\n---\n") == FrontMatter({}, 0)


def test_unclosed_block_is_not_front_matter() -> None:
    assert parse_front_matter("---\na: 1\nmore text\n") == FrontMatter({}, 0)


def test_dots_close_a_block_and_crlf_or_cr_endings_work() -> None:
    assert parse_front_matter("---\r\na: 1\r\n...\r\nbody") == FrontMatter({"a": 1}, 16)
    assert parse_front_matter("---\ra: 1\r---  \rbody") == FrontMatter({"a": 1}, 15)


def test_closing_line_at_the_end_of_the_text() -> None:
    assert parse_front_matter("---\na: 1\n---") == FrontMatter({"a": 1}, 12)


def test_empty_block_gives_empty_data() -> None:
    assert parse_front_matter("---\n---\nbody") == FrontMatter({}, 8)
    assert parse_front_matter("---\n# only a comment\n---\nbody") == FrontMatter({}, 25)


def test_non_string_top_level_keys_become_strings() -> None:
    assert dict(parse_front_matter("---\n2024: x\n---\n").data) == {"2024": "x"}


def test_data_is_read_only() -> None:
    data = parse_front_matter("---\na: 1\n---\n").data
    with pytest.raises(TypeError):
        data["a"] = 2  # type: ignore[index]


def test_invalid_yaml_names_the_reason_and_document_line() -> None:
    with pytest.raises(ValueError, match=r"invalid YAML in front matter at line 3: mapping values"):
        parse_front_matter("---\nkey: value\n  bad: indent\n---\nbody")


def test_yaml_that_is_not_a_mapping_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"line 2 is a list, not a mapping"):
        parse_front_matter("---\n- a\n- b\n---\n")
    with pytest.raises(ValueError, match=r"is a str, not a mapping"):
        parse_front_matter("---\njust text\n---\n")


def test_title_prefers_front_matter_string() -> None:
    text = "---\ntitle: '  From YAML '\n---\n# Heading\n"
    assert title_from(text, parse_front_matter(text), "fallback") == "From YAML"


def test_title_falls_back_to_first_h1_then_first_heading_then_fallback() -> None:
    text = "---\ntitle: 42\n---\n## Sub\n```\n# not a title\n```\n# Main\n"
    assert title_from(text, parse_front_matter(text), "fb") == "Main"
    assert title_from("text\n### Deep\n## Less deep\n", FrontMatter({}, 0), "fb") == "Deep"
    assert title_from("no headings here\n", FrontMatter({}, 0), "fb") == "fb"
    assert title_from("#\n", FrontMatter({}, 0), "fb") == "fb"


def test_title_ignores_headings_inside_the_front_matter() -> None:
    text = "---\n# comment\n---\nbody\n"
    assert title_from(text, parse_front_matter(text), "fb") == "fb"


_KEYS = st.text("abcdefghij_", min_size=1, max_size=8)
_VALUES = st.one_of(st.integers(), st.booleans(), st.text("xyz ", min_size=1).map(str.strip))


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(_KEYS, _VALUES, max_size=5), st.sampled_from(["\n", "\r\n", "\r"]))
def test_round_trip_of_simple_mappings(data: dict[str, object], eol: str) -> None:
    lines = [
        f"{key}: {value!r}" if isinstance(value, str) else f"{key}: {value}"
        for key, value in data.items()
    ]
    block = eol.join(["---", *lines, "---"]) + eol
    front = parse_front_matter(block + "body")
    assert dict(front.data) == data
    assert front.body_start == len(block)


@pytest.mark.parametrize(
    ("yaml_text", "line"),
    [
        ("a: &a [*a]", 2),  # a list that holds itself
        ("base: &b {x: 1}\nother:\n  <<: *b", 4),  # a merge key is an alias too
        (
            "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "c: [*b, *b, *b, *b, *b, *b, *b, *b, *b]",  # each level multiplies the size by 9
            3,
        ),
    ],
)
def test_yaml_aliases_are_refused_naming_the_line(yaml_text: str, line: int) -> None:
    expected = rf"at line {line}: an alias \(\*\w\) is not allowed in front matter; write the"
    with pytest.raises(ValueError, match=expected):
        parse_front_matter(f"---\n{yaml_text}\n---\nbody")


def test_an_anchor_without_an_alias_is_plain_yaml() -> None:
    assert parse_front_matter("---\na: &x 1\n---\nbody").data == {"a": 1}


def test_yaml_nested_too_deeply_for_the_parser_is_an_error() -> None:
    deep = "[" * 5000 + "]" * 5000
    with pytest.raises(ValueError, match="nested too deeply"):
        parse_front_matter(f"---\na: {deep}\n---\nbody")


def test_a_long_or_decorated_title_is_made_readable_not_refused() -> None:
    badges = "[![CI](https://ci.example/badge.svg)](https://ci.example) [![docs](d.svg)](d)"
    text = f"# rustfmt {badges} [the book](https://book.example)\n\nbody\n"
    assert title_from(text, FrontMatter({}, 0), "fb") == "rustfmt the book"
    long = "word " * 300
    cut = readable_title(long)
    assert len(cut) <= MAX_TITLE_CHARS and cut.endswith("word…")
    unbroken = "x" * 1_000
    assert readable_title(unbroken) == "x" * (MAX_TITLE_CHARS - 1) + "…"
    assert readable_title("  spaced\t out  ") == "spaced out"
