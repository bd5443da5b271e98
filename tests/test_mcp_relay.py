"""`nexusbrain mcp` relays to a running `serve --mcp` for the same database: the MCP SDK's own
client over stdio, a real relay process and a real server, and the relay loads no brain."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from nexusbrain import discovery
from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings

from .test_cli_client import HEAVY, environment, start, stop
from .test_mcp import MEMORIES, TOOLS, call, fail

PYTHON = sys.executable


def relay_process(db: Path, **env: str) -> StdioServerParameters:
    """`nexusbrain mcp` under -X importtime; BRAIN_EMBEDDER=edge shows up if it ran its own."""
    return StdioServerParameters(
        command=PYTHON,
        args=["-X", "importtime", "-m", "nexusbrain", "--db", str(db), "mcp"],
        env=environment(**({"BRAIN_EMBEDDER": "edge"} | env)),
    )


def imported(errlog: Path) -> set[str]:
    lines = errlog.read_text().splitlines()
    return {line.split("|")[-1].strip() for line in lines if line.startswith("import time:")}


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def run(params: StdioServerParameters, errlog: Path, scenario: Any) -> None:
    async def main() -> None:
        with errlog.open("w") as log:
            async with Client(stdio_client(params, errlog=log)) as client:
                await scenario(client)

    anyio.run(main)


@pytest.fixture
def mcp_server(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    db = tmp_path / "brain.db"
    with Brain.open(settings=Settings(db=db, embedder=Profile.HASHING)) as brain:
        brain.add_memory(MEMORIES[0], tags=["ops"])
    process = start(db, "--mcp")
    url = discovery.find(db).url  # type: ignore[union-attr]
    yield db, url
    stop(process)


def test_the_relay_answers_from_the_running_server(
    mcp_server: tuple[Path, str], tmp_path: Path
) -> None:
    db, url = mcp_server

    async def scenario(client: Client) -> None:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        assert "recall" in (client.instructions or "")
        stored = await call(client, "remember", text=MEMORIES[1], tags=["people"])
        assert stored["status"] == "created"
        again = await call(client, "remember", text=MEMORIES[0])
        assert again["status"] == "duplicate"
        found = await call(client, "search", query="who prefers tea", k=3)
        over_rest = httpx.get(f"{url}/search", params={"q": "who prefers tea", "k": 3}).json()
        assert found == over_rest  # the server's brain, the server's answer
        assert found["hits"][0]["document_id"] == stored["id"]
        recall = await call(client, "recall", query="staging database", budget_tokens=40)
        assert recall["hits"][0]["text"] == MEMORIES[0]
        assert await fail(client, "get_document", id=999) == "no document with id 999"
        doc = await client.read_resource(f"nexusbrain://doc/{stored['id']}")
        assert doc.contents[0].text == MEMORIES[1]  # type: ignore[union-attr]

    errlog = tmp_path / "relay.log"
    run(relay_process(db), errlog, scenario)
    assert heavy(imported(errlog)) == [], "the relay loaded a brain of its own"
    assert httpx.get(f"{url}/stats").json()["documents"] == 2


def test_without_a_server_serving_mcp_the_command_serves_its_own_brain(tmp_path: Path) -> None:
    db = tmp_path / "brain.db"
    with Brain.open(settings=Settings(db=db, embedder=Profile.HASHING)) as brain:
        brain.add_memory(MEMORIES[2])
    process = start(db)  # no --mcp: nothing to relay to

    async def scenario(client: Client) -> None:
        found = await call(client, "search", query="why did the deploy fail", k=1)
        assert found["hits"][0]["text"] == MEMORIES[2]

    errlog = tmp_path / "local.log"
    try:
        run(relay_process(db, BRAIN_EMBEDDER="hashing"), errlog, scenario)
    finally:
        stop(process)
    assert "mcp" in imported(errlog) and "numpy" in imported(errlog)
