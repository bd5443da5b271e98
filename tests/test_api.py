"""The HTTP API against a real server on loopback."""

from __future__ import annotations

import secrets
import socket
from datetime import UTC, datetime

import orjson
import pytest

from nexusbrain.api.guard import check_bind
from nexusbrain.config import ServerSettings
from nexusbrain.errors import ConfigError

from .conftest import LiveServer

NOTE = {
    "title": "Deploy",
    "content": "# Deploy\n\nThe deploy failed: the key expired.",
    "uri": "n/deploy.md",
}


def assert_error(response, status: int, code: str) -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    return body["error"]


def test_ingest_search_get_delete(live_server: LiveServer) -> None:
    with live_server.client() as http:
        created = http.post("/ingest/markdown", json=NOTE).json()
        assert created["status"] == "created" and created["chunks"] == 1
        assert http.post("/ingest/markdown", json=NOTE).json()["status"] == "duplicate"
        memory = http.post("/add", json={"text": "the key lives in vault", "tags": ["ops"]})
        assert memory.json()["status"] == "created"
        assert http.post("/add", json={"text": "the key lives in vault"}).json()["status"] == (
            "duplicate"
        )
        hits = http.get("/search", params={"q": "why did the deploy fail", "k": 3}).json()["hits"]
        assert hits[0]["uri"] == "n/deploy.md"
        assert hits[0]["span"] == {"char_start": 0, "char_end": 45, "line_start": 1, "line_end": 3}
        assert hits[0]["trace"]["retrievers"][0]["retriever"] == "bm25"
        doc = http.get(f"/documents/{created['id']}", params={"chunks": "true"}).json()
        assert doc["content"] == NOTE["content"] and len(doc["chunks"]) == 1
        assert http.get("/documents", params={"uri": "n/deploy.md"}).json()["id"] == created["id"]
        assert http.delete(f"/documents/{created['id']}").json()["status"] == "retired"
        assert http.delete(f"/documents/{created['id']}").json()["status"] == "already_retired"
        assert http.get("/search", params={"q": "deploy"}).json()["hits"] == []


def test_batch_ingest_writes_all_or_nothing(live_server: LiveServer) -> None:
    notes = [
        {
            "title": f"Note {i}",
            "content": f"# Note {i}\n\nzebra{i} grazes here.",
            "uri": f"b/{i}.md",
        }
        for i in range(5)
    ]
    with live_server.client() as http:
        first = http.post("/ingest/markdown/batch", json={"documents": notes}).json()
        assert first["counts"] == {"created": 5, "updated": 0, "duplicate": 0}
        assert first["chunks"] == 5
        assert [r["status"] for r in first["results"]] == ["created"] * 5
        assert len({r["id"] for r in first["results"]}) == 5
        hits = http.get("/search", params={"q": "zebra3", "k": 3}).json()["hits"]
        assert hits[0]["uri"] == "b/3.md"
        notes[1] = {**notes[1], "content": "# Note 1\n\nokapi now."}
        again = http.post("/ingest/markdown/batch", json={"documents": notes}).json()
        assert again["counts"] == {"created": 0, "updated": 1, "duplicate": 4}
        assert again["results"][1]["id"] == first["results"][1]["id"]
        # two notes with one uri: refused before anything is written
        clash = [
            {"title": "A", "content": "aardvark", "uri": "b/x.md"},
            {**notes[0], "uri": "b/x.md"},
        ]
        error = assert_error(
            http.post("/ingest/markdown/batch", json={"documents": clash}), 400, "invalid_input"
        )
        assert "documents 1 and 2" in error["message"]
        assert http.get("/search", params={"q": "aardvark"}).json()["hits"] == []
        assert_error(
            http.post("/ingest/markdown/batch", json={"documents": []}), 422, "invalid_input"
        )


def test_conversation_turns_keep_their_ids(live_server: LiveServer) -> None:
    body = {
        "sessions": [
            {
                "id": "s1",
                "conversation": "c1",
                "turns": [
                    {"speaker": "Ann", "text": "I adopted a puppy named Rex.", "id": "D1:1"},
                    {"role": "Bob", "content": "Congratulations!", "id": "D1:2"},
                ],
            }
        ]
    }
    with live_server.client() as http:
        [result] = http.post("/ingest/conversation", json=body).json()["results"]
        assert (result["status"], result["chunks"]) == ("created", 2)
        hit = http.get("/search", params={"q": "puppy name", "k": 5}).json()["hits"][0]
        assert hit["unit"] == "D1:1" and hit["kind"] == "conversation"
        assert hit["text"] == "Ann: I adopted a puppy named Rex."


def test_a_question_that_names_a_day_finds_that_days_turns(live_server: LiveServer) -> None:
    turns = [{"speaker": "Ann", "text": "We walked the dog."}]
    sessions = [
        {"id": "may", "timestamp": "2023-05-08T13:56:00Z", "turns": turns},
        {"id": "june", "timestamp": "2023-06-02T09:00Z", "turns": turns},
    ]
    with live_server.client() as http:
        http.post("/ingest/conversation", json={"sessions": sessions}).raise_for_status()
        for question, session, day in (
            ("on 8 May 2023", "may", "2023-05-08"),
            ("on 2023-06-02", "june", "2023-06-02"),
        ):
            found = http.get("/search", params={"q": f"Where did we walk {question}?"}).json()
            first, other = found["hits"]
            assert first["uri"] == f"conversation://default/{session}"
            assert first["trace"]["day"] == day and "day" not in other["trace"]


def test_recall_respects_the_budget(live_server: LiveServer) -> None:
    with live_server.client() as http:
        for i in range(5):
            http.post("/add", json={"text": f"fact {i} about the garden shed " + "x " * 30})
        out = http.post("/recall", json={"query": "garden shed", "budget_tokens": 50}).json()
        assert 0 < out["tokens_used"] <= 50 and out["left_out"] > 0
        assert out["truncated"] == out["hits"][-1]["truncated"]


def test_errors_share_one_shape(live_server: LiveServer) -> None:
    with live_server.client() as http:
        assert_error(http.get("/documents/999"), 404, "not_found")
        assert_error(http.get("/no/such/route"), 404, "not_found")
        assert_error(http.get("/search"), 422, "invalid_input")
        assert_error(http.get("/search", params={"q": "x", "k": 0}), 422, "invalid_input")
        assert_error(http.get("/search", params={"q": "   "}), 400, "invalid_input")
        assert_error(http.get("/search", params={"q": "x", "kind": "bogus"}), 400, "invalid_input")
        assert_error(http.post("/add", json={"text": ""}), 400, "invalid_input")
        assert_error(http.post("/add", json={"text": "x", "bogus": 1}), 422, "invalid_input")
        assert_error(http.post("/add", content=b"{not json"), 422, "invalid_input")
        assert_error(http.post("/ingest/markdown", json={"title": "t"}), 422, "invalid_input")
        assert_error(http.put("/health"), 405, "method_not_allowed")
        assert_error(
            http.post("/ingest/conversation", json={"sessions": [{"id": "s", "turns": [{}]}]}),
            400,
            "invalid_input",
        )
        assert_error(http.post("/import", content=b"[1]\n"), 400, "invalid_input")
        assert_error(http.post("/import", content=b'{"type": "nope"}\n'), 400, "invalid_input")
        assert http.get("/stats").json()["documents"] == 0  # nothing partial was stored


def test_a_405_names_every_method_of_the_path(live_server: LiveServer) -> None:
    """RFC 9110: a 405 lists the methods the resource takes (the framework once named only the
    first route's: `Allow: GET` on /documents/{id}, which DELETE takes too; found by
    tests/reliability/test_fuzz.py)."""
    with live_server.client() as http:
        refused = http.request("OPTIONS", "/documents/1")
        assert_error(refused, 405, "method_not_allowed")
        assert refused.headers["Allow"] == "DELETE, GET"
        assert http.put("/health").headers["Allow"] == "GET"
        assert http.delete("/search").headers["Allow"] == "GET"


def test_request_size_limit(brain, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from nexusbrain.config import Limits

    from .conftest import _serve, free_port

    settings = ServerSettings(port=free_port(), limits=Limits(max_request_bytes=1000))
    for server in _serve(brain, settings):
        with server.client() as http:
            big = {"text": "x" * 5000}
            assert_error(http.post("/add", json=big), 413, "too_large")

            def chunks():  # type: ignore[no-untyped-def]
                for _ in range(10):
                    yield b"x" * 500

            assert_error(http.post("/add", content=chunks()), 413, "too_large")
            assert http.get("/stats").json()["documents"] == 0


def test_export_import_round_trip_is_exact(live_server: LiveServer, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from nexusbrain.brain import Brain
    from nexusbrain.config import Settings

    from .conftest import _serve, free_port

    with live_server.client() as http:
        http.post("/ingest/markdown", json=NOTE)
        http.post("/add", json={"text": "remember the milk", "tags": ["home"]})
        doc_id = http.post("/add", json={"text": "to be retired"}).json()["id"]
        http.delete(f"/documents/{doc_id}")
        exported = http.get("/export").content
    assert exported.count(b"\n") >= 7
    with Brain.open(settings=Settings(db=tmp_path / "other.db")) as other:
        for server in _serve(other, ServerSettings(port=free_port())):
            with server.client() as http:
                result = http.post("/import", content=exported).json()
                assert result["documents"] == 3 and result["unchanged"] == 0
                assert http.get("/export").content == exported
                again = http.post("/import", content=exported).json()
                assert (again["documents"], again["unchanged"]) == (0, 3)
                assert http.get("/export").content == exported


def test_an_import_that_contradicts_the_brain_is_refused_with_409(
    live_server: LiveServer, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    from nexusbrain.brain import Brain
    from nexusbrain.config import Settings

    with Brain.open(settings=Settings(db=tmp_path / "other.db")) as other:
        other.graph.relate("Ada", "works_at", "Acme", valid_at=datetime(2020, 1, 1, tzinfo=UTC))
        exported = b"".join(orjson.dumps(r) + b"\n" for r in other.admin.export())
    with live_server.client() as http:
        globex = {"from": "Ada", "type": "works_at", "to": "Globex", "valid_at": "2019-01-01"}
        assert http.post("/ingest", json={"relationships": [globex]}).status_code == 200
        before = http.get("/export").content
        refused = http.post("/import", content=exported)
        assert_error(refused, 409, "conflict")
        message = refused.json()["error"]["message"]
        assert "Ada works_at Acme from 2020-01-01, open-ended: works_at holds one" in message
        assert "here it is Globex from 2019-01-01, open-ended" in message
        assert http.get("/export").content == before


def test_token_is_required_when_set(token_server: LiveServer) -> None:
    with token_server.client() as http:
        assert_error(http.get("/stats"), 401, "unauthorized")
        assert_error(
            http.get("/stats", headers={"Authorization": "Bearer wrong"}), 401, "unauthorized"
        )
        ok = http.get("/stats", headers={"Authorization": "Bearer s3cret-token"})
        assert ok.status_code == 200


def test_health_answers_a_probe_without_the_token_and_says_nothing_more(
    token_server: LiveServer,
) -> None:
    with token_server.client() as http:
        probe = http.get("/health")
        assert probe.status_code == 200 and probe.json() == {"status": "ok"}
        assert_error(http.get("/health/../stats"), 401, "unauthorized")
        assert_error(http.get("/version"), 401, "unauthorized")


def test_binding_beyond_loopback_needs_a_token() -> None:
    with pytest.raises(ConfigError, match="BRAIN_API_TOKEN"):
        check_bind(ServerSettings(host="0.0.0.0"))
    check_bind(ServerSettings(host="0.0.0.0", token=secrets.token_urlsafe(32)))
    check_bind(ServerSettings(host="192.168.1.5", token=secrets.token_hex(16)))
    check_bind(ServerSettings(host="127.0.0.1"))
    check_bind(ServerSettings(host="::1"))
    check_bind(ServerSettings(host="127.0.0.1", token="t"))  # on loopback a token is extra


@pytest.mark.parametrize(
    "token",
    [" ", "a", "s3cret-token", "a" * 64, "ab" * 32, "abcdefg" * 8, "x" * 20 + " " + "y" * 20],
)
def test_binding_beyond_loopback_needs_a_real_secret(token: str) -> None:
    with pytest.raises(ConfigError, match=r"secrets\.token_urlsafe\(32\)") as refused:
        check_bind(ServerSettings(host="0.0.0.0", token=token))
    assert repr(token) not in refused.value.message  # a secret is never echoed


def test_openapi_schema_is_served_and_lists_the_routes(live_server: LiveServer) -> None:
    with live_server.client() as http:
        schema = http.get("/openapi.json").json()
    for path in (
        "/search",
        "/recall",
        "/add",
        "/ingest/markdown",
        "/ingest/conversation",
        "/documents/{document_id}",
        "/export",
        "/import",
        "/stats",
        "/health",
    ):
        assert path in schema["paths"], path


def test_the_served_socket_sends_without_waiting_for_acks() -> None:
    """asyncio sets TCP_NODELAY only on sockets whose proto is TCP: without it, each response
    body waited for the client's delayed ACK of the headers (40 ms a request)."""
    import asyncio
    import socket

    from nexusbrain.api.server import listen

    listener = listen("127.0.0.1", 0)
    port = listener.getsockname()[1]
    seen: list[int] = []

    async def main() -> None:
        def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            sock = writer.get_extra_info("socket")
            seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(accepted, sock=listener)
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.01)
        writer.close()
        server.close()
        await server.wait_closed()

    asyncio.run(main())
    assert seen and seen[0] != 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"text": "a",}', "the body is not valid JSON: Expecting property name"),
        (b"[1, 2]", "body: expected a JSON object, got an array"),
        (b'"a note"', "body: expected a JSON object, got a string"),
    ],
)
def test_a_body_that_is_not_an_object_says_what_and_where(
    live_server: LiveServer, body: bytes, message: str
) -> None:
    with live_server.client() as http:
        answer = http.post("/add", content=body, headers={"Content-Type": "application/json"})
        error = assert_error(answer, 422, "invalid_input")
        assert error["message"].startswith(message), error["message"]


def test_uris_are_nfc_and_nul_is_refused_in_names_and_dropped_in_text(
    live_server: LiveServer,
) -> None:
    """Issue 35.4: the NFC and NFD spellings of one uri made two documents, and NUL was
    stored in uris, titles and tags."""
    composed, decomposed = "notes/caf\u00e9.md", "notes/cafe\u0301.md"
    with live_server.client() as http:
        note = {"title": "Cafe", "content": "# Cafe\n\nthe espresso machine"}
        first = http.post("/ingest/markdown", json={**note, "uri": decomposed}).json()
        again = http.post("/ingest/markdown", json={**note, "uri": composed}).json()
        assert (first["status"], again["status"], again["id"]) == (
            "created",
            "duplicate",
            first["id"],
        )
        for spelling in (composed, decomposed):
            found = http.get("/documents", params={"uri": spelling}).json()
            assert (found["id"], found["uri"]) == (first["id"], composed)
        for field, body in [
            ("uri", {**note, "uri": "notes/a\x00b.md"}),
            ("title", {**note, "uri": "notes/t.md", "title": "a\x00b"}),
        ]:
            error = assert_error(http.post("/ingest/markdown", json=body), 400, "invalid_input")
            assert error["message"].startswith(f"{field} ") and "NUL" in error["message"]
        tagged = http.post("/add", json={"text": "a memo", "tags": ["ok", "b\x00d"]})
        assert "tag 'b\\x00d' holds a NUL" in assert_error(tagged, 400, "invalid_input")["message"]
        written = http.post("/ingest/markdown", json={**note, "uri": "n/z.md", "content": "x\x00y"})
        doc = http.get(f"/documents/{written.json()['id']}").json()
        assert doc["content"] == "xy"


def test_a_huge_url_and_json_nested_too_deep_are_refused_in_the_error_shape(
    live_server: LiveServer,
) -> None:
    """Issue 35.5: a 1 MB URL got uvicorn's plain-text 400, and JSON nested past Python's
    parser a generic 'error parsing the body'. Both name their limit."""
    host, port = live_server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as raw:
        # 80 kB of the URL: the server answers once it holds over its limit, then closes
        # (what else a client sends after that is reset, and can take the answer with it)
        raw.sendall(b"GET /search?q=" + b"a" * 80_000)
        answer = b""
        while piece := raw.recv(65536):
            answer += piece
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ") and b"content-type: application/json" in head
    error = orjson.loads(body)["error"]
    assert error["code"] == "invalid_input"
    assert "over the limit of 65,536 bytes" in error["message"]
    with live_server.client() as http:
        deep = b'{"content": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        nested = http.post(
            "/ingest/markdown", content=deep, headers={"content-type": "application/json"}
        )
        message = assert_error(nested, 400, "invalid_input")["message"]
        assert "nested too deeply" in message and "at most 32 levels" in message
        assert http.get("/health").status_code == 200  # the server goes on answering


def test_a_batch_that_repeats_a_note_writes_it_once(live_server: LiveServer) -> None:
    """Issue 35.7: two notes of the same content without a uri (the same derived uri) were
    refused, though the document allows them: the second is a duplicate of the first, as if
    sent after it. One uri with two contents is still refused."""
    note = {"title": "Twice", "content": "# Twice\n\nthe same words"}
    with live_server.client() as http:
        answer = http.post("/ingest/markdown/batch", json={"documents": [note, note]}).json()
        first, second = answer["results"]
        assert (first["status"], second["status"]) == ("created", "duplicate")
        assert second["id"] == first["id"] and answer["chunks"] == first["chunks"] == 1
        other = {**note, "content": "# Twice\n\nother words"}
        clash = [{**note, "uri": "t.md"}, {**other, "uri": "t.md"}]
        refused = http.post("/ingest/markdown/batch", json={"documents": clash})
        message = assert_error(refused, 400, "invalid_input")["message"]
        assert "documents 1 and 2 of the batch have the same uri 't.md'" in message


def test_names_declare_that_they_hold_no_nul(live_server: LiveServer) -> None:
    """Issue 35.7: the document did not say that a name may not hold a NUL, which the server
    refuses (issue 35.4)."""
    with live_server.client() as http:
        schemas = http.get("/openapi.json").json()["components"]["schemas"]
    assert schemas["MemoryIn"]["properties"]["tags"]["items"]["pattern"] == "^[^\\x00]*$"
    for model, field in [("MarkdownIn", "uri"), ("MarkdownIn", "title"), ("MemoryIn", "source")]:
        declared = schemas[model]["properties"][field]
        patterns = [declared.get("pattern")] + [s.get("pattern") for s in declared.get("anyOf", [])]
        assert "^[^\\x00]*$" in patterns, (model, field, declared)


def test_a_number_with_no_fraction_is_an_integer(live_server: LiveServer) -> None:
    """Issue 35.7: JSON Schema counts 901.0 as an integer, and the server refused it."""
    with live_server.client() as http:
        answer = http.post("/recall", json={"query": "deploy", "k": 3.0, "budget_tokens": 2e2})
        assert answer.status_code == 200, answer.text
        assert_error(http.post("/recall", json={"query": "x", "k": 2.5}), 422, "invalid_input")
        assert_error(http.post("/recall", json={"query": "x", "k": "3"}), 422, "invalid_input")
        assert_error(http.post("/recall", json={"query": "x", "k": 0.0}), 422, "invalid_input")


def test_a_conversation_refuses_nul_in_its_session_id_and_drops_it_in_turns(
    live_server: LiveServer,
) -> None:
    """Issue 35.4, for conversations: the session id makes the document's uri."""
    turns = [{"role": "user", "content": "the deploy\x00 key rotates"}]
    with live_server.client() as http:
        bad = {"sessions": [{"id": "s\x001", "turns": turns}]}
        error = assert_error(http.post("/ingest/conversation", json=bad), 400, "invalid_input")
        assert error["message"].startswith("session id 's\\x001' holds a NUL")
        written = http.post(
            "/ingest/conversation", json={"sessions": [{"id": "s1", "turns": turns}]}
        )
        assert written.status_code == 200, written.text
        hits = http.get("/search", params={"q": "deploy key rotates"}).json()["hits"]
        assert [h["text"] for h in hits if h["uri"].endswith("/s1")] == [
            "user: the deploy key rotates"
        ]
