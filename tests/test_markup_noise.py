"""Chunks that are mostly markup never outrank the prose that answers (issue 18).

tests/data/noise/ holds pages written the way npm's, Node's, Cargo's and pip's docs are:
badges, tables of contents, "See also" and link lists, blocks of link reference
definitions. Rendered, the definitions and badges show no words and the lists only point
elsewhere, so ingest leaves them out of every chunk (a list's words go, at a low weight, to
the context of the chunk before it: ingest/markup.py, ingest/chunking.py rule 6)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings
from nexusbrain.ingest.chunking import chunk_markdown
from nexusbrain.ingest.markup import Markup, classify, visible
from nexusbrain.records import SearchMode

NOISE = Path(__file__).parent / "data" / "noise"
# question -> a phrase only the prose that answers it holds
QUESTIONS = {
    "how do I read the contents of a file": "Asynchronously reads the entire contents",
    "watch a directory for changes": "Watch for changes on filename",
    "does npm come bundled with node": "npm comes bundled with node",
    "which node version does npm need": "currently supported version of Node.js",
    "depend on a crate from a git repository": "To depend on a library located in a git",
    "install packages listed in a requirements file": "Install the packages listed",
    "editable install from a local directory": "Point pip at a directory",
    "test whether a process may read a path": "F_OK, R_OK, W_OK and X_OK",
    # the words of these are in link lists and definitions too; the answer is another page
    "uninstall a package with npm": "This uninstalls a package",
    "what is the format of a requirements file": "Each line of the requirements file",
    "git authentication for cargo dependencies": "Cargo supports some forms of authentication",
}
MARKUP = ("](http", "]: ", "](#", "[![", "<!--")


@pytest.mark.parametrize(
    ("paragraph", "kind"),
    [
        ("[npm]: https://npmjs.com\n[node]: https://nodejs.org 'Node'", Markup.HIDDEN),
        ("[![npm](https://img.shields.io/npm/v/npm.svg)](https://npm.im/npm)", Markup.HIDDEN),
        ("<!--introduced_in=v0.10.0-->", Markup.HIDDEN),
        ('<p align="center"><img src="logo.png" alt="logo"></p>', Markup.HIDDEN),
        ("- [Requirements](#requirements)\n  - [Linux](#linux)", Markup.NAVIGATION),
        ("* [pip download](https://pip.pypa.io/download) - fetch only", Markup.NAVIGATION),
        ("1. <https://docs.rs>\n2. [crates.io][cratesio]", Markup.NAVIGATION),
        ("See the [install guide](install.md) before you start.", Markup.PROSE),
        ("- [Ana](ana.md) owns the billing service and its on-call rota", Markup.PROSE),
        ("- apples\n- pears", Markup.PROSE),
        ("[x]: not a definition, since a title is quoted", Markup.PROSE),
        ("😀 !", Markup.PROSE),
    ],
)
def test_markup_is_told_from_prose(paragraph: str, kind: Markup) -> None:
    assert classify(paragraph) is kind


def test_a_list_keeps_its_visible_words_only() -> None:
    shown = visible("- [npm ci](https://docs.npmjs.com/ci) – clean install\n- [![x](i.svg)](u)")
    assert shown == "npm ci – clean install"


def test_markup_is_in_no_chunk_and_a_list_is_context() -> None:
    text = (NOISE / "cargo-dependencies.md").read_text(encoding="utf-8")
    chunks = chunk_markdown(text)
    assert not any(marker in c.text for c in chunks for marker in MARKUP)
    see_also = next(c for c in chunks if c.heading_path[-1:] == ("See also",))
    assert see_also.text == "## See also"
    assert "Overriding dependencies" in see_also.context and "](" not in see_also.context
    first = chunks[0]  # the table of contents follows the intro paragraph
    assert "Platform specific dependencies" in first.context
    # a page that is nothing but markup is still indexed, as it is
    assert chunk_markdown("[a]: https://x.io\n[b]: https://y.io")[0].text.startswith("[a]")


@pytest.fixture(scope="module", params=[Profile.HASHING, Profile.EDGE])
def docs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Brain]:
    db = tmp_path_factory.mktemp("noise") / "brain.db"
    with Brain.open(settings=Settings(db=db, embedder=request.param)) as brain:
        brain.ingest_dir(NOISE)
        yield brain


@pytest.mark.parametrize("mode", list(SearchMode))
def test_prose_answers_before_any_markup(docs: Brain, mode: SearchMode) -> None:
    for question, phrase in QUESTIONS.items():
        hits = docs.search(question, mode=mode, k=5)
        assert hits, question
        assert phrase in hits[0].text, (question, hits[0].text[:60])
        noisy = [h.rank for h in hits if any(marker in h.text for marker in MARKUP)]
        assert noisy == [], (question, noisy)
