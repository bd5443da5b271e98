"""Conversations (issue 35.1): a session's chunks and their context are what the old quadratic
code made, byte for byte, at a cost linear in the turns; and a session over the cap of turns
is refused, over HTTP with a 413 that names the cap and the session."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nexusbrain.brain import Brain
from nexusbrain.clock import FrozenClock
from nexusbrain.config import MAX_SESSION_TURNS, Limits, Profile, ServerSettings, Settings
from nexusbrain.dates import day_tokens, stamp_day
from nexusbrain.errors import InvalidInput, TooLarge
from nexusbrain.ingest.conversation import (
    CONTEXT_TURNS,
    Session,
    Turn,
    check_json_sizes,
    prepare_session,
    sessions_from_json,
)

from .conftest import LiveServer, _serve, free_port
from .test_api import assert_error

serving = contextlib.contextmanager(_serve)


def reference_chunks(
    session: Session, roles: frozenset[str] | None
) -> list[tuple[str, int, int, int, int, str, str]]:
    """(text, char span, line span, unit, context) of each chunk, as the code before issue 35
    made them: for each turn, a scan of every turn before and after it."""
    lines = [t.content.replace("\r\n", "\n").replace("\r", "\n") for t in session.turns]
    parts = [
        f"{t.role.strip() or 'unknown'}: {text.strip()}"
        for t, text in zip(session.turns, lines, strict=True)
    ]
    shown = [
        bool(t.content.strip()) and (roles is None or t.role.strip().lower() in roles)
        for t in session.turns
    ]
    out = []
    for index, (turn, block) in enumerate(zip(session.turns, parts, strict=True)):
        start = sum(len(p) + 2 for p in parts[:index])
        line = 1 + sum(p.count("\n") + 2 for p in parts[:index])
        if not shown[index]:
            continue
        before = [p for p, v in zip(parts[:index], shown[:index], strict=True) if v]
        after = [p for p, v in zip(parts[index + 1 :], shown[index + 1 :], strict=True) if v]
        context = "\n".join(before[-CONTEXT_TURNS:] + after[:CONTEXT_TURNS])
        when = turn.timestamp or session.timestamp
        day = stamp_day(when) if when else None
        if day:
            context = "\n".join([context, *day_tokens(day)])
        unit = turn.id or f"{session.id}:{index}"
        end = start + len(block)
        out.append((block, start, end, line, line + block.count("\n"), unit, context))
    return out


ROLES = st.sampled_from(["user", "assistant", "User ", "system", "Ann", " "])
CONTENT = st.sampled_from(["", "  ", "hi", "a\nb", "x\r\ny\rz", " yes, last Friday ", "é 中文"])
TURNS = st.builds(
    Turn,
    role=ROLES,
    content=CONTENT,
    timestamp=st.sampled_from([None, "2022-11-20T10:00:00Z"]),
    id=st.sampled_from([None, "D1:1"]),
)


@settings(max_examples=300, deadline=None)
@given(
    turns=st.lists(TURNS, min_size=1, max_size=14).filter(
        lambda ts: any(t.content.strip() for t in ts)
    ),
    timestamp=st.sampled_from([None, "2022-11-09T13:56:00"]),
    roles=st.sampled_from([None, frozenset({"user"}), frozenset({"user", "ann"}), frozenset()]),
)
def test_a_sessions_chunks_are_the_quadratic_references_byte_for_byte(
    turns: list[Turn], timestamp: str | None, roles: frozenset[str] | None
) -> None:
    session = Session("s1", tuple(turns), timestamp=timestamp)
    prepared = prepare_session(session, domain="d", index_roles=roles)
    got = [
        (c.text, c.char_start, c.char_end, c.line_start, c.line_end, c.unit, c.context)
        for c in prepared.chunks
    ]
    assert got == reference_chunks(session, roles)
    assert [c.ordinal for c in prepared.chunks] == list(range(len(got)))
    for chunk in prepared.chunks:
        assert prepared.draft.content[chunk.char_start : chunk.char_end] == chunk.text


def test_a_turns_context_is_its_indexed_neighbours_only() -> None:
    turns = [Turn("user" if i % 2 == 0 else "assistant", f"t{i}") for i in range(9)]
    chunks = prepare_session(
        Session("s", tuple(turns)), domain="d", index_roles=frozenset({"user"})
    ).chunks
    assert [c.text for c in chunks] == ["user: t0", "user: t2", "user: t4", "user: t6", "user: t8"]
    assert chunks[2].context == "user: t0\nuser: t2\nuser: t6\nuser: t8"
    assert chunks[0].context == "user: t2\nuser: t4"


def test_a_long_session_costs_time_linear_in_its_turns() -> None:
    # 32k turns: about half a second linear; the quadratic scan took over half a minute
    session = Session("long", tuple(Turn("user", f"turn {i}") for i in range(32_000)))
    started = time.perf_counter()
    prepared = prepare_session(session, domain="d", max_turns=32_000)
    assert time.perf_counter() - started < 10
    assert prepared.chunks[-1].context == "user: turn 31997\nuser: turn 31998"


def test_a_session_over_the_cap_is_too_large_and_names_the_cap_and_session() -> None:
    assert Limits().max_session_turns == MAX_SESSION_TURNS
    turns = tuple(Turn("user", "hi") for _ in range(4))
    assert len(prepare_session(Session("ok", turns[:3]), domain="d", max_turns=3).chunks) == 3
    with pytest.raises(TooLarge) as caught:
        prepare_session(Session("chat-7", turns), domain="d", max_turns=3)
    assert "'chat-7'" in caught.value.message and "limit of 3 turns" in caught.value.message


def test_json_sessions_are_counted_before_any_turn_is_read() -> None:
    # the first session's bad turn would be an InvalidInput: the second's count comes first
    bad = {"id": "a", "turns": [{"role": "user"}]}
    over = {"id": "b", "turns": [None] * 4}
    with pytest.raises(TooLarge) as caught:
        sessions_from_json([bad, over], max_turns=3)
    assert "sessions[1] (b)" in caught.value.message and "limit of 3 turns" in caught.value.message
    with pytest.raises(InvalidInput):
        sessions_from_json([bad, {"id": "b", "turns": [None] * 3}], max_turns=3)
    # before any other check (as a request body's validation may call it): anything goes
    check_json_sizes({"not": "a list"}, max_turns=3)
    with pytest.raises(TooLarge, match=r"sessions\[2\] \(None\): 4 turns"):
        check_json_sizes(["junk", {"turns": "x"}, {"turns": [1, 2, 3, 4]}], max_turns=3)


def test_a_session_over_the_cap_is_a_413_and_nothing_is_stored(live_server: LiveServer) -> None:
    turns = [{"role": "user", "content": f"turn {i}"} for i in range(MAX_SESSION_TURNS + 1)]
    body = {"sessions": [{"id": "ok", "turns": turns[:2]}, {"id": "huge", "turns": turns}]}
    with live_server.client() as http:
        error = assert_error(http.post("/ingest/conversation", json=body), 413, "too_large")
        assert f"limit of {MAX_SESSION_TURNS} turns" in error["message"]
        assert "(huge)" in error["message"]
        assert http.get("/stats").json()["documents"] == 0
        body = {"sessions": [{"id": "full", "turns": turns[:MAX_SESSION_TURNS]}]}
        [result] = http.post("/ingest/conversation", json=body).json()["results"]
        assert result["chunks"] == MAX_SESSION_TURNS


def test_a_body_over_the_cap_is_a_413_before_its_turns_are_read(
    live_server: LiveServer,
) -> None:
    # the last turn is no turn at all: read before the count, the body were a 422
    turns: list[object] = [{"role": "user", "content": "hi"}] * 100_000
    body = {"sessions": [{"id": "huge", "turns": [*turns[:-1], 7]}]}
    with live_server.client() as http:
        error = assert_error(http.post("/ingest/conversation", json=body), 413, "too_large")
        assert f"limit of {MAX_SESSION_TURNS} turns" in error["message"]
        schema = http.get("/openapi.json").json()["components"]["schemas"]
        assert schema["SessionIn"]["properties"]["turns"]["maxItems"] == MAX_SESSION_TURNS


@pytest.mark.parametrize("cap", [3, MAX_SESSION_TURNS + 5])
def test_the_body_counts_against_the_serving_brains_cap(
    tmp_path: Path, clock: FrozenClock, cap: int
) -> None:
    turns = [{"role": "user", "content": f"turn {i}"} for i in range(cap + 1)]
    limits = Limits(max_session_turns=cap)
    settings = Settings(db=tmp_path / "b.db", embedder=Profile.HASHING, limits=limits)
    with (
        Brain.open(settings=settings, clock=clock) as brain,
        serving(brain, ServerSettings(port=free_port())) as server,
        server.client() as http,
    ):
        over = {"sessions": [{"id": "s", "turns": [*turns[:-1], None]}]}
        error = assert_error(http.post("/ingest/conversation", json=over), 413, "too_large")
        assert f"limit of {cap} turns" in error["message"]
        if cap > MAX_SESSION_TURNS:  # over the default, within this brain's cap: stored
            within = {"sessions": [{"id": "s", "turns": turns[:-1]}]}
            answer = http.post("/ingest/conversation", json=within)
            assert answer.status_code == 200, answer.text
            assert answer.json()["results"][0]["chunks"] == cap
