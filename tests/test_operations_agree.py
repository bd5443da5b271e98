"""Contract: every operation that more than one interface offers gives the same answer to the
same question over HTTP, over the command line with a server up (its remote path: the server
answers), over the command line in process (--local) and over MCP where it has a tool.

Answers are compared whole, errors by their message. The differences allowed are named where
they are allowed: the memory use of the process that answers `stats`, the server's own status
that HTTP adds to it, how long a model took to answer `models check`, and the time a write by
the command line in process is stamped with (the served brains share a frozen clock; the
command line opens the brain with the real one). The
command line retires a document in process even with a server up: it takes a path, which the
server cannot resolve, and DELETE takes an id.

Questions are asked of one served brain. A write changes what the next one answers, so each
interface writes to a twin of its own: brains built the same way, on the same frozen instant,
so that the same writes give the same ids and times."""

from __future__ import annotations

import contextlib
import json
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp_types import CallToolResult, TextContent

from nexusbrain.api import create_app
from nexusbrain.brain import Brain
from nexusbrain.cli.main import cli
from nexusbrain.clock import FrozenClock
from nexusbrain.config import ServerSettings, Settings
from nexusbrain.graph.model import inputs_from_json
from nexusbrain.mcp_server.http import mount_mcp
from nexusbrain.operations import OPERATIONS

from .conftest import free_port, start_server

NOTES = {
    "deploy.md": "# Deploy\n\nThe deploy failed: the signing key expired.\n\n## Fix\n\n"
    "Rotate the key in the vault, then [[Vault]] redeploys.\n",
    "vault.md": "# Vault\n\nThe vault holds the signing key and the api tokens.\n",
    "ops/oncall.md": "# Oncall\n\nAlice is on call this week; Bob the next.\n",
}
FACTS = {
    "entities": [{"name": "Alice", "type": "person", "aliases": ["Al"]}],
    "relationships": [
        {"from": "Alice", "type": "manages", "to": "Bob", "valid_at": "2020-01-01"},
        {"from": "Bob", "type": "manages", "to": "Carol", "valid_at": "2021-01-01"},
        {"from": "Alice", "type": "manages", "to": "Bob", "valid_at": "2021-06-01"},
        {"from": "Carol", "type": "works_at", "to": "Initech", "valid_at": "2019-05-01"},
    ],
}
ENVIRONMENT = {"BRAIN_EMBEDDER": "hashing", "BRAIN_URL": None, "BRAIN_DB_URL": None}
Answer = tuple[str, Any]  # ("ok", the JSON view) or ("error", the message)


@dataclass
class Served:
    """A brain on its own folder, served over HTTP with MCP at /mcp."""

    brain: Brain
    root: Path
    url: str

    @property
    def db(self) -> Path:
        return self.root / "brain.db"


@contextlib.contextmanager
def serve_twin(root: Path) -> Iterator[Served]:
    notes = root / "notes"
    for name, text in NOTES.items():
        (notes / name).parent.mkdir(parents=True, exist_ok=True)
        (notes / name).write_text(text, encoding="utf-8")
    clock = FrozenClock(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    settings = Settings.from_env(root / "brain.db", environ={"BRAIN_EMBEDDER": "hashing"})
    with Brain.open(settings=settings, clock=clock) as brain:
        brain.sources.add(notes, name="notes")  # ingest-dir, and a source to list
        brain.add_memory("Alice prefers tea in the morning", tags=("people",))
        brain.graph.ingest(*inputs_from_json(FACTS))
        brain.admin.refresh_index()
        server_settings = ServerSettings(port=free_port())
        app = create_app(brain, server_settings)
        mount_mcp(app, brain, server_settings)
        server, thread = start_server(brain, server_settings, app)
        url = f"http://{server_settings.host}:{server_settings.port}"
        httpx.get(f"{url}/stats")  # the first moves the database's size: what it writes
        try:
            yield Served(brain, root, url)
        finally:
            server.should_exit = True
            thread.join(timeout=10)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serve_twin(tmp_path_factory.mktemp("agree")) as twin:
        yield twin


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Served]]:
    """One twin for each interface that writes: HTTP, the command line's remote path, the
    command line in process, MCP."""
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(serve_twin(tmp_path_factory.mktemp(f"twin{n}"))) for n in range(4)
        ]


@dataclass(frozen=True)
class Ask:
    """One question as each interface asks it (None: that interface does not offer it)."""

    name: str
    http: tuple[str, str, dict[str, Any]] | None
    cli: str | None  # the command's words, as a shell splits them
    mcp: tuple[str, dict[str, Any]] | None = None
    remote: bool = True  # the command line sends it to the server when one is up
    differ: tuple[str, ...] = ()  # keys left out of the comparison: see the module's doc


def get(path: str, **params: Any) -> tuple[str, str, dict[str, Any]]:
    return ("GET", path, {"params": params})


def post(path: str, body: Any, **params: Any) -> tuple[str, str, dict[str, Any]]:
    return ("POST", path, {"json": body, "params": params})


READS = [
    Ask(
        "search",
        get("/search", q="signing key"),
        "search 'signing key'",
        ("search", {"query": "signing key"}),
    ),
    Ask(
        "search with options",
        get("/search", q="key", k=2, mode="tokenmax", domain="default", best_per_document="true"),
        "search key -k 2 --mode tokenmax --domain default --best-per-document",
        (
            "search",
            {
                "query": "key",
                "k": 2,
                "mode": "tokenmax",
                "filters": {"domain": "default"},
                "best_per_document": True,
            },
        ),
    ),
    Ask(
        "search by path prefix and document",
        get("/search", q="key", mode="conservative", path_prefix="/", document_id=2),
        "search key --mode conservative --path-prefix / --document 2",
        (
            "search",
            {
                "query": "key",
                "mode": "conservative",
                "filters": {"path_prefix": "/", "document_id": 2},
            },
        ),
    ),
    Ask(
        "search with nothing to search for",
        get("/search", q=" "),
        "search ' '",
        ("search", {"query": " "}),
    ),
    Ask(
        "recall",
        post("/recall", {"query": "what holds the signing key"}),
        "recall 'what holds the signing key'",
        ("recall", {"query": "what holds the signing key"}),
    ),
    Ask(
        "recall with a budget",
        post("/recall", {"query": "signing key", "k": 3, "budget_tokens": 40, "mode": "tokenmax"}),
        "recall 'signing key' -k 3 --budget 40 --mode tokenmax",
        ("recall", {"query": "signing key", "k": 3, "budget_tokens": 40, "mode": "tokenmax"}),
    ),
    Ask(
        "recall over budget",
        post("/recall", {"query": "signing key", "budget_tokens": 10**9}),
        f"recall 'signing key' --budget {10**9}",
        ("recall", {"query": "signing key", "budget_tokens": 10**9}),
    ),
    Ask(
        "explain by id",
        get("/explain", q="signing key", doc="2", mode="conservative"),
        "explain 'signing key' 2 --mode conservative",
    ),
    Ask(
        "explain with filters",
        get("/explain", q="key", doc="1", k=1, best_per_document="true", path_prefix="/x"),
        "explain key 1 -k 1 --best-per-document --path-prefix /x",
    ),
    Ask(
        "explain a document there is not",
        get("/explain", q="signing key", doc="nothing.md"),
        "explain 'signing key' nothing.md",
    ),
    Ask(
        "document by id",
        get("/documents/1", chunks="true"),
        "get 1 --chunks",
        ("get_document", {"id": 1, "chunks": True}),
    ),
    Ask("document by uri", None, None),  # filled in by the test: the uri is the notes' path
    Ask(
        "document there is not",
        get("/documents/999"),
        "get 999",
        ("get_document", {"id": 999}),
    ),
    Ask("sources", get("/sources"), "sources list", ("list_sources", {})),
    Ask("source", get("/sources/notes"), "sources show notes", ("get_source", {"name": "notes"})),
    Ask(
        "source there is not",
        get("/sources/nothing"),
        "sources show nothing",
        ("get_source", {"name": "nothing"}),
    ),
    Ask("ls", get("/ls"), "ls", ("list_documents", {})),
    Ask("ls under a prefix", None, None),  # filled in by the test: the notes' path
    Ask(
        "ls at most one",
        get("/ls", prefix="memory:", limit=1),
        "ls memory: --limit 1",
        ("list_documents", {"prefix": "memory:", "limit": 1}),
    ),
    Ask(
        "ls none",
        get("/ls", limit=0),
        "ls --limit 0",
        ("list_documents", {"limit": 0}),
    ),
    Ask(
        "stats",
        get("/stats"),
        "stats",
        ("status", {}),
        differ=("rss_bytes", "envelope"),
    ),
    Ask("models", get("/models"), "models"),
    Ask(
        "models check",
        post("/models/check", None),
        "models check",
        differ=("checks.seconds",),  # how long each call took
    ),
    Ask(
        "relations",
        get("/graph/relations", **{"from": "alice"}),
        "graph relations --from alice",
        ("graph_relations", {"entity": "alice"}),
    ),
    Ask(
        "relations as of a time",
        get("/graph/relations", to="bob", type="manages", as_of_valid="2020-06-01"),
        "graph relations --to bob --type manages --as-of-valid 2020-06-01",
        (
            "graph_relations",
            {
                "entity": "bob",
                "direction": "incoming",
                "type": "manages",
                "as_of_valid": "2020-06-01",
            },
        ),
    ),
    Ask(
        "relations as known then",
        get("/graph/relations", **{"from": "alice", "as_of_known": "2025-01-01"}),
        "graph relations --from alice --as-of-known 2025-01-01",
        ("graph_relations", {"entity": "alice", "as_of_known": "2025-01-01"}),
    ),
    Ask(
        "relations of no one known",
        get("/graph/relations", **{"from": "nobody"}),
        "graph relations --from nobody",
        ("graph_relations", {"entity": "nobody"}),
    ),
    Ask(
        "history",
        get("/graph/relationships/1/history"),
        "graph history 1",
        ("graph_history", {"relationship_id": 1}),
    ),
    Ask(
        "history there is not",
        get("/graph/relationships/99/history"),
        "graph history 99",
        ("graph_history", {"relationship_id": 99}),
    ),
    Ask(
        "traverse",
        get("/graph/traverse", **{"from": "alice", "depth": 2}),
        "graph traverse alice --depth 2",
    ),
    Ask(
        "traverse as of a time",
        get("/graph/traverse", **{"from": "Al", "as_of_valid": "2020-06-01"}),
        "graph traverse Al --as-of-valid 2020-06-01",
    ),
    Ask(
        "traverse from no one known",
        get("/graph/traverse", **{"from": "nobody"}),
        "graph traverse nobody",
    ),
]

TRIPLE = {"from": "carol", "type": "works_at", "to": "Globex", "valid_at": "2024-03-01"}
WRITES = [
    Ask(
        "add",
        post("/add", {"text": "The printer is on floor 3", "source": "chat", "tags": ["office"]}),
        "add 'The printer is on floor 3' --source chat --tag office",
        ("remember", {"text": "The printer is on floor 3", "source": "chat", "tags": ["office"]}),
    ),
    Ask(
        "add again",
        post("/add", {"text": "The printer is on floor 3"}),
        "add 'The printer is on floor 3'",
        ("remember", {"text": "The printer is on floor 3"}),
    ),
    Ask(
        "add nothing",
        post("/add", {"text": "  "}),
        "add '  '",
        ("remember", {"text": "  "}),
    ),
    Ask(
        "graph add, dry run",
        post("/ingest", {"relationships": [TRIPLE]}, dry_run="true"),
        "graph add carol works_at Globex --valid-at 2024-03-01 --dry-run",
        ("graph_add", {"relationships": [TRIPLE], "dry_run": True}),
        differ=("at",),
    ),
    Ask(
        "graph add",
        post("/ingest", {"relationships": [TRIPLE]}),
        "graph add carol works_at Globex --valid-at 2024-03-01",
        ("graph_add", {"relationships": [TRIPLE]}),
        differ=("at",),
    ),
    Ask(
        "graph add, a window that is not one",
        post("/ingest", {"relationships": [TRIPLE | {"invalid_at": "2020-01-01"}]}),
        "graph add carol works_at Globex --valid-at 2024-03-01 --invalid-at 2020-01-01",
        ("graph_add", {"relationships": [TRIPLE | {"invalid_at": "2020-01-01"}]}),
    ),
    Ask(
        "delete",
        ("DELETE", "/documents/4", {}),
        "delete 4",
        remote=False,
    ),
    Ask(
        "delete again",
        ("DELETE", "/documents/4", {}),
        "delete 4",
        remote=False,
    ),
]


def over_http(served: Served, ask: Ask) -> Answer:
    assert ask.http is not None
    method, path, kwargs = ask.http
    with httpx.Client(base_url=served.url, timeout=30) as http:
        response = http.request(method, path, **kwargs)
    if response.status_code == 200:
        return ("ok", response.json())
    return ("error", response.json()["error"]["message"])


def over_cli(served: Served, command: str, *, local: bool) -> Answer:
    """The command with --json: in process on the brain's file, or sent to its server."""
    args = shlex.split(command)
    where = ["--local", "--db", str(served.db)] if local else []
    env = ENVIRONMENT | ({} if local else {"BRAIN_URL": served.url})
    with contextlib.chdir(served.root):
        result = CliRunner().invoke(cli, [*where, *args, "--json"], env=env)
    if result.exit_code == 0:
        return ("ok", json.loads(result.stdout))
    assert result.exit_code == 1 and result.stderr.startswith("error: "), result.output
    return ("error", result.stderr.removeprefix("error: ").rstrip("\n"))


def over_mcp(served: Served, calls: Sequence[tuple[str, dict[str, Any]]]) -> list[Answer]:
    """Each tool call's structured answer, or its error's message, in one MCP session."""
    answers: list[Answer] = []

    async def session() -> None:
        async with Client(f"{served.url}/mcp") as client:
            for tool, arguments in calls:
                result = await client.call_tool(tool, arguments)
                assert isinstance(result, CallToolResult)
                answers.append(_tool_answer(result))

    anyio.run(session)
    return answers


def _tool_answer(result: CallToolResult) -> Answer:
    assert result.structured_content is not None
    if not result.is_error:
        return ("ok", result.structured_content)
    [content] = result.content
    assert isinstance(content, TextContent)
    assert result.structured_content["error"]["message"] == content.text
    return ("error", content.text)


def without(answer: Answer, keys: Sequence[str]) -> Answer:
    """The answer without these keys; "checks.seconds" is `seconds` in each item of `checks`."""
    kind, value = answer
    if kind == "ok":
        inner = [key.split(".", 1) for key in keys if "." in key]
        value = {key: item for key, item in value.items() if key not in keys}
        for outer, key in inner:
            value[outer] = [{k: v for k, v in item.items() if k != key} for item in value[outer]]
    return (kind, value)


@dataclass
class Answers:
    """Each interface's answer to one question, by interface."""

    ask: Ask
    by: dict[str, Answer] = field(default_factory=dict)

    def check(self) -> None:
        assert len(self.by) > 1, f"{self.ask.name}: offered on one interface only"
        compared = {name: without(answer, self.ask.differ) for name, answer in self.by.items()}
        first, *rest = compared.items()
        for name, answer in rest:
            assert answer == first[1], f"{self.ask.name}: {name} differs from {first[0]}"


def by_uri(served: Served) -> Ask:
    uri = (served.root / "notes" / "vault.md").as_posix()
    return Ask(
        "document by uri",
        get("/documents", uri=uri),
        f"get {uri}",
        ("get_document", {"path": uri}),
    )


def under_notes(served: Served) -> Ask:
    prefix = (served.root / "notes" / "ops").as_posix()
    return Ask(
        "ls under a prefix",
        get("/ls", prefix=prefix),
        f"ls {prefix}",
        ("list_documents", {"prefix": prefix}),
    )


FILLED = {"document by uri": by_uri, "ls under a prefix": under_notes}


def test_every_question_gets_the_same_answer_on_every_interface(served: Served) -> None:
    asks = [FILLED[ask.name](served) if ask.http is None else ask for ask in READS]
    mcp = over_mcp(served, [ask.mcp for ask in asks if ask.mcp is not None])
    for ask in asks:
        answers = Answers(ask)
        answers.by["http"] = over_http(served, ask)
        assert ask.cli is not None
        answers.by["cli"] = over_cli(served, ask.cli, local=False)
        answers.by["cli --local"] = over_cli(served, ask.cli, local=True)
        if ask.mcp is not None:
            answers.by["mcp"] = mcp.pop(0)
        answers.check()
    assert not mcp


def test_every_operation_offered_twice_is_asked() -> None:
    """The questions cover every operation that more than one interface offers: one added to
    the table is asked here too (the command each question runs names its operation)."""
    commands = {op.cli.name: op.name for op in OPERATIONS if op.cli is not None}
    asked = set()
    for ask in READS + WRITES:
        if ask.cli is not None:
            words = shlex.split(ask.cli)
            asked.add(commands.get(" ".join(words[:2])) or commands[words[0]])
    offered = {
        op.name
        for op in OPERATIONS
        if sum(face is not None for face in (op.http or op.remote, op.mcp, op.cli)) > 1
    }
    assert offered and offered <= asked, offered - asked


def test_kinds_of_answers_are_all_asked(served: Served) -> None:
    """The questions reach good answers and errors both (a run where every one failed the
    same way would agree, and prove nothing)."""
    kinds = [over_http(served, ask)[0] for ask in READS if ask.http is not None]
    assert kinds.count("ok") >= 15 and kinds.count("error") >= 6, kinds


def test_a_path_here_is_the_same_document_from_the_server_and_in_process(
    served: Served,
) -> None:
    """A path relative to the folder the command runs in: the server cannot see that folder,
    so the command line resolves it (over HTTP, only a stored uri names a document)."""
    for command in ("get notes/deploy.md", "explain 'signing key' notes/deploy.md"):
        remote = over_cli(served, command, local=False)
        assert remote[0] == "ok" and remote == over_cli(served, command, local=True), command


def test_every_write_gets_the_same_answer_on_every_interface(twins: list[Served]) -> None:
    http, remote, local, agent = twins
    mcp = over_mcp(agent, [ask.mcp for ask in WRITES if ask.mcp is not None])
    for ask in WRITES:
        answers = Answers(ask)
        answers.by["http"] = over_http(http, ask)
        assert ask.cli is not None
        if ask.remote:
            answers.by["cli"] = over_cli(remote, ask.cli, local=False)
        answers.by["cli --local"] = over_cli(local, ask.cli, local=True)
        if ask.mcp is not None:
            answers.by["mcp"] = mcp.pop(0)
        answers.check()
    assert not mcp
