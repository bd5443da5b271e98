"""The OpenAPI document tells the truth: every operation's real answers, good and bad, have a
status it declares and validate against the schema it declares for that status; every error
it declares is the one error shape that is sent."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jsonschema_rs
import orjson
import pytest
from jsonschema import Draft202012Validator

from nexusbrain.brain import Brain
from nexusbrain.config import (
    CaptureConfig,
    Limits,
    ModelSettings,
    Profile,
    RateLimit,
    Reranking,
    ServerSettings,
    Settings,
)
from nexusbrain.operations.args import BLANK

from .conftest import LiveServer, _serve, free_port

NOTE = (
    "---\nrelations:\n  - {type: works_at, to: Acme}\n---\n# Alice\n\n"
    "Alice knows [[Bob]] from the deploy team.\n\n## Keys\n\nThe deploy key rotates monthly."
)
SESSION = {
    "id": "s1",
    "timestamp": "2025-01-31T09:30:00Z",
    "turns": [
        {"role": "user", "content": "where is the deploy key?", "timestamp": "2025-01-31"},
        {"speaker": "bot", "text": "in the vault"},
    ],
}
GRAPH = {
    "entities": [{"name": "Carol", "type": "person", "aliases": ["C."]}],
    "relationships": [
        {"from": "Carol", "type": "works_at", "to": "Initech", "valid_at": "2020-01-01"},
        {"from": "Carol", "type": "manages", "to": "Alice", "source": "org chart"},
    ],
}
LIMITS = Limits(max_request_bytes=64 * 1024)  # a small body over it is a 413
MOVED = {"relationships": [{"from": "Carol", "type": "works_at", "to": "Globex"}]}


@dataclass
class Call:
    method: str
    operation: str  # the path as the document names it
    path: str = ""
    kwargs: dict[str, Any] = field(default_factory=dict)
    answer: Any = None  # the JSON of the last 200 answer

    def send(self, http: httpx.Client) -> httpx.Response:
        response = http.request(self.method, self.path or self.operation, **self.kwargs)
        if response.status_code == 200 and response.headers["content-type"] == "application/json":
            self.answer = response.json()
        return response


def get(operation: str, path: str = "", **params: Any) -> Call:
    return Call("GET", operation, path, {"params": params})


def post(operation: str, body: Any, **params: Any) -> Call:
    return Call("POST", operation, "", {"json": body, "params": params})


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    db = Path(tmp_path_factory.mktemp("openapi")) / "brain.db"
    settings = Settings(
        db=db,
        embedder=Profile.HASHING,
        capture=CaptureConfig(enabled=True),
        models=ModelSettings(reranker=Reranking.HASHING),
    )
    with Brain.open(settings=settings) as brain:
        folder = db.parent / "folder"  # a source, one of whose files cannot be read
        folder.mkdir()
        (folder / "note.md").write_text("# Note\n\nthe heron counts boats\n")
        (folder / "image.txt").write_bytes(b"\x89PNG\x00\x00")
        brain.sources.add(folder, exclude=("drafts/*",))
        yield from _serve(brain, ServerSettings(port=free_port(), limits=LIMITS))


@pytest.fixture(scope="module")
def spec(server: LiveServer) -> dict[str, Any]:
    with server.client() as http:
        document: dict[str, Any] = http.get("/openapi.json").json()
    return document


def check(spec: dict[str, Any], operation: str, method: str, response: httpx.Response) -> None:
    """The response's status is declared for the operation, with its content type, and the
    body validates against the declared schema (each line of an NDJSON body is a JSON
    object)."""
    declared = spec["paths"][operation][method.lower()]["responses"]
    status = str(response.status_code)
    assert status in declared, f"{method} {operation}: {status} not declared ({response.text})"
    media = response.headers["content-type"].split(";")[0]
    content = declared[status]["content"]
    assert media in content, f"{method} {operation} {status}: {media} not declared"
    if media == "application/x-ndjson":
        assert all(isinstance(orjson.loads(line), dict) for line in response.content.splitlines())
        return
    schema = {**content[media]["schema"], "components": spec["components"]}
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    problems = [
        f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(response.json())
    ]
    assert not problems, f"{method} {operation} {status}: {problems}"


def calls(http: httpx.Client) -> Iterator[Call]:
    """Requests that answer 200 on every operation, in an order that makes ids to ask for
    (each is sent before the next is made)."""
    yield Call("GET", "/health")
    yield Call("GET", "/version")
    note = post("/ingest/markdown", {"title": "Alice", "content": NOTE, "uri": "alice.md"})
    yield note
    note_id = note.answer["id"]
    yield post("/add", {"text": "the okapi grazes by the deploy shed", "tags": ["zoo"]})
    batch = [{"title": f"N{i}", "content": f"zebra {i} grazes", "uri": f"b/{i}.md"} for i in (1, 2)]
    yield post("/ingest/markdown/batch", {"documents": batch})
    yield post("/ingest/markdown/batch", {"documents": batch})  # duplicates
    yield post("/ingest/conversation", {"sessions": [SESSION], "domain": "chat"})
    yield post("/ingest", GRAPH, dry_run="true")
    yield post("/ingest", GRAPH)
    moved = post("/ingest", MOVED)
    yield moved
    relationship = moved.answer["relationships"][0]
    yield Call("GET", "/stats")
    yield Call("GET", "/models")
    yield Call("POST", "/models/check")
    yield Call("GET", "/v1/models")
    yield post("/v1/embeddings", {"input": ["deploy key", "okapi"], "model": "hashing"})
    yield post(
        "/v1/embeddings", {"input": "okapi", "model": "hashing-256", "encoding_format": "base64"}
    )
    rerank = {
        "query": "deploy key",
        "documents": ["the deploy key", "an okapi"],
        "model": "hashing",
    }
    yield post("/v1/rerank", {**rerank, "top_n": 1, "return_documents": True})
    for mode in ("conservative", "balanced", "tokenmax"):
        yield get("/search", q="who rotates the deploy key", mode=mode, graph="true")
    yield get("/search", q="deploy", best_per_document="true", kind="markdown", k=2)
    yield post("/recall", {"query": "deploy key", "budget_tokens": 40, "graph": True})
    yield post("/recall", {"query": "okapi", "mode": "tokenmax", "filters": {"domain": "default"}})
    yield get("/explain", q="deploy key", doc=str(note_id))
    yield get("/explain", q="deploy key", doc="alice.md", updated_after="2999-01-01")
    yield get("/explain", q="zebra", doc="b/1.md", k=1, best_per_document="true")
    yield get("/documents", uri="alice.md", chunks="true")
    yield get("/ls")
    yield get("/sources")
    yield get("/sources/{name}", "/sources/folder")  # the source the fixture added
    yield get("/ls", prefix="b/", limit=1)
    path = f"/documents/{note_id}"
    yield get("/documents/{document_id}", path, chunks="true")
    yield get("/documents/{document_id}/history", f"{path}/history")
    yield get("/graph/relations", **{"from": "Carol", "as_of_valid": "2021-06-01"})
    yield get("/graph/relations", to="Acme")
    history = f"/graph/relationships/{relationship['supersedes'] or relationship['id']}/history"
    yield get("/graph/relationships/{relationship_id}/history", history)
    yield get("/graph/traverse", **{"from": "Carol", "depth": 2})
    yield Call("GET", "/captures")
    yield Call("DELETE", "/documents/{document_id}", path)
    yield Call("DELETE", "/documents/{document_id}", path)  # already retired
    yield get("/explain", q="deploy key", doc=str(note_id))  # retired
    yield get("/documents/{document_id}", path)  # retired, with deleted_at
    export = http.get("/export")
    yield Call("GET", "/export")
    ndjson = {"Content-Type": "application/x-ndjson"}
    yield Call("POST", "/import", kwargs={"content": export.content, "headers": ndjson})


def test_every_operation_answers_as_it_declares(server: LiveServer, spec: dict[str, Any]) -> None:
    seen: set[tuple[str, str]] = set()
    with server.client() as http:
        for call in calls(http):
            response = call.send(http)
            assert response.status_code == 200, f"{call}: {response.text}"
            check(spec, call.operation, call.method, response)
            seen.add((call.method.lower(), call.operation))
    every = {(method, path) for path, item in spec["paths"].items() for method in item}
    assert seen == every, every - seen


def test_every_declared_error_is_the_one_shape(spec: dict[str, Any]) -> None:
    error = {"$ref": "#/components/schemas/ErrorOut"}
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            ok = operation["responses"]["200"]["content"]
            assert len(ok) == 1 and next(iter(ok.values()))["schema"], (method, path, ok)
            for status, response in operation["responses"].items():
                if status != "200":
                    assert response["content"] == {"application/json": {"schema": error}}, (
                        method,
                        path,
                        status,
                    )
    detail = spec["components"]["schemas"]["ErrorDetail"]
    assert detail["required"] == ["code", "message"]
    assert "HTTPValidationError" not in spec["components"]["schemas"]


def test_every_reference_resolves(spec: dict[str, Any]) -> None:
    def refs(value: Any) -> Iterator[str]:
        if isinstance(value, dict):
            if isinstance(value.get("$ref"), str):
                yield value["$ref"]
            for child in value.values():
                yield from refs(child)
        elif isinstance(value, list):
            for child in value:
                yield from refs(child)

    prefix = "#/components/schemas/"
    names = {ref.removeprefix(prefix) for ref in refs(spec)}
    assert names and names <= set(spec["components"]["schemas"]), names
    assert {"ExplanationOut", "TraversalOut", "ErrorOut"} <= names


def test_each_route_declares_the_errors_it_can_answer(spec: dict[str, Any]) -> None:
    def statuses(method: str, path: str) -> set[str]:
        return set(spec["paths"][path][method]["responses"])

    guard = {"400", "401", "403", "421", "429"}
    assert statuses("get", "/health") == {"200", "400", "403", "421", "429"}  # no 401
    assert statuses("get", "/version") == {"200", *guard}
    body, writes = {"413", "415", "422"}, {"503", "507"}
    for path in ("/add", "/ingest/markdown", "/ingest/markdown/batch", "/recall"):
        assert statuses("post", path) == {"200", *guard, *body, *writes}, path
    for path in ("/ingest", "/import"):
        assert statuses("post", path) == {"200", "409", *guard, *body, *writes}, path
    assert statuses("get", "/search") == {"200", "422", *guard, *writes}
    assert statuses("delete", "/documents/{document_id}") == {
        "200",
        "404",
        "415",
        "422",
        *guard,
        *writes,
    }
    for path in ("/documents/{document_id}", "/explain", "/graph/traverse", "/graph/relations"):
        assert statuses("get", path) == {"200", "404", "422", *guard}, path


def test_errors_validate_against_what_is_declared(server: LiveServer, spec: dict[str, Any]) -> None:
    huge = {"text": "x" * (LIMITS.max_request_bytes + 1)}
    text = {"Content-Type": "text/plain"}
    errors = [
        (400, get("/search", q="   ")),
        (400, Call("GET", "/search", "/search?q=caf%E9")),  # not UTF-8
        (403, Call("POST", "/add", kwargs={"json": {"text": "x"}, "headers": {"Origin": "https://evil.example"}})),
        (404, get("/documents/{document_id}", "/documents/999999")),
        (404, get("/explain", q="x", doc="nowhere.md")),
        (404, get("/graph/traverse", **{"from": "Nobody"})),
        (409, post("/ingest", {"entities": [{"name": "Dave", "aliases": ["Carol"]}]})),
        (413, post("/add", huge)),
        (415, Call("POST", "/add", kwargs={"content": b"x", "headers": text})),
        (421, Call("GET", "/version", kwargs={"headers": {"Host": "evil.example"}})),
        (422, get("/search")),
        (422, post("/ingest/markdown", {"title": "t"})),
        (422, get("/documents/{document_id}", "/documents/0")),
    ]  # fmt: skip
    with server.client() as http:
        http.post("/ingest", json=GRAPH)
        for status, call in errors:
            response = call.send(http)
            assert response.status_code == status, f"{call}: {response.text}"
            check(spec, call.operation, call.method, response)


def test_bearer_auth_is_declared_where_the_server_has_a_token(
    brain: Brain, spec: dict[str, Any]
) -> None:
    assert "securitySchemes" not in spec["components"]  # no token: nothing to send
    assert not any("security" in op for item in spec["paths"].values() for op in item.values())
    for server in _serve(brain, ServerSettings(port=free_port(), token="s3cret-token")):
        with server.client() as http:
            auth = {"Authorization": "Bearer s3cret-token"}
            document = http.get("/openapi.json", headers=auth).json()
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    for path, item in document["paths"].items():
        for method, operation in item.items():
            expected = None if path == "/health" else [{"bearer": []}]
            assert operation.get("security") == expected, (method, path)


def test_unauthorised_and_rate_limited_answers_are_declared(
    brain: Brain, spec: dict[str, Any]
) -> None:
    for server in _serve(brain, ServerSettings(port=free_port(), token="s3cret-token")):
        with server.client() as http:
            for operation, method, response in (
                ("/search", "GET", http.get("/search", params={"q": "x"})),
                ("/import", "POST", http.post("/import", content=b"{}")),
            ):
                assert response.status_code == 401
                check(spec, operation, method, response)
    limit = RateLimit(rate=0.001, burst=1, limit_loopback=True)
    for server in _serve(brain, ServerSettings(port=free_port(), rate_limit=limit)):
        with server.client() as http:
            assert http.get("/version").status_code == 200
            refused = http.get("/version")
            assert refused.status_code == 429 and refused.headers["Retry-After"]
            check(spec, "/version", "GET", refused)


def test_the_import_example_imports(server: LiveServer, spec: dict[str, Any]) -> None:
    """The body the document shows for /import (schemathesis sends it first) is one that works."""
    body = spec["paths"]["/import"]["post"]["requestBody"]["content"]["application/x-ndjson"]
    with server.client() as http:
        ndjson = {"Content-Type": "application/x-ndjson"}
        response = http.post("/import", content=body["example"], headers=ndjson)
        assert response.status_code == 200, response.text
        check(spec, "/import", "POST", response)
        assert response.json()["records"] == 2
        assert http.get("/documents", params={"uri": "notes/imported.md"}).status_code == 200


BLANKISH = [
    "x",
    " x ",
    "\x1d",
    "\x85",
    "\u3000",
    "\ufeff",
    "\ufeff ",
    " \ufeff",
    "\ufeff\ufeff",
    "\t",
]


def ecma_pattern(pattern: str) -> Callable[[str], bool]:
    """Whether a string matches `pattern` as JSON Schema reads it (ECMA-262, as schemathesis
    does: Python's `re` would read `\\S` as the core does, and hide the difference)."""
    return jsonschema_rs.validator_for({"type": "string", "pattern": pattern}).is_valid  # type: ignore[no-any-return]


def _pattern(spec: dict[str, Any], *where: str) -> str:
    schema: Any = spec
    for key in where:
        schema = schema[key]
    return str(schema["pattern"])


def test_a_declared_pattern_is_the_rule_the_core_applies(
    server: LiveServer, spec: dict[str, Any]
) -> None:
    """Each string is valid by the declared pattern exactly when it is taken: JSON Schema's `\\S`
    once let "\\x1d" through (Python strips it: a 400) and refused "\\ufeff" (a query the core
    takes); found by schemathesis. A leading BOM is dropped from a text before it is judged."""
    schemas = spec["components"]["schemas"]
    search = next(p for p in spec["paths"]["/search"]["get"]["parameters"] if p["name"] == "q")
    fields = [
        (_pattern(search, "schema"), lambda s: get("/search", q=s)),
        (_pattern(schemas, "MemoryIn", "properties", "text"), lambda s: post("/add", {"text": s})),
        (
            _pattern(schemas, "MarkdownIn", "properties", "content"),
            lambda s: post("/ingest/markdown", {"title": "t", "content": s}),
        ),
        (
            _pattern(schemas, "EntityIn", "properties", "name"),
            lambda s: post("/ingest", {"entities": [{"name": s}]}, dry_run="true"),
        ),
    ]
    with server.client() as http:
        for pattern, call in fields:
            valid = ecma_pattern(pattern)
            for text in BLANKISH:
                response = call(text).send(http)
                assert response.status_code in (200, 400), response.text
                taken = response.status_code == 200
                assert valid(text) == taken, (pattern, text, taken)


def test_blank_is_pythons_whitespace() -> None:
    every = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    blank = ecma_pattern(f"^[{BLANK}]$")
    assert {c for c in every if blank(c)} == {c for c in every if c.isspace()}


def test_an_empty_kind_is_any_kind(server: LiveServer, spec: dict[str, Any]) -> None:
    kind = next(p for p in spec["paths"]["/search"]["get"]["parameters"] if p["name"] == "kind")
    assert "" in kind["schema"]["enum"]
    with server.client() as http:
        assert http.get("/search", params={"q": "okapi", "kind": ""}).status_code == 200
        body = {"query": "okapi", "filters": {"kind": ""}}
        assert http.post("/recall", json=body).status_code == 200
