"""The MCP server, driven by the MCP SDK's own client: a real `nexusbrain mcp` subprocess over
stdio, and streamable HTTP at /mcp on a real server on loopback, beside the REST API."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
import uvicorn
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent

from nexusbrain.api import create_app
from nexusbrain.brain import Brain
from nexusbrain.clock import FrozenClock
from nexusbrain.config import Profile, ServerSettings, Settings
from nexusbrain.mcp_server import tools as mcp_tools
from nexusbrain.mcp_server.http import mount_mcp
from nexusbrain.retrieval.tokens import count_tokens

from .conftest import free_port
from .test_api import assert_error
from .test_dates import store_two_days

TOOLS = {
    "search",
    "recall",
    "remember",
    "get_document",
    "list_documents",
    "list_sources",
    "get_source",
    "graph_relations",
    "graph_history",
    "graph_add",
    "status",
}
NEXUSBRAIN = str(Path(sys.executable).with_name("nexusbrain"))
TOKEN = "s3cret-token"
MEMORIES = [
    "The staging database moved to db-2 on 2025-03-01.",
    "Alice prefers tea over coffee in the morning.",
    "The deploy failed because the migration timed out on the orders table.",
    "Rotate the API keys every 90 days; the vault holds the current ones.",
    "The quarterly review moved from Friday to Thursday afternoon.",
]

Scenario = Callable[[Client], Awaitable[None]]


def stdio(db: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=NEXUSBRAIN, args=["--db", str(db), "mcp", *args], env={"BRAIN_EMBEDDER": "hashing"}
    )


def readme_config(db: Path) -> StdioServerParameters:
    """The mcpServers block of the README's tour (docs/mcp.md shows the same one), as a client
    would run it, on a scratch database."""
    root = Path(__file__).parents[1]
    pages = [(root / name).read_text(encoding="utf-8") for name in ("README.md", "docs/mcp.md")]
    blocks = [re.findall(r'```json\n(\{\s*"mcpServers".*?)```', page, re.S) for page in pages]
    assert blocks[0] == blocks[1] and len(blocks[0]) == 1
    entry = json.loads(blocks[0][0])["mcpServers"]["nexusbrain"]
    assert entry["command"] == "nexusbrain"
    args = [str(db) if arg == "/path/to/brain.db" else arg for arg in entry["args"]]
    return StdioServerParameters(command=NEXUSBRAIN, args=args, env={"BRAIN_EMBEDDER": "hashing"})


def run_client(server: Any, scenario: Scenario, **options: Any) -> None:
    async def main() -> None:
        async with Client(server, **options) as client:
            await scenario(client)

    anyio.run(main)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A successful tool call's structured answer."""
    result = await client.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return result.structured_content


async def fail(client: Client, tool: str, **arguments: Any) -> str:
    """A tool error's message, checked to come in HTTP's error shape too."""
    result = await client.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    assert result.is_error
    message = text_of(result)
    assert result.structured_content is not None
    assert result.structured_content["error"]["message"] == message
    return message


def text_of(result: Any) -> str:
    [content] = result.content
    assert isinstance(content, TextContent)
    return content.text


# stdio: a real subprocess


def test_readme_config_lists_the_tools_and_the_document_template(tmp_path: Path) -> None:
    async def scenario(client: Client) -> None:
        assert "recall" in (client.instructions or "")
        tools = (await client.list_tools()).tools
        assert {t.name for t in tools} == TOOLS
        for tool in tools:
            assert tool.description and tool.input_schema["type"] == "object"
            assert "$ref" not in json.dumps(tool.input_schema)  # inlined for every client
        by_name = {t.name: t for t in tools}
        assert by_name["search"].input_schema["required"] == ["query"]
        modes = by_name["search"].input_schema["properties"]["mode"]
        assert modes["enum"] == ["conservative", "balanced", "tokenmax"]
        assert modes["default"] == "balanced"
        assert by_name["graph_add"].input_schema["properties"]["relationships"]["items"][
            "required"
        ] == ["from", "type", "to"]
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["nexusbrain://doc/{id}"]

    run_client(readme_config(tmp_path / "brain.db"), scenario)


def test_stdio_remember_then_search_recall_and_read(tmp_path: Path) -> None:
    async def scenario(client: Client) -> None:
        stored = [await call(client, "remember", text=m, tags=["ops"]) for m in MEMORIES]
        assert [s["status"] for s in stored] == ["created"] * len(MEMORIES)
        again = await call(client, "remember", text=MEMORIES[0])
        assert (again["status"], again["id"]) == ("duplicate", stored[0]["id"])

        found = await call(client, "search", query="where did the staging database move", k=3)
        assert found["hits"][0]["document_id"] == stored[0]["id"]
        assert found["hits"][0]["trace"]["retrievers"]  # the answer explains itself

        budget = 30
        recall = await call(
            client, "recall", query="database deploy keys review", budget_tokens=budget
        )
        kept = recall["hits"]
        assert kept and recall["left_out"] > 0
        assert recall["tokens_used"] == sum(count_tokens(h["text"]) for h in kept) <= budget
        text = text_of(await client.call_tool("recall", {"query": "staging database"}))
        first = found["hits"][0]  # a memory is cited as `get_document` takes it, and its tags
        cited = f"[1] memory {stored[0]['id']}, tagged ops (revision {first['revision'][:12]})"
        assert cited in text
        assert MEMORIES[0] in text

        doc = await client.read_resource(f"nexusbrain://doc/{stored[0]['id']}")
        assert doc.contents[0].text == MEMORIES[0]  # type: ignore[union-attr]
        note = await call(client, "remember", text="Steps:\n1. drain\n2. migrate\n3. resume")
        part = await call(client, "get_document", id=note["id"], line_start=2, line_end=3)
        assert part["content"] == "1. drain\n2. migrate"
        assert part["lines"] == {"start": 2, "end": 3, "total": 4}
        whole = await call(client, "get_document", path=first["uri"])
        assert whole["content"] == MEMORIES[0] and "lines" not in whole
        assert await fail(client, "get_document", id=note["id"], line_start=9) == (
            f"line_start=9 is past the end of document {note['id']}, which has 4 lines"
        )
        assert await fail(client, "get_document", id=note["id"], line_start=3, line_end=2) == (
            "line_end=2 is before line_start=3"
        )

    run_client(stdio(tmp_path / "brain.db"), scenario)


def test_stdio_bad_arguments_are_tool_errors_and_the_server_stays_up(tmp_path: Path) -> None:
    async def scenario(client: Client) -> None:
        assert await fail(client, "search", query="deploy", k=0) == (
            "k: Input should be greater than or equal to 1"
        )
        assert await fail(client, "search", query="   ") == (
            "query is empty: give some words to search for"
        )
        assert await fail(client, "recall", query="x", mode="fast") == (
            "mode: Input should be 'conservative', 'balanced' or 'tokenmax'"
        )
        assert "Extra inputs" in await fail(client, "remember", text="x", colour="red")
        assert await fail(client, "get_document", id=42) == "no document with id 42"
        assert "not both" in await fail(client, "get_document", id=1, path="a.md")
        assert await fail(client, "graph_history", relationship_id=9) == (
            "no relationship with id 9"
        )
        assert "no tool named 'forget'" in await fail(client, "forget")
        with pytest.raises(MCPError, match="no document with id 7"):
            await client.read_resource("nexusbrain://doc/7")
        assert (await call(client, "status"))["documents"] == 0  # still answering

    run_client(stdio(tmp_path / "brain.db"), scenario)


def test_stdio_stdout_carries_only_protocol(tmp_path: Path) -> None:
    """A legacy-handshake client, debug logging on: every stdout line is a JSON-RPC message and
    the logs went to stderr."""
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "remember", "arguments": {"text": "the printer is on floor 3"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": ""}},
        },
    ]
    env = {**os.environ, "BRAIN_EMBEDDER": "hashing"}
    args = [NEXUSBRAIN, "--db", str(tmp_path / "b.db"), "mcp", "--log-level", "debug"]
    with subprocess.Popen(
        args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as server:
        watchdog = threading.Timer(60, server.kill)
        watchdog.start()
        assert server.stdin and server.stdout and server.stderr
        server.stdin.write(b"".join(json.dumps(r).encode() + b"\n" for r in requests))
        server.stdin.flush()
        replies: list[dict[str, Any]] = []
        while len([r for r in replies if "id" in r]) < 3:
            replies.append(json.loads(server.stdout.readline()))  # stdout: JSON-RPC, only
        server.stdin.close()  # the client is done: the server ends
        rest = server.stdout.read()
        stderr = server.stderr.read().decode()
        watchdog.cancel()
    assert server.returncode == 0, stderr
    assert rest == b""
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    answers = {r["id"]: r["result"] for r in replies if "id" in r}
    assert answers[1]["serverInfo"]["name"] == "nexusbrain"
    assert answers[2]["structuredContent"]["status"] == "created"
    assert answers[3]["isError"] is True
    assert "DEBUG" in stderr  # the logs exist, and they are not on stdout


# streamable HTTP: /mcp on a real server beside the REST API


@contextmanager
def serve_mcp(brain: Brain, token: str | None = None) -> Iterator[str]:
    settings = ServerSettings(port=free_port(), token=token)
    app = create_app(brain, settings)
    mount_mcp(app, brain, settings)
    config = uvicorn.Config(
        app, host=settings.host, port=settings.port, log_level="warning", access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "test server did not start"
        time.sleep(0.01)
    try:
        yield f"http://{settings.host}:{settings.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def second_brain(tmp_path: Path, clock: FrozenClock) -> Brain:
    """Another brain on the same frozen instant: the same writes get the same ids and times."""
    twin = FrozenClock(clock())
    return Brain.open(
        settings=Settings(db=tmp_path / "twin.db", embedder=Profile.HASHING), clock=twin
    )


JOBS = [
    {"from": "alice", "type": "works_at", "to": "acme", "valid_at": "2020-01-01"},
    {"from": "alice", "type": "manages", "to": "bob", "valid_at": "2021-06-01"},
]
MOVE = [{"from": "alice", "type": "works_at", "to": "globex", "valid_at": "2024-03-01"}]


def test_http_graph_tools_answer_as_the_graph_routes(
    brain: Brain, tmp_path: Path, clock: FrozenClock
) -> None:
    twin = second_brain(tmp_path, clock)
    with serve_mcp(brain) as url, serve_mcp(twin) as twin_url, httpx.Client(base_url=url) as http:
        rest = httpx.Client(base_url=twin_url)

        async def scenario(client: Client) -> None:
            for batch in (JOBS, MOVE):
                added = await call(client, "graph_add", relationships=batch)
                assert added == rest.post("/ingest", json={"relationships": batch}).json()
            moved = added["relationships"][0]
            assert moved["retired"][0]["reason"] == "contradicted"

            for query, params in [
                ({"entity": "alice"}, {"from": "alice"}),
                ({"entity": "bob", "direction": "incoming"}, {"to": "bob"}),
                (
                    {"entity": "alice", "type": "works_at", "as_of_valid": "2022-01-01"},
                    {"from": "alice", "type": "works_at", "as_of_valid": "2022-01-01"},
                ),
            ]:
                relations = await call(client, "graph_relations", **query)
                assert relations == http.get("/graph/relations", params=params).json()
            assert [r["to"] for r in relations["relationships"]] == ["acme"]

            old = moved["retired"][0]["id"]  # alice works_at acme, cut short by the move
            history = await call(client, "graph_history", relationship_id=old)
            assert history == http.get(f"/graph/relationships/{old}/history").json()
            assert [v["reason"] for v in history["versions"]] == ["contradicted", None]
            assert history["current"]["invalid_at"].startswith("2024-03-01")

            message = await fail(client, "graph_relations", entity="carol")
            assert (
                message
                == assert_error(
                    http.get("/graph/relations", params={"from": "carol"}), 404, "not_found"
                )["message"]
            )
            bad = [{"from": "alice", "type": "manages", "to": "bob", "valid_at": "soon"}]
            message = await fail(client, "graph_add", relationships=bad)
            assert (
                message
                == assert_error(
                    http.post("/ingest", json={"relationships": bad}), 400, "invalid_input"
                )["message"]
            )

        try:
            run_client(f"{url}/mcp", scenario)
        finally:
            rest.close()
            twin.close()


def test_http_search_recall_and_documents_answer_as_rest(brain: Brain) -> None:
    for memory in MEMORIES:
        brain.add_memory(memory)
    with serve_mcp(brain) as url, httpx.Client(base_url=url) as http:

        async def scenario(client: Client) -> None:
            found = await call(client, "search", query="deploy migration", k=2)
            assert found == http.get("/search", params={"q": "deploy migration", "k": 2}).json()
            # some clients send objects and lists as JSON text
            scoped = await call(client, "search", query="deploy", filters='{"domain": "default"}')
            assert scoped["hits"] and scoped == await call(
                client, "search", query="deploy", filters={"domain": "default"}
            )
            body = {"query": "staging database", "budget_tokens": 20, "mode": "conservative"}
            assert await call(client, "recall", **body) == http.post("/recall", json=body).json()
            doc = await call(client, "get_document", id=1, chunks=True)
            assert doc == http.get("/documents/1", params={"chunks": "true"}).json()
            stored = await call(
                client, "remember", text="The printer is on floor 3.", tags='["office"]'
            )
            printer = http.get(f"/documents/{stored['id']}").json()
            assert (printer["content"], printer["metadata"]["tags"]) == (
                "The printer is on floor 3.",
                ["office"],
            )
            message = await fail(client, "recall", query="x", budget_tokens=10**9)
            rest = http.post("/recall", json={"query": "x", "budget_tokens": 10**9})
            assert message == assert_error(rest, 400, "invalid_input")["message"]

        run_client(f"{url}/mcp", scenario)


@contextmanager
def serve_command(db: Path, *args: str, token: str | None = None) -> Iterator[str]:
    """A real `nexusbrain serve` child process on a free loopback port."""
    port = free_port()
    env = {**os.environ, "BRAIN_EMBEDDER": "hashing", "BRAIN_API_TOKEN": token or ""}
    command = [NEXUSBRAIN, "--db", str(db), "serve", "--port", str(port), *args]
    url = f"http://127.0.0.1:{port}"
    log = db.with_suffix(".log")
    with log.open("wb") as stderr, subprocess.Popen(command, env=env, stderr=stderr) as server:
        try:
            deadline = time.monotonic() + 30
            while True:
                assert server.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "nexusbrain serve did not start"
                try:
                    httpx.get(f"{url}/health")
                    break
                except httpx.TransportError:
                    time.sleep(0.05)
            yield url
        finally:
            server.terminate()
            server.wait(timeout=10)


def test_recall_tells_the_agent_a_passage_was_said_on_the_day_asked(brain: Brain) -> None:
    store_two_days(brain)
    args = {"query": "What dish did Nate cook on 9 November, 2022?", "k": 1}
    text = mcp_tools.answer("recall", brain, args).text
    assert text is not None and "(said on 2022-11-09, as asked)" in text.split("\n\n")[1]
    undated = mcp_tools.answer("recall", brain, {"query": "What dish did Nate cook?"}).text
    assert undated is not None and "said on" not in undated


def test_serve_mcp_flag_sits_behind_the_api_token(tmp_path: Path) -> None:
    with serve_command(tmp_path / "brain.db", "--mcp", token=TOKEN) as url:
        refused = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert_error(refused, 401, "unauthorized")

        async def main() -> None:
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with httpx2.AsyncClient(headers=headers) as http:
                transport = streamable_http_client(f"{url}/mcp", http_client=http)
                async with Client(transport, mode="legacy") as client:
                    assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                    stored = await call(client, "remember", text="the door code is 4711")
            rest = httpx.get(f"{url}/documents/{stored['id']}", headers=headers)
            assert rest.json()["content"] == "the door code is 4711"

        anyio.run(main)
