"""Hostile input to ingest, generated: front matter (YAML of every shape, aliases, bad
indentation), encodings (BOMs, UTF-16, invalid UTF-8, NUL and control characters), sizes (empty,
blank, one long line, many headings) and file names (spaces, Unicode, bytes that are not UTF-8,
the longest a file system takes). For every folder: `ingest-dir` never raises; every file is
either stored or listed with its reason; the stored ones are found by their own words; the file
checks and the logical checks hold; a second run changes nothing. Direct writes (`ingest_markdown`,
`add_memory`) either store or raise InvalidInput, never another error.

60 folders by default; 400 with the `slow` marker."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nexusbrain.errors import InvalidInput

from .checks import file_checks, logical_checks, open_brain

YAML_PIECES = [
    "title: T",
    "title: [1, 2]",
    "title: ''",
    "a: &a [*a]",
    "a: &x 1\nb: *x",
    "relations:\n  - works_at: Acme",
    "relations:\n  - {type: 'bad type!', to: X}",
    "relations:\n  - {type: knows, to: Y, valid_at: not-a-date}",
    "relations: 7",
    "tags: [a, b",
    "  bad: indent\n wrong",
    "date: 2024-13-45",
    "big: 1e999",
    "n: .nan",
    "? complex key\n: value",
    "!!python/object:os.system ls",
    "k: " + "[" * 200 + "]" * 200,
    "x: |\n  block\n  text",
]
WORDS = [
    "alpha",
    "okapi",
    "zephyr",
    "quark",
    "[[Bob]]",
    "[[Bob|b]]",
    "# Head",
    "## Sub",
    "```",
    "`x`",
]


@st.composite
def contents(draw: st.DrawFn) -> bytes:
    body = " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=30)))
    if draw(st.booleans()):
        body += draw(st.text(max_size=80))
    if draw(st.booleans()):
        front = "\n".join(draw(st.lists(st.sampled_from(YAML_PIECES), min_size=1, max_size=3)))
        body = f"---\n{front}\n---\n{body}"
    shape = draw(st.sampled_from(["plain", "long", "headings", "blank", "empty"]))
    if shape == "long":
        body += " " + "w" * draw(st.integers(1_000, 60_000))
    elif shape == "headings":
        body += "".join(f"\n# h{i}\ntext {i}" for i in range(draw(st.integers(1, 300))))
    elif shape == "blank":
        body = " \n\t\n" * draw(st.integers(0, 5))
    elif shape == "empty":
        body = ""
    data = body.encode("utf-8", "surrogatepass")
    encoding = draw(st.sampled_from(["utf-8", "bom", "utf-16", "latin-1", "nul", "broken"]))
    if encoding == "bom":
        data = b"\xef\xbb\xbf" + data
    elif encoding == "utf-16":
        data = body.encode("utf-16", "surrogatepass")
    elif encoding == "latin-1":
        data = body.encode("latin-1", "replace") + b"\xe9"
    elif encoding == "nul":
        data = data + b"\x00\x01\x1b"
    elif encoding == "broken":
        data = data[: max(0, len(data) - 1)] + b"\xff\xfe"
    return data


NAME_BYTES = st.one_of(
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/\\"),
        min_size=1,
        max_size=40,
    ).map(lambda s: s.encode("utf-8")),
    st.binary(min_size=1, max_size=20).map(lambda b: b.replace(b"/", b"_").replace(b"\x00", b"_")),
    st.just("ü" * 120).map(lambda s: s.encode("utf-8")),  # 240 bytes, near the limit
)


@st.composite
def folders(draw: st.DrawFn) -> list[tuple[bytes, bytes]]:
    names = draw(st.lists(NAME_BYTES, min_size=1, max_size=6, unique=True))
    return [(name + b".md", draw(contents())) for name in names if name not in (b".", b"..")]


def _write(root: Path, files: list[tuple[bytes, bytes]]) -> list[bytes]:
    written = []
    for name, data in files:
        path = os.path.join(os.fsencode(root), name)
        try:
            with open(path, "wb") as file:
                file.write(data)
        except OSError:
            continue  # a name this file system refuses (too long): not a case for ingest
        written.append(path)
    return written


def _check_folder(files: list[tuple[bytes, bytes]]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "vault"
        root.mkdir()
        written = _write(root, files)
        db = Path(scratch) / "brain.db"
        with open_brain(db) as brain:
            report = brain.ingest_dir(root)
            brain.admin.embed_missing()
            listed = {os.fsencode(p.path) for p in report.errors}
            assert all(p.reason for p in report.errors)
            stored = {
                os.fsencode(d["uri"]) for d in brain.admin.export() if d["type"] == "document"
            }
            for path in written:
                shown = path.decode("utf-8", "backslashreplace").encode("utf-8")
                if os.path.basename(path).startswith(b"."):  # hidden: passed over, as .git is
                    assert path not in stored and shown not in listed, path
                else:
                    assert (path in stored) != (shown in listed), path
            assert report.added == len(stored)
            again = brain.ingest_dir(root)
            assert (again.added, again.updated, again.deleted) == (0, 0, 0)
        file_checks(db)
        try:
            logical_checks(db)
        except AssertionError:
            print(files)
            raise


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(folders())
def test_ingest_dir_takes_any_folder(files: list[tuple[bytes, bytes]]) -> None:
    _check_folder(files)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(folders())
def test_ingest_dir_takes_any_folder_long(files: list[tuple[bytes, bytes]]) -> None:
    _check_folder(files)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300), contents())
def test_direct_writes_store_or_refuse_cleanly(text: str, data: bytes) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "brain.db"
        with open_brain(db) as brain:
            for write in (
                lambda: brain.add_memory(text),
                lambda: brain.ingest_markdown(data.decode("utf-8", "surrogateescape")),
                lambda: brain.ingest_markdown(text, title=text, uri=text or None),
            ):
                try:
                    write()
                except InvalidInput as exc:
                    assert exc.message
        file_checks(db)
