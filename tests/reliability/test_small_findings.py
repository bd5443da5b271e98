"""The smaller findings of issue 17 (13): no resolved server path in MCP errors, conversation
timestamps that are times, and a query string that is UTF-8."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexusbrain.brain import Brain
from nexusbrain.errors import InvalidInput, NotFound
from nexusbrain.ingest.conversation import sessions_from_json
from nexusbrain.mcp_server.tools import answer

from ..conftest import LiveServer
from ..test_api import assert_error


def test_get_document_by_path_never_echoes_the_resolved_path(brain: Brain, tmp_path: Path) -> None:
    secret = tmp_path / "private" / "hostname"
    secret.parent.mkdir()
    (tmp_path / "public").mkdir()
    secret.write_text("server name")
    given = f"{tmp_path}/public/../private/hostname"
    with pytest.raises(NotFound) as missing:
        answer("get_document", brain, {"path": given})
    assert str(secret) not in missing.value.message
    assert repr(given) in missing.value.message


@pytest.mark.parametrize(
    ("turn", "session"),
    [({"timestamp": "x"}, {}), ({}, {"timestamp": "last tuesday"}), ({"timestamp": 12}, {})],
)
def test_a_conversation_timestamp_must_be_a_time(
    turn: dict[str, object], session: dict[str, object]
) -> None:
    raw = {"id": "s1", **session, "turns": [{"role": "user", "content": "hi", **turn}]}
    with pytest.raises(InvalidInput, match=r"sessions\[0\].*timestamp.*ISO-8601"):
        sessions_from_json([raw])


def test_conversation_timestamps_that_are_times_are_kept_as_given() -> None:
    raw = {
        "id": "s1",
        "timestamp": "2023-05-20",
        "turns": [{"role": "user", "content": "hi", "timestamp": "2023-05-20T10:00:00+02:00"}],
    }
    (session,) = sessions_from_json([raw])
    assert session.timestamp == "2023-05-20"
    assert session.turns[0].timestamp == "2023-05-20T10:00:00+02:00"


def test_a_conversation_turn_timestamp_x_is_a_400(live_server: LiveServer) -> None:
    body = {
        "sessions": [{"id": "s", "turns": [{"role": "user", "content": "hi", "timestamp": "x"}]}]
    }
    with live_server.client() as http:
        assert_error(http.post("/ingest/conversation", json=body), 400, "invalid_input")
        assert http.get("/stats").json()["documents"] == 0


@pytest.mark.parametrize("query", ["q=%ff", "q=caf%e9", "q=%ed%a0%80", "q=ok&domain=%c3"])
def test_a_query_string_that_is_not_utf8_is_a_400(live_server: LiveServer, query: str) -> None:
    with live_server.client() as http:
        http.post("/add", json={"text": "\ufffd replacement characters"})
        error = assert_error(http.get(f"/search?{query}"), 400, "invalid_input")
        assert "UTF-8" in error["message"]
        assert http.get("/search?q=caf%C3%A9+%E2%9C%93").status_code == 200
