"""A folder of every kind of file, through Brain.ingest_dir and Brain.search: each kind is
found by a sentence from its middle, a PDF hit names its page, a file that cannot be read is
reported with its reason while the rest ingests, and unchanged files cost no writes."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from watchfiles import Change

from nexusbrain.brain import Brain
from nexusbrain.clock import FrozenClock
from nexusbrain.config import Profile, Settings
from nexusbrain.errors import NotFound
from nexusbrain.ingest.watch import NotesFilter
from nexusbrain.records import DocumentKind, Hit

from .pdf_writer import pdf_bytes
from .test_ingest_dir import fingerprint, write


def filler(topic: str, n: int) -> str:
    return " ".join(f"Paragraph {i} of the {topic} says ordinary things." for i in range(n))


def lines(page: int) -> list[str]:
    return [f"Report page {page}, line {i}: routine figures." for i in range(20)]


def pdf_pages() -> list[list[str] | None]:
    pages: list[list[str] | None] = [
        [f"Report page {p}, line {i}: routine figures." for i in range(20)] for p in range(1, 6)
    ]
    pages[2] = [
        *pages[2][:10],
        "The quokka auditor signed the harbour ledger at dawn.",
        *pages[2][10:],
    ]  # type: ignore[index]
    return pages


def around(sentence: str, topic: str, head: str = "", tail: str = "") -> str:
    """A file's text: a header, filler, `sentence`, more filler."""
    return f"{head}{filler(topic, 12)}\n\n{sentence}\n\n{filler(topic, 12)}\n{tail}"


OKAPI = "The okapi tamer fed a melon to the llama."
ZEPPELIN = "A violet zeppelin drifted over the tannery."
MARMOT = "The marmot registry rejects unsigned parcels."
WALRUS = "Every walrus badge expires after the solstice."
HERON = "The heron & the otter share one canoe."
QUOKKA = "The quokka auditor signed the harbour ledger at dawn."
PELICAN = "The pelican cache evicts stale mackerel tokens."
ARMADILLO = "The armadillo queue drains before each checkpoint."
FLAMINGO = "The flamingo router retries twice on a timeout."

# file name, its contents, its kind, and a sentence from its middle
KINDS: list[tuple[str, str | bytes, DocumentKind, str]] = [
    (
        "notes.md",
        around(f"## Middle\n\n{OKAPI}", "notes", "# Notes\n\n"),
        DocumentKind.MARKDOWN,
        OKAPI,
    ),
    ("plain.txt", around(ZEPPELIN, "letter"), DocumentKind.TEXT, ZEPPELIN),
    (
        "guide.rst",
        around(f"Setup\n-----\n\n{MARMOT}", "guide", "Guide\n=====\n\n"),
        DocumentKind.RST,
        MARMOT,
    ),
    (
        "manual.adoc",
        around(f"== Usage\n\n{WALRUS}", "manual", "= Manual\n\n"),
        DocumentKind.ASCIIDOC,
        WALRUS,
    ),
    (
        "page.html",
        around(
            f"<h2>Rules</h2><p>{HERON.replace('&', '&amp;')}</p><p>",
            "page",
            "<html><head><title>Page</title></head><body><nav>Home | About</nav>"
            "<main><h1>Page</h1><p>",
            "</p></main><footer>Contact</footer></body></html>",
        ),
        DocumentKind.HTML,
        HERON,
    ),
    ("report.pdf", pdf_bytes(pdf_pages()), DocumentKind.PDF, QUOKKA),
    (
        "tool.py",
        f'"""Tools."""\n\n\ndef first() -> int:\n    """{filler("tool", 8)}"""\n    return 1\n\n\n'
        f"def middle() -> str:\n    # {PELICAN}\n    return 'x'\n\n\n"
        f'def last() -> int:\n    """{filler("tool", 8)}"""\n    return 3\n',
        DocumentKind.CODE,
        PELICAN,
    ),
    (
        "server.go",
        f"package server\n\n// {filler('server', 8)}\nfunc First() int {{\n\treturn 1\n}}\n\n"
        f"// {ARMADILLO}\nfunc Middle() int {{\n\treturn 2\n}}\n\n"
        f"// {filler('server', 8)}\nfunc Last() int {{\n\treturn 3\n}}\n",
        DocumentKind.CODE,
        ARMADILLO,
    ),
    (
        "app.js",
        f"// {filler('app', 8)}\nfunction first() {{ return 1; }}\n\n"
        f"// {FLAMINGO}\nfunction middle() {{ return 2; }}\n\n"
        f"// {filler('app', 8)}\nfunction last() {{ return 3; }}\n",
        DocumentKind.CODE,
        FLAMINGO,
    ),
]


@pytest.fixture
def every_kind(tmp_path: Path) -> Path:
    root = tmp_path / "folder"
    for name, contents, _, _ in KINDS:
        write(root / name, contents)
    return root


def opened(tmp_path: Path, clock: FrozenClock, profile: Profile) -> Brain:
    return Brain.open(
        settings=Settings(db=tmp_path / f"{profile}.db", embedder=profile), clock=clock
    )


def page_of(brain: Brain, hit: Hit) -> int | None:
    [chunk] = [c for c in brain.document_chunks(hit.document_id) if c.id == hit.chunk_id]
    page = chunk.meta.get("page")
    return int(page) if page is not None else None


@pytest.mark.parametrize("profile", [Profile.HASHING, Profile.EDGE])
def test_each_kind_is_found_by_a_sentence_from_its_middle(
    every_kind: Path, tmp_path: Path, clock: FrozenClock, profile: Profile
) -> None:
    with opened(tmp_path, clock, profile) as brain:
        report = brain.ingest_dir(every_kind)
        assert report.errors == ()
        assert report.added == len(KINDS)
        for name, _, kind, sentence in KINDS:
            top = brain.search(sentence, k=3)[0]
            assert (Path(top.uri).name, top.kind) == (name, kind)
            assert sentence in top.text.replace("\n", " ")
            assert page_of(brain, top) == (3 if kind is DocumentKind.PDF else None)
            document = brain.get_document(top.document_id)
            assert document.content[top.char_start : top.char_end] == top.text


def test_what_each_kind_stores(every_kind: Path, brain: Brain) -> None:
    brain.ingest_dir(every_kind)
    stored = {
        Path(d.uri).name: d
        for d in (brain.find_document((every_kind / n).as_posix()) for n, *_ in KINDS)
    }
    assert stored["report.pdf"].metadata == {"pages": 5}
    assert stored["tool.py"].metadata == {"language": "python"}
    assert stored["tool.py"].title == "tool.py"
    assert stored["page.html"].content.startswith("Page\n\nParagraph 0 of the page")
    assert (
        "Home" not in stored["page.html"].content and "Contact" not in stored["page.html"].content
    )
    assert stored["guide.rst"].title == "Guide" and stored["manual.adoc"].title == "Manual"
    paths = [c.heading_path for c in brain.document_chunks(stored["server.go"].id)]
    assert paths == [("Go", "func First() int, func Middle() int, func Last() int")]


def test_a_second_run_over_unchanged_files_of_every_kind_makes_no_writes(
    every_kind: Path, brain: Brain, clock: FrozenClock
) -> None:
    brain.ingest_dir(every_kind)
    before = fingerprint(brain.settings.db)
    again = brain.ingest_dir(every_kind)
    assert (again.added, again.updated, again.unchanged, again.chunks) == (0, 0, len(KINDS), 0)
    assert fingerprint(brain.settings.db) == before
    clock.advance(hours=1)
    pages = pdf_pages()
    pages[4] = ["The last page now mentions a narwhal."]
    write(every_kind / "report.pdf", pdf_bytes(pages))
    (every_kind / "page.html").unlink()
    changed = brain.ingest_dir(every_kind)
    assert (changed.added, changed.updated, changed.unchanged, changed.deleted) == (
        0,
        1,
        len(KINDS) - 2,
        1,
    )
    top = brain.search("narwhal")[0]
    assert Path(top.uri).name == "report.pdf" and page_of(brain, top) == 5


@pytest.fixture
def bad_files(every_kind: Path) -> Iterator[Path]:
    from pypdf import PdfReader, PdfWriter

    locked = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes([["secret figures"]]))))
    locked.encrypt("password", algorithm="RC4-128")
    out = io.BytesIO()
    locked.write(out)
    write(every_kind / "bad" / "locked.pdf", out.getvalue())
    write(every_kind / "bad" / "scan.pdf", pdf_bytes([None, None, None]))
    write(every_kind / "bad" / "torn.pdf", pdf_bytes([["cut short"]])[:200])
    write(every_kind / "bad" / "scripts.html", "<html><head><script>let a = '<p>no text</p>'")
    write(every_kind / "bad" / "latin.html", b"<p>caf\xe9 without a charset</p>")
    write(every_kind / "bad" / "image.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    write(every_kind / "bad" / "latin.txt", "caf\xe9".encode("latin-1"))
    write(every_kind / "bad" / "empty.rst", "")
    write(every_kind / "bad" / "blank.adoc", "\n  \n")
    write(every_kind / "bad" / "core.py", b"def f():\x00\x00")
    yield every_kind


def test_files_that_cannot_be_read_are_skipped_with_a_reason_and_the_rest_ingests(
    bad_files: Path, brain: Brain
) -> None:
    report = brain.ingest_dir(bad_files)
    reasons = {Path(p.path).name: p.reason for p in report.errors}
    assert "encrypted and needs a password" in reasons.pop("locked.pdf")
    assert "no text layer: scanned? OCR it first" in reasons.pop("scan.pdf")
    assert "cannot read this PDF" in reasons.pop("torn.pdf")
    assert "has no text to index" in reasons.pop("scripts.html")
    assert "not valid utf-8" in reasons.pop("latin.html")
    assert "NUL bytes" in reasons.pop("image.txt")
    assert "not valid UTF-8" in reasons.pop("latin.txt")
    assert "empty" in reasons.pop("empty.rst") and "empty" in reasons.pop("blank.adoc")
    assert "NUL bytes" in reasons.pop("core.py")
    assert reasons == {}
    assert all(p.path.startswith(bad_files.as_posix()) for p in report.errors)
    assert report.added == len(KINDS)
    assert all("secret" not in h.text for h in brain.search("secret figures"))


def test_without_pypdf_pdfs_are_skipped_with_the_extra_to_install(
    every_kind: Path, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pypdf", None)  # what an install without the extra has
    report = brain.ingest_dir(every_kind)
    assert [(Path(p.path).name, p.reason) for p in report.errors] == [
        ("report.pdf", "install nexusbrain[pdf] to read PDF files")
    ]
    assert report.added == len(KINDS) - 1


def test_a_text_file_stored_as_markdown_before_is_read_again_as_text(
    tmp_path: Path, brain: Brain
) -> None:
    source = "# water the plants first\n\nthen the garden\n"
    path = write(tmp_path / "todo" / "list.txt", source)
    old = brain.ingest_markdown(source, uri=path.as_posix())  # as ingest-dir stored .txt before
    assert [c.heading_path for c in brain.document_chunks(old.document_id)] == [
        ("water the plants first",)
    ]
    report = brain.ingest_dir(path.parent)
    assert (report.updated, report.unchanged) == (1, 0)
    document = brain.find_document(path.as_posix())
    assert document.kind is DocumentKind.TEXT
    assert [c.heading_path for c in brain.document_chunks(document.id)] == [()]
    assert brain.ingest_dir(path.parent).unchanged == 1


def test_only_markdown_states_graph_edges(tmp_path: Path, brain: Brain) -> None:
    folder = tmp_path / "mixed"
    write(folder / "check.sh", '#!/bin/bash\nif [[ -f "$1" ]]; then\n  echo found\nfi\n')
    write(folder / "anchors.adoc", "= Anchors\n\n[[setup]]\n== Setup\n\nSee <<setup>>.\n")
    write(folder / "note.md", "# Note\n\nAsk [[Bob]] about it.\n")
    assert brain.ingest_dir(folder).added == 3
    assert [r.to_name for r in brain.graph.relations("Note")] == ["Bob"]
    for title in ("check.sh", "Anchors", '-f "$1"', "setup"):
        with pytest.raises(NotFound):
            brain.graph.entity(title)


def test_vendored_folders_are_skipped(tmp_path: Path, brain: Brain) -> None:
    folder = tmp_path / "project"
    write(folder / "src" / "main.js", "function main() { return 'the capybara'; }\n")
    write(folder / "node_modules" / "left-pad" / "index.js", "module.exports = 'the capybara';\n")
    write(folder / "venv" / "pyvenv.cfg", "home = /usr/bin\n")
    write(folder / "venv" / "lib" / "site.py", "CAPYBARA = 'the capybara'\n")
    report = brain.ingest_dir(folder)
    assert (report.added, report.errors) == (1, ())
    assert [Path(h.uri).name for h in brain.search("capybara")] == ["main.js"]


def test_the_watch_follows_every_kind_ingest_reads() -> None:
    keep = NotesFilter()
    for name in ("a.md", "a.txt", "a.rst", "a.adoc", "a.html", "a.pdf", "a.py", "a.go"):
        assert keep(Change.added, f"/folder/{name}"), name
    assert not keep(Change.added, "/folder/a.png")
    assert not keep(Change.modified, "/folder/brain.db-wal")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_kinds_pages_and_spans_are_kept_by_either_backend(
    request: pytest.FixtureRequest,
    every_kind: Path,
    tmp_path: Path,
    clock: FrozenClock,
    backend: str,
) -> None:
    db = request.getfixturevalue("postgres_url") if backend == "postgres" else tmp_path / "b.db"
    with Brain.open(settings=Settings(db=db, embedder=Profile.HASHING), clock=clock) as brain:
        brain.ingest_dir(every_kind)
        for name, _, kind, sentence in KINDS:
            top = brain.search(sentence, k=3)[0]
            assert (Path(top.uri).name, top.kind) == (name, kind)
            content = brain.get_document(top.document_id).content
            assert content[top.char_start : top.char_end] == top.text
        assert page_of(brain, brain.search(QUOKKA)[0]) == 3
        exported = [r for r in brain.admin.export() if r["type"] == "chunk" and r["meta"]]
        assert {r["meta"]["page"] for r in exported} == {1, 2, 3, 4, 5}
