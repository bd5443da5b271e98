"""A PDF hit names its page on every interface: `page` in the JSON of HTTP, MCP and the
command line, ", page 3" after its place in the CLI's lines and in recall's citations; `get`
shows the page of each chunk and of the lines asked for; MCP labels only markdown as markdown."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp_types import TextContent, TextResourceContents

from nexusbrain.api import create_app
from nexusbrain.brain import Brain
from nexusbrain.cli.main import cli
from nexusbrain.clock import FrozenClock
from nexusbrain.config import ServerSettings, Settings
from nexusbrain.mcp_server.http import mount_mcp

from .conftest import free_port, start_server
from .test_formats_ingest import KINDS, QUOKKA
from .test_ingest_dir import write

ENV = {"BRAIN_EMBEDDER": "hashing", "BRAIN_DB_URL": None}


@dataclass
class Served:
    brain: Brain
    url: str
    db: Path
    folder: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("pages")
    folder = root / "folder"
    for name, contents, _, _ in KINDS:
        write(folder / name, contents)
    settings = Settings.from_env(root / "brain.db", environ={"BRAIN_EMBEDDER": "hashing"})
    with Brain.open(
        settings=settings, clock=FrozenClock(datetime(2026, 1, 2, tzinfo=UTC))
    ) as brain:
        assert brain.ingest_dir(folder).errors == ()
        server_settings = ServerSettings(port=free_port())
        app = create_app(brain, server_settings)
        mount_mcp(app, brain, server_settings)
        server, thread = start_server(brain, server_settings, app)
        try:
            url = f"http://{server_settings.host}:{server_settings.port}"
            yield Served(brain, url, root / "brain.db", folder.resolve())
        finally:
            server.should_exit = True
            thread.join(timeout=10)


def command(served: Served, line: str, *, local: bool) -> str:
    where = ["--local", "--db", str(served.db)] if local else []
    env = ENV | {"BRAIN_URL": None if local else served.url}
    result = CliRunner().invoke(cli, [*where, *shlex.split(line)], env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def tool(served: Served, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    answers: list[Any] = []

    async def session() -> None:
        async with Client(f"{served.url}/mcp") as client:
            for name, arguments in calls:
                answers.append(await client.call_tool(name, arguments))

    anyio.run(session)
    return answers


def test_a_pdf_hit_names_its_page_on_every_interface(served: Served) -> None:
    pdf = (served.folder / "report.pdf").as_posix()
    over_http = httpx.get(f"{served.url}/search", params={"q": QUOKKA, "k": 1}).json()["hits"]
    assert [(h["uri"], h["page"]) for h in over_http] == [(pdf, 3)]
    for local in (False, True):
        said = json.loads(command(served, f"search '{QUOKKA}' -k 1 --json", local=local))
        assert said["hits"] == over_http
        first = command(served, f"search '{QUOKKA}' -k 1", local=local).splitlines()[1]
        span = over_http[0]["span"]
        assert first.startswith(f"  1. {pdf}:{span['line_start']}-{span['line_end']}, page 3")
        recalled = command(served, f"recall '{QUOKKA}' -k 1", local=local)
        assert f"[1] {pdf}:{span['line_start']}-{span['line_end']}, page 3 (revision" in recalled
    searched, recalled = tool(
        served, ("search", {"query": QUOKKA, "k": 1}), ("recall", {"query": QUOKKA, "k": 1})
    )
    assert searched.structured_content["hits"] == over_http
    [text] = recalled.content
    assert isinstance(text, TextContent) and ", page 3 (revision" in text.text
    assert recalled.structured_content["hits"][0]["page"] == 3


def test_a_hit_of_any_other_kind_has_no_page(served: Served) -> None:
    for name, _, _, sentence in KINDS:
        if name != "report.pdf":
            [hit] = httpx.get(f"{served.url}/search", params={"q": sentence, "k": 1}).json()["hits"]
            assert (Path(hit["uri"]).name, hit["page"]) == (name, None)
            assert ", page " not in command(served, f"search '{sentence}' -k 1", local=False)


def test_get_shows_the_page_of_each_chunk_and_of_the_lines_asked_for(served: Served) -> None:
    pdf = (served.folder / "report.pdf").as_posix()
    chunks = command(served, f"get {pdf} --chunks", local=False)
    pages = [
        line.split(":")[1].split(",")[0].strip()
        for line in chunks.splitlines()
        if line.startswith("  chunk ")
    ]
    assert pages and pages == sorted(pages) and "page 3" in pages and "page 1" in pages
    [hit] = httpx.get(f"{served.url}/search", params={"q": QUOKKA, "k": 1}).json()["hits"]
    start, end = hit["span"]["line_start"], hit["span"]["line_end"]
    for local in (False, True):
        head = command(served, f"get {pdf} --lines {start}-{end}", local=local).splitlines()[1]
        assert head.endswith("  page 3"), head
    every = command(served, f"get {pdf} --lines 1-1000", local=True).splitlines()[1]
    assert every.endswith("  pages 1-5"), every
    [answer] = tool(served, ("get_document", {"path": pdf, "line_start": start, "line_end": end}))
    assert answer.structured_content["lines"]["pages"] == [3]
    markdown = (served.folder / "notes.md").as_posix()
    [note] = tool(served, ("get_document", {"path": markdown, "line_start": 1, "line_end": 2}))
    assert "pages" not in note.structured_content["lines"]


def test_mcp_labels_only_markdown_as_markdown(served: Served) -> None:
    kinds: dict[str, tuple[str | None, Any]] = {}

    async def session() -> None:
        async with Client(f"{served.url}/mcp") as client:
            for name, *_ in KINDS:
                found = served.brain.find_document((served.folder / name).as_posix())
                read = await client.read_resource(f"nexusbrain://doc/{found.id}")
                [contents] = read.contents
                assert isinstance(contents, TextResourceContents)
                assert contents.text == found.content
                kinds[name] = (contents.mime_type, (contents.meta or {}).get("kind"))

    anyio.run(session)
    assert kinds["notes.md"] == ("text/markdown", "markdown")
    assert kinds["report.pdf"] == ("text/plain", "pdf")
    assert {mime for name, (mime, _) in kinds.items() if name != "notes.md"} == {"text/plain"}
