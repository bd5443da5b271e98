"""Inputs that once gave a 500 (issue 17, finding 3), each one line: every one is a 4xx in the
error shape now, against a real server on loopback, and none of them stores anything."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from nexusbrain.api.errors import error_response

from ..conftest import LiveServer
from ..test_api import assert_error

BIG_ID = 2**63  # one past the largest id (a signed 64-bit integer)
EARLY = "0001-01-01T00:00:00+05:00"  # in UTC, a moment before year 1
LATE = "9999-12-31T23:59-01:00"  # in UTC, a moment after year 9999
EARLY_NOTE = (
    "---\nrelations:\n  - {type: knows, to: b, valid_at: 0001-01-01 00:00:00+05:00}\n---\nx"
)


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def _laughs(levels: int) -> str:
    """Front matter of a few hundred bytes whose aliases expand 9 times a level."""
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x]"]
    for n in range(1, levels):
        lines.append(f"l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 9) + "]")
    return "---\n" + "\n".join(lines) + "\n---\nx"


def _edge(**times: str) -> dict[str, Any]:
    return {"relationships": [{"from": "a", "type": "knows", "to": "b", **times}]}


def case(
    name: str,
    method: str,
    path: str,
    params: dict[str, Any] | None = None,
    json: Any = None,
    raw: bytes | None = None,
) -> Any:
    return pytest.param(method, path, params, json, raw, id=name)


IDS = [
    case("document id", "GET", f"/documents/{BIG_ID}"),
    case("document history id", "GET", f"/documents/{BIG_ID}/history"),
    case("delete id", "DELETE", f"/documents/{BIG_ID}"),
    case("search document_id", "GET", "/search", {"q": "x", "document_id": BIG_ID}),
    case(
        "recall document_id",
        "POST",
        "/recall",
        json={"query": "x", "filters": {"document_id": BIG_ID}},
    ),
    case("relationship history id", "GET", f"/graph/relationships/{BIG_ID}/history"),
]
TIMES = [
    case("updated_after early", "GET", "/search", {"q": "x", "updated_after": EARLY}),
    case("updated_after late", "GET", "/search", {"q": "x", "updated_after": LATE}),
    case("updated_before late", "GET", "/search", {"q": "x", "updated_before": LATE}),
    case(
        "recall updated_after late",
        "POST",
        "/recall",
        json={"query": "x", "filters": {"updated_after": LATE}},
    ),
    case("valid_at early", "POST", "/ingest", json=_edge(valid_at=EARLY)),
    case("valid_at late", "POST", "/ingest", json=_edge(valid_at=LATE)),
    case("invalid_at late", "POST", "/ingest", json=_edge(invalid_at=LATE)),
    case("as_of_valid early", "GET", "/graph/relations", {"from": "a", "as_of_valid": EARLY}),
    case("as_of_valid late", "GET", "/graph/relations", {"from": "a", "as_of_valid": LATE}),
    case("as_of_known late", "GET", "/graph/traverse", {"from": "a", "as_of_known": LATE}),
    case(
        "front matter valid_at early",
        "POST",
        "/ingest/markdown",
        json={"title": "t", "content": EARLY_NOTE},
    ),
]

BODIES = [
    case("surrogate in /add", "POST", "/add", raw=b'{"text": "a \\ud800"}'),
    case(
        "surrogate in markdown",
        "POST",
        "/ingest/markdown",
        raw=b'{"title": "t", "content": "a \\ud800"}',
    ),
    case("surrogate in recall", "POST", "/recall", raw=b'{"query": "a \\ud800"}'),
    case(
        "surrogate in a key", "POST", "/ingest", raw=b'{"entities": [{"name": "x", "\\udc00": 1}]}'
    ),
    case(
        "metadata 300 deep",
        "POST",
        "/ingest/markdown",
        json={"title": "t", "content": "x", "metadata": _nested(300)},
    ),
    case(
        "metadata integer beyond 64 bits",
        "POST",
        "/ingest/markdown",
        json={"title": "t", "content": "x", "metadata": {"n": 2**64}},
    ),
]

FRONT_MATTER = [
    case(
        "recursive YAML alias",
        "POST",
        "/ingest/markdown",
        json={"title": "t", "content": "---\na: &a [*a]\n---\nx"},
    ),
    case("YAML alias amplification", "POST", "/add", json={"text": _laughs(5)}),
]

EXPLAIN = [
    case("doc is a superscript digit", "GET", "/explain", {"q": "x", "doc": "²"}),
    case("doc is a huge number", "GET", "/explain", {"q": "x", "doc": str(BIG_ID)}),
    # found by tests/reliability/test_fuzz.py: each was a 500 from resolving doc as a path
    case("doc is a home of no user", "GET", "/explain", {"q": "x", "doc": "~nobody-here"}),
    case("doc is too long a file name", "GET", "/explain", {"q": "x", "doc": "a" * 5000}),
]


@pytest.mark.parametrize(
    ("method", "path", "params", "body", "raw"), IDS + TIMES + BODIES + FRONT_MATTER + EXPLAIN
)
def test_a_hostile_input_is_a_4xx_in_the_error_shape(
    live_server: LiveServer,
    method: str,
    path: str,
    params: dict[str, Any] | None,
    body: Any,
    raw: bytes | None,
) -> None:
    headers = {"content-type": "application/json"} if raw is not None else None
    with live_server.client() as http:
        response = http.request(
            method, path, params=params, json=body, content=raw, headers=headers
        )
        assert 400 <= response.status_code < 500, response.text
        assert_error(response, response.status_code, response.json()["error"]["code"])
        exported = http.get("/export").text.splitlines()
        assert len(exported) == 1 and '"header"' in exported[0]  # nothing was stored


def test_an_error_message_that_echoes_a_lone_surrogate_is_still_sent() -> None:
    response = error_response(400, "invalid_input", "bad key '\ud800'")
    assert orjson.loads(response.body) == {
        "error": {"code": "invalid_input", "message": "bad key '\\ud800'"}
    }
