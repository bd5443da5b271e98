"""The extractors of ingest/formats/, one file format at a time: what each keeps, drops and
refuses, and that every chunk's span points exactly into the stored text."""

from __future__ import annotations

import functools
import io
import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nexusbrain.config import ChunkingConfig
from nexusbrain.errors import InvalidInput, MissingExtra, TooLarge
from nexusbrain.ingest.formats import FORMATS, SUFFIXES, format_of
from nexusbrain.ingest.formats.asciidoc import extract_asciidoc
from nexusbrain.ingest.formats.base import Extracted
from nexusbrain.ingest.formats.code import extract_code
from nexusbrain.ingest.formats.html_page import extract_html
from nexusbrain.ingest.formats.pdf import ENCRYPTED, NO_TEXT, extract_pdf
from nexusbrain.ingest.formats.rst import extract_rst
from nexusbrain.ingest.formats.text import extract_text
from nexusbrain.records import DocumentKind

from .pdf_writer import pdf_bytes

DEFAULT = ChunkingConfig()
SMALL = ChunkingConfig(target_chars=40, max_chars=80)
_BREAK = re.compile(r"\r\n|\r|\n")


def exact(extracted: Extracted) -> Extracted:
    """`extracted`, once its chunks are checked: numbered in order, ordered and apart, each
    span slicing back to its text, trimmed, and its lines those of its first and last
    character."""
    text = extracted.text
    previous_end = 0
    for ordinal, chunk in enumerate(extracted.chunks):
        assert chunk.ordinal == ordinal
        assert previous_end <= chunk.char_start < chunk.char_end <= len(text)
        assert text[chunk.char_start : chunk.char_end] == chunk.text
        assert chunk.text == chunk.text.strip()
        assert chunk.line_start == len(_BREAK.findall(text, 0, chunk.char_start)) + 1
        assert chunk.line_end == len(_BREAK.findall(text, 0, chunk.char_end - 1)) + 1
        previous_end = chunk.char_end
    return extracted


def read(extract, source: str | bytes, config: ChunkingConfig = DEFAULT, **kw) -> Extracted:  # type: ignore[no-untyped-def]
    data = source.encode("utf-8") if isinstance(source, str) else source
    return exact(extract(data, name="f", config=config, max_bytes=10_000_000, **kw))


def texts(extracted: Extracted) -> list[str]:
    return [c.text for c in extracted.chunks]


def paths(extracted: Extracted) -> list[tuple[str, ...]]:
    return [c.heading_path for c in extracted.chunks]


# --- the registry ----------------------------------------------------------------------


def test_every_suffix_has_one_format_and_markdown_keeps_its_own_path() -> None:
    assert {".md", ".markdown", ".txt", ".rst", ".adoc", ".html", ".htm", ".pdf"} <= SUFFIXES
    assert {".py", ".go", ".rs", ".js", ".ts", ".java", ".c", ".cpp", ".rb", ".sh"} <= SUFFIXES
    assert format_of("notes/a.md") is None and format_of("b.MARKDOWN") is None
    assert format_of("Guide.HTM") is FORMATS[".html"]
    assert format_of("x.py") is not None and format_of("x.py").kind is DocumentKind.CODE  # type: ignore[union-attr]
    assert format_of("x.png") is None and ".png" not in SUFFIXES


def test_a_revision_is_the_bytes_as_one_version_of_one_extractor_read_them() -> None:
    text = FORMATS[".txt"]
    assert text.revision(b"a") == text.revision(b"a") != text.revision(b"b")
    assert text.revision(b"a") != FORMATS[".rst"].revision(b"a")
    assert text.revision(b"a") != type(text)(text.kind, text.label, text.extract, 2).revision(b"a")


# --- plain text ------------------------------------------------------------------------


def test_plain_text_is_paragraphs_with_no_markdown_in_it() -> None:
    source = "---\nDate: Monday\n---\n# not a heading\n\n<just words>\n\n```\ncode\n\nmore\n"
    got = read(extract_text, source, SMALL)
    assert texts(got) == [
        "---\nDate: Monday\n---\n# not a heading",
        "<just words>\n\n```\ncode\n\nmore",  # a fence is no fence here
    ]
    assert paths(got) == [(), ()]
    assert got.title == ""  # the file's name, given by the caller


def test_a_long_plain_paragraph_is_cut_at_sentence_ends() -> None:
    got = read(extract_text, "One two three. " * 10, SMALL)
    assert all(len(t) <= SMALL.max_chars for t in texts(got))
    assert all(t.endswith(".") for t in texts(got))


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"PK\x03\x04\x00\x00binary", "NUL bytes"),
        (b"caf\xe9", "not valid UTF-8"),
        ("\ufeffhi".encode("utf-16-le"), "UTF-16"),
        (b" \n\t\r\n", "empty"),
    ],
)
def test_a_text_file_that_is_not_text_is_refused_with_its_reason(data: bytes, reason: str) -> None:
    for extract in (extract_text, extract_rst, extract_asciidoc):
        with pytest.raises(InvalidInput, match=reason):
            extract(data, name="f.txt", config=DEFAULT, max_bytes=1000)
    with pytest.raises(InvalidInput, match=reason):
        extract_code(data, name="f.py", config=DEFAULT, max_bytes=1000, language="Python")


def test_a_text_file_over_the_limit_is_too_large() -> None:
    with pytest.raises(TooLarge, match="over the limit of 10 bytes"):
        extract_text(b"x" * 11, name="f.txt", config=DEFAULT, max_bytes=10)


# --- reStructuredText ------------------------------------------------------------------


RST = """\
==========
 The Guide
==========

Intro.

Install
=======

Run this::

    pip install guide

    guide --help

Linux
-----

apt.

.. code-block:: python

   def f():

       return 1

.. _target: https://example.com
.. a comment that shows nothing

Deep
~~~~

Deepest.

Usage
=====

Use it.

Short
==

This is not a title: its underline is short.
"""


def test_rst_titles_nest_by_the_order_their_styles_first_appear() -> None:
    got = read(extract_rst, RST, SMALL)
    assert got.title == "The Guide"
    by_text = {c.text.split("\n")[0]: c.heading_path for c in got.chunks}
    assert by_text["Install"] == ("The Guide", "Install")
    assert by_text["Linux"] == ("The Guide", "Install", "Linux")
    assert by_text["Deep"] == ("The Guide", "Install", "Linux", "Deep")
    assert by_text["Usage"] == ("The Guide", "Usage")
    [short] = [c for c in got.chunks if "Short\n==" in c.text]  # text, not a section
    assert short.heading_path == ("The Guide", "Usage")


def test_rst_literal_blocks_and_directives_are_whole_and_comments_are_left_out() -> None:
    got = read(extract_rst, RST, ChunkingConfig(target_chars=10, max_chars=20))
    assert "pip install guide\n\n    guide --help" in texts(got)
    assert ".. code-block:: python\n\n   def f():\n\n       return 1" in texts(got)
    assert not any("comment" in t or "example.com" in t for t in texts(got))


# --- AsciiDoc --------------------------------------------------------------------------


ADOC = """\
= The Guide
:toc:

Intro.

[[install]]
== Install

Run this.

[source,python]
.An example
----
def f():

    return 1
== not a title
----

////
a comment block
////

=== Linux ===
apt.

== Usage
Use it.
"""


def test_asciidoc_titles_make_the_path_and_delimited_blocks_stay_whole() -> None:
    got = read(extract_asciidoc, ADOC, ChunkingConfig(target_chars=10, max_chars=20))
    assert got.title == "The Guide"
    block = "[source,python]\n.An example\n----\ndef f():\n\n    return 1\n== not a title\n----"
    assert block in texts(got)
    by_text = {c.text.split("\n")[0]: c.heading_path for c in got.chunks}
    assert by_text["== Install"] == ("The Guide", "Install")
    assert by_text["[source,python]"] == ("The Guide", "Install")
    assert by_text["=== Linux ==="] == ("The Guide", "Install", "Linux")
    assert by_text["== Usage"] == ("The Guide", "Usage")
    shown = "\n".join(texts(got))
    assert "comment block" not in shown and ":toc:" not in shown and "[[install]]" not in shown


# --- HTML ------------------------------------------------------------------------------


PAGE = """<!doctype html><html><head><meta charset="windows-1252"><title>Okapi | Zoo</title>
<style>p { color: red }</style><script>var s = "<p>script text</p>";</script></head>
<body><header><nav><a href="/">Home</a></nav><p>Site banner</p></header>
<main><article><header><h1>The Okapi &amp; Its Kin</h1></header>
<p>The okapi   grazes <b>quietly</b>.<br>It is shy &eacute;.</p>
<h2>Diet</h2><p>Leaves <span style="display: none">secret</span>and fruit.</p>
<pre>  def eat():

      return leaves</pre>
<table><tr><th>food</th><th>share</th></tr><tr><td>leaves<td>90%</table>
<div hidden>hidden div</div><div aria-hidden="true">aria hidden</div>
<form><label>Search</label><input name=q></form>
<h3>Water</h3><p>Little.</p>
</article></main><footer>Copyright</footer><aside>Buy now</aside>
<p>After main"""


def test_html_keeps_the_main_text_with_its_headings() -> None:
    got = read(extract_html, PAGE.encode("cp1252"), ChunkingConfig(target_chars=30, max_chars=60))
    assert got.title == "The Okapi & Its Kin"
    assert got.text == (
        "The Okapi & Its Kin\n\nThe okapi grazes quietly.\nIt is shy é.\n\nDiet\n\n"
        "Leaves and fruit.\n\n  def eat():\n\n      return leaves\n\nfood | share\n\n"
        "leaves | 90%\n\nWater\n\nLittle."
    )
    assert "def eat():\n\n      return leaves" in texts(got)  # a <pre> is one block
    by_text = {c.text.split("\n")[0]: c.heading_path for c in got.chunks}
    assert by_text["Diet"] == ("The Okapi & Its Kin", "Diet")
    assert by_text["Water"] == ("The Okapi & Its Kin", "Diet", "Water")


def test_html_without_main_keeps_articles_else_the_body() -> None:
    two = (
        "<nav>menu</nav><article><p>First post.</p></article><p>Side</p><article>Second.</article>"
    )
    assert read(extract_html, two).text == "First post.\n\nSecond."
    body = "<html><body><header>Top</header><div>Body text<p>para</div><footer>End</footer>"
    assert read(extract_html, body).text == "Body text\n\npara"


def test_html_title_falls_back_to_the_title_element() -> None:
    page = "<title>The  Page</title><svg><title>icon</title></svg><h2>Sub</h2><p>x</p>"
    assert read(extract_html, page).title == "The Page"


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b'<meta charset="iso-8859-1"><p>caf\xe9 \x93q\x94', "café “q”"),  # read as windows-1252
        (b'<meta http-equiv="Content-Type" content="text/html; charset=koi8-r"><p>\xf0\xd2', "Пр"),
        (b"\xef\xbb\xbf<p>caf\xc3\xa9", "café"),
        ("\ufeff<p>café".encode("utf-16-le"), "café"),
        (b'<meta charset="no-such-charset"><p>caf\xc3\xa9', "café"),
        (b'<meta charset="utf-16"><p>caf\xc3\xa9', "café"),  # without a BOM it is not
        (b"<p>a\x00b", "a\ufffdb"),  # a NUL is shown as browsers show it
    ],
)
def test_html_is_decoded_by_its_bom_or_declared_charset(data: bytes, text: str) -> None:
    assert read(extract_html, data).text == text


def test_broken_html_gives_the_text_it_holds() -> None:
    broken = "<div><p>one<p>two</span></div></div><ul><li>three<li>four</ul><b>five<i>six</b>"
    assert read(extract_html, broken).text == "one\n\ntwo\n\nthree\n\nfour\n\nfivesix"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"<html><head><script>let a = 1;", "no text to index"),
        (b"<nav><p>only navigation</p></nav><footer>and a footer</footer>", "no text to index"),
        (b"<p>caf\xe9 and no charset", "not valid utf-8"),
    ],
)
def test_html_with_nothing_to_read_is_refused_with_its_reason(data: bytes, reason: str) -> None:
    with pytest.raises(InvalidInput, match=reason):
        extract_html(data, name="f.html", config=DEFAULT, max_bytes=1000)


# --- PDF -------------------------------------------------------------------------------


def page_lines(number: int) -> list[str]:
    return [f"Page {number} line {i}: the kudu{number} browses at dawn." for i in range(30)]


def test_every_pdf_chunk_lies_within_one_page_and_names_it() -> None:
    data = pdf_bytes([page_lines(n) for n in range(1, 51)], title="Field  Notes")
    got = read(extract_pdf, data)
    assert got.title == "Field Notes"
    assert got.metadata == {"pages": 50}
    assert {c.meta["page"] for c in got.chunks} == set(range(1, 51))
    for chunk in got.chunks:
        assert set(re.findall(r"kudu(\d+)", chunk.text)) == {str(chunk.meta["page"])}
    [hit] = [c for c in got.chunks if "Page 37 line 12:" in c.text]
    assert hit.meta == {"page": 37}


def test_a_pdf_page_without_text_keeps_the_numbers_of_the_others() -> None:
    got = read(extract_pdf, pdf_bytes([["first page"], None, ["third page"]]))
    assert got.text == "first page\n\nthird page"
    assert [(c.text, c.meta["page"]) for c in got.chunks] == [("first page", 1), ("third page", 3)]
    assert got.metadata == {"pages": 3}


def encrypted(data: bytes, user: str, owner: str) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user, owner, algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_a_pdf_locked_only_against_editing_is_read() -> None:
    data = encrypted(pdf_bytes([["open to read"]]), user="", owner="owner-secret")
    assert texts(read(extract_pdf, data)) == ["open to read"]


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (encrypted(pdf_bytes([["secret"]]), user="pw", owner="pw"), ENCRYPTED),
        (pdf_bytes([None, None]), NO_TEXT),
        (b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog", "cannot read this PDF"),
        (b"plain words in a .pdf", "cannot read this PDF"),
    ],
)
def test_a_pdf_that_cannot_be_read_is_refused_with_its_reason(data: bytes, reason: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        extract_pdf(data, name="f.pdf", config=DEFAULT, max_bytes=1_000_000)
    assert refused.value.message.startswith("f.pdf: ") and reason in refused.value.message


def test_the_pdf_limit_is_on_its_text() -> None:
    data = pdf_bytes([page_lines(1), page_lines(2)])
    with pytest.raises(TooLarge, match="by page 2 of 2"):
        extract_pdf(data, name="f.pdf", config=DEFAULT, max_bytes=len(" ".join(page_lines(1))) + 40)


def test_without_pypdf_a_pdf_needs_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pypdf", None)  # what an install without the extra has
    with pytest.raises(MissingExtra, match=r"nexusbrain\[pdf\]"):
        extract_pdf(pdf_bytes([["x"]]), name="f.pdf", config=DEFAULT, max_bytes=1000)


# --- source code -----------------------------------------------------------------------


PYTHON = '''"""A module."""

import os

# The answer, and why.
@cache
@other
def answer() -> int:
    return 42


X = 1


class Small:
    def a(self) -> None: ...


async def later() -> None:
    pass
'''


def test_python_chunks_at_top_level_definitions_with_their_decorators() -> None:
    got = read(
        extract_code, PYTHON, ChunkingConfig(target_chars=10, max_chars=200), language="Python"
    )
    assert got.metadata == {"language": "python"}
    assert got.title == "f"
    assert [(c.text.split("\n")[0], c.heading_path, c.line_start) for c in got.chunks] == [
        ('"""A module."""', ("Python",), 1),
        ("# The answer, and why.", ("Python", "def answer"), 5),
        ("X = 1", ("Python",), 12),
        ("class Small:", ("Python", "class Small"), 15),
        ("async def later() -> None:", ("Python", "def later"), 19),
    ]


def test_small_python_definitions_share_a_chunk_that_names_them() -> None:
    got = read(extract_code, PYTHON, language="Python")
    assert [c.heading_path for c in got.chunks] == [
        ("Python", "def answer, class Small, def later")
    ]


def test_a_python_class_over_max_is_cut_at_its_methods() -> None:
    methods = "".join(
        f"    def m{i}(self) -> int:\n        return {i} * {i}\n\n" for i in range(12)
    )
    source = f'class Big:\n    """Many methods."""\n\n{methods}\ndef after() -> None:\n    pass\n'
    got = read(
        extract_code, source, ChunkingConfig(target_chars=120, max_chars=240), language="Python"
    )
    assert [(c.heading_path[1:], c.line_start) for c in got.chunks] == [
        (("class Big", "def m0"), 1),  # the class's header, and its first method
        *((("class Big", f"def m{i}, def m{i + 1}"), 6 * (i // 2) + 7) for i in range(1, 10, 2)),
        (("class Big", "def m11"), 37),
        (("def after",), 41),
    ]
    assert all(len(c.text) <= 120 for c in got.chunks)


def test_python_that_does_not_parse_is_cut_at_blank_lines() -> None:
    source = "print 'python 2'\n\ndef broken(:\n    pass\n\nlast = 1\n"
    got = read(
        extract_code, source, ChunkingConfig(target_chars=10, max_chars=50), language="Python"
    )
    assert texts(got) == ["print 'python 2'", "def broken(:\n    pass", "last = 1"]


@pytest.mark.parametrize(
    ("language", "source", "names"),
    [
        (
            "Go",
            "package main\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n\n"
            "type T struct {\n\tX int\n}\n",
            ["", "func Add(a, b int) int", "type T struct"],
        ),
        (
            "Rust",
            "use std::io;\n\n#[derive(Debug)]\npub struct P {\n    x: i32,\n}\n\n"
            "impl P {\n    fn new() -> Self { P { x: 0 } }\n}\n",
            ["", "pub struct P", "impl P"],
        ),
        (
            "JavaScript",
            "'use strict';\n\n/** Adds. */\nexport function add(a, b) {\n  return a + b;\n}\n"
            "class K {\n  m() {}\n}\n",
            ["", "export function add(a, b)", "class K"],
        ),
        (
            "C",
            "#include <stdio.h>\n\nstatic int twice(int x)\n{\n    return 2 * x;\n}\n\n"
            "int main(void) {\n    if (1) {\n        return twice(2);\n    }\n}\n",
            ["", "static int twice(int x)", "int main(void)"],
        ),
        (
            "Shell",
            "#!/bin/sh\nset -e\n\nbuild() {\n  [[ -f x ]] && make\n}\n\n"
            "function test {\n  true\n}\n",
            ["", "build()", "function test"],
        ),
    ],
)
def test_other_languages_cut_where_a_line_at_column_0_opens_a_definition(
    language: str, source: str, names: list[str]
) -> None:
    got = read(
        extract_code, source, ChunkingConfig(target_chars=5, max_chars=200), language=language
    )
    assert [c.heading_path for c in got.chunks] == [
        (language, n) if n else (language,) for n in names
    ]


def test_a_definition_over_max_is_cut_at_line_ends_and_a_long_line_in_slices() -> None:
    body = "".join(f"    step{i}();\n" for i in range(40))
    source = f'func Long() {{\n{body}}}\nvar x = "{"y" * 150}"\n'
    config = ChunkingConfig(target_chars=60, max_chars=100)
    got = read(extract_code, source, config, language="Go")
    assert all(len(t) <= config.max_chars for t in texts(got))
    assert all(len(t) <= config.target_chars for t in texts(got)[:-2])
    assert "".join(texts(got)).replace(" ", "").replace("\n", "") == re.sub(r"\s", "", source)


# --- spans, for every format, over random input ----------------------------------------

_PIECES = st.sampled_from(
    "word|Two words.| |\t|\n|\n\n|\r\n|\r|  |====|----|~~~~|::|.. note::|.. _x: y|..|= T|== S"
    "|----\n|////|[source]|:a: b|`|#|def f():|class C:|    pass|@d|func F() {|}|{|<p>|</p>|<h2>"
    "|</h2>|<pre>|</pre>|<br>|<main>|<nav>|</nav>|<!--|-->|&amp;|<script>|</script>|é|\u2028"
    "|\x0c|\x0b|\ufeff".split("|")
)
_SOURCES = st.lists(_PIECES, max_size=60).map("".join)
_CONFIGS = st.sampled_from([SMALL, ChunkingConfig(target_chars=5, max_chars=12), DEFAULT])
_EXTRACTORS = {
    "text": extract_text,
    "rst": extract_rst,
    "asciidoc": extract_asciidoc,
    "html": extract_html,
    **{
        language: functools.partial(extract_code, language=language)
        for language in ("Python", "Go", "C", "Ruby")
    },
}


@settings(max_examples=400, deadline=None)
@given(_SOURCES, _CONFIGS, st.sampled_from(sorted(_EXTRACTORS)))
def test_every_span_points_exactly_into_the_stored_text(
    source: str, config: ChunkingConfig, kind: str
) -> None:
    try:
        got = read(_EXTRACTORS[kind], source, config)
    except InvalidInput as exc:
        assert "empty" in exc.message or "no text to index" in exc.message
        return
    if kind != "html":
        assert got.text == source.removeprefix("\ufeff")
    whole = kind in ("rst", "asciidoc") or (kind == "html" and "<pre>" in source)
    if not whole:  # no fence, directive or <pre> kept whole however long
        assert all(len(c.text) <= config.max_chars for c in got.chunks)
    if kind not in ("rst", "asciidoc", "html"):  # where nothing is left out
        covered = {i for c in got.chunks for i in range(c.char_start, c.char_end)}
        assert all(ch.isspace() or i in covered for i, ch in enumerate(got.text))


_LINES = st.lists(
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=60), max_size=6
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_LINES | st.none(), min_size=1, max_size=5), _CONFIGS)
def test_every_pdf_span_points_exactly_into_the_stored_text(
    pages: list[list[str] | None], config: ChunkingConfig
) -> None:
    try:
        got = read(extract_pdf, pdf_bytes(pages), config)
    except InvalidInput as exc:
        assert NO_TEXT in exc.message
        assert all(not "".join(page or []).strip() for page in pages)
        return
    shown = [" ".join(" ".join(page or []).split()) for page in pages]
    for chunk in got.chunks:  # within its page: its words are that page's words
        assert " ".join(chunk.text.split()) in shown[chunk.meta["page"] - 1]
    assert all(len(c.text) <= config.max_chars for c in got.chunks)
