"""Conversations: sessions of turns become one document each, with one chunk per turn (pure).

A session is rendered as a transcript, one `speaker: text` block per turn separated by a blank
line. Each turn's chunk spans exactly its block, so a turn hit cites its lines, and the session
document is the session-level unit (best chunk per document). A turn keeps its own id (for
example a LoCoMo dia_id) as the chunk's `unit`. A turn with a time (its own, or its session's)
is indexed with that day's and month's tokens (nexusbrain/dates.py), so a question that names
the day finds it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nexusbrain.clock import parse_time
from nexusbrain.config import MAX_SESSION_TURNS
from nexusbrain.dates import day_tokens, stamp_day
from nexusbrain.errors import InvalidInput, TooLarge
from nexusbrain.ingest.documents import Prepared
from nexusbrain.records import ChunkDraft, DocumentDraft, DocumentKind

TURN_SEPARATOR = "\n\n"
CONTEXT_TURNS = 2  # turns before and after a turn indexed as its context (docs/tuning.md)


@dataclass(frozen=True, slots=True)
class Turn:
    role: str
    content: str
    timestamp: str | None = None
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    turns: tuple[Turn, ...]
    conversation: str | None = None
    timestamp: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


def session_uri(session: Session) -> str:
    return f"conversation://{session.conversation or 'default'}/{session.id}"


def prepare_session(
    session: Session,
    *,
    domain: str,
    index_roles: frozenset[str] | None = None,
    max_turns: int = MAX_SESSION_TURNS,
) -> Prepared:
    """The session document and one chunk per indexed turn.

    `index_roles` (lower-case) limits which turns become chunks, as LongMemEval indexes user
    turns only; every turn is still part of the document's text. TooLarge over `max_turns`
    (Limits.max_session_turns)."""
    if not session.id.strip():
        raise InvalidInput("conversation session: 'id' must not be empty")
    _check_turns(len(session.turns), repr(session.id), max_turns)
    if not any(t.content.strip() for t in session.turns):
        raise InvalidInput(f"conversation session {session.id!r}: has no turn with content")
    parts = [
        f"{t.role.strip() or 'unknown'}: {_one_line_breaks(t.content).strip()}"
        for t in session.turns
    ]
    shown = [i for i, t in enumerate(session.turns) if _indexed(t, index_roles)]
    chunks: list[ChunkDraft] = []
    offset, line = 0, 1
    for index, (turn, block) in enumerate(zip(session.turns, parts, strict=True)):
        if index:
            offset += len(TURN_SEPARATOR)
            line += TURN_SEPARATOR.count("\n")
        if _indexed(turn, index_roles):
            around = _around(parts, shown, len(chunks))
            chunks.append(
                _turn_chunk(session, turn, index, len(chunks), block, offset, line, around)
            )
        offset += len(block)
        line += block.count("\n")
    content = TURN_SEPARATOR.join(parts)
    return Prepared(_session_draft(session, domain, content, index_roles), tuple(chunks), {})


def _around(parts: list[str], shown: list[int], position: int) -> str:
    """The indexed turns just before and after a turn: indexed with it as context, since a
    short answer ("yes, last Friday") only makes sense next to the question it answers. Turns
    of roles that are not indexed (LongMemEval's assistant turns) never leak in as context.
    `shown` holds the indexes of the indexed turns in order, and the turn is
    `shown[position]`: its neighbours are a slice away, so a session costs time linear in its
    turns."""
    before = shown[max(0, position - CONTEXT_TURNS) : position]
    after = shown[position + 1 : position + 1 + CONTEXT_TURNS]
    return "\n".join(parts[i] for i in before + after)


def _check_turns(count: int, session: str, max_turns: int) -> None:
    """TooLarge when a session has more than `max_turns` turns."""
    if count > max_turns:
        raise TooLarge(
            f"conversation session {session}: {count} turns is over the limit of {max_turns} "
            f"turns a session (max_session_turns): split it into sessions of at most "
            f"{max_turns} turns"
        )


def _one_line_breaks(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _indexed(turn: Turn, roles: frozenset[str] | None) -> bool:
    if not turn.content.strip():
        return False
    return roles is None or turn.role.strip().lower() in roles


def _turn_chunk(
    session: Session,
    turn: Turn,
    index: int,
    ordinal: int,
    block: str,
    offset: int,
    line: int,
    context: str,
) -> ChunkDraft:
    meta: dict[str, Any] = {"role": turn.role, "turn": index}
    when = turn.timestamp or session.timestamp
    day = stamp_day(when) if when else None
    if when:
        meta["timestamp"] = when
    if day:
        context = "\n".join([context, *day_tokens(day)])
    return ChunkDraft(
        ordinal=ordinal,
        char_start=offset,
        char_end=offset + len(block),
        line_start=line,
        line_end=line + block.count("\n"),
        heading_path=(f"Session {session.id}",),
        text=block,
        unit=turn.id or f"{session.id}:{index}",
        meta=meta,
        context=context,
    )


def _session_draft(
    session: Session, domain: str, content: str, roles: frozenset[str] | None
) -> DocumentDraft:
    # the times are part of what is indexed (the day tokens), not of the content
    times = [session.timestamp or "", *(t.timestamp or "" for t in session.turns)]
    hashed = content + "\x00roles=" + ",".join(sorted(roles or ())) + "\x00times=" + ",".join(times)
    metadata: dict[str, Any] = {"session": session.id, **session.metadata}
    if session.conversation:
        metadata["conversation"] = session.conversation
    if session.timestamp:
        metadata["timestamp"] = session.timestamp
    title = f"Session {session.id}" + (f" ({session.timestamp})" if session.timestamp else "")
    return DocumentDraft(
        uri=session_uri(session),
        title=title,
        domain=domain,
        kind=DocumentKind.CONVERSATION,
        revision=hashlib.sha256(hashed.encode("utf-8")).hexdigest(),
        content=content,
        metadata=metadata,
    )


def sessions_from_json(
    sessions: Sequence[Mapping[str, Any]], *, max_turns: int = MAX_SESSION_TURNS
) -> list[Session]:
    """Sessions from plain JSON objects: `{id, conversation?, timestamp?, turns: [{role|speaker,
    content|text, timestamp?, id?}]}`, timestamps in ISO-8601. Errors name the session and
    turn. Every session's turns are counted (check_json_sizes) before any is read."""
    check_json_sizes(sessions, max_turns=max_turns)
    return [_session(s, i) for i, s in enumerate(sessions)]


def check_json_sizes(sessions: object, *, max_turns: int = MAX_SESSION_TURNS) -> None:
    """TooLarge when a session of JSON sessions, not yet checked in any other way, has more
    than `max_turns` turns. It only counts, so a body over the cap is refused in the time it
    takes to count, before its turns become objects: an HTTP body's validation can call it
    first of all."""
    if not isinstance(sessions, list | tuple):
        return
    for index, raw in enumerate(sessions):
        turns = raw.get("turns") if isinstance(raw, Mapping) else None
        if isinstance(turns, list):
            _check_turns(len(turns), f"sessions[{index}] ({raw.get('id')})", max_turns)


def _session(raw: Mapping[str, Any], index: int) -> Session:
    sid = raw.get("id")
    if not isinstance(sid, str | int) or not str(sid).strip():
        raise InvalidInput(f"sessions[{index}]: needs an 'id' (string)")
    turns = raw.get("turns")
    if not isinstance(turns, list) or not turns:
        raise InvalidInput(f"sessions[{index}] ({sid}): needs a non-empty 'turns' list")
    return Session(
        id=str(sid),
        turns=tuple(_turn(t, index, j) for j, t in enumerate(turns)),
        conversation=_opt_str(raw.get("conversation")),
        timestamp=_timestamp(raw.get("timestamp"), f"sessions[{index}]"),
    )


def _turn(raw: Any, session: int, index: int) -> Turn:
    where = f"sessions[{session}].turns[{index}]"
    if not isinstance(raw, Mapping):
        raise InvalidInput(f"{where}: must be an object")
    role = raw.get("role", raw.get("speaker"))
    content = raw.get("content", raw.get("text"))
    if not isinstance(role, str) or not role.strip():
        raise InvalidInput(f"{where}: needs a 'role' or 'speaker' (string)")
    if not isinstance(content, str):
        raise InvalidInput(f"{where}: needs a 'content' (string)")
    return Turn(
        role=role,
        content=content,
        timestamp=_timestamp(raw.get("timestamp"), where),
        id=_opt_str(raw.get("id")),
    )


def _timestamp(value: Any, where: str) -> str | None:
    """An ISO-8601 time, kept as given (None when absent)."""
    if value is None:
        return None
    try:
        if isinstance(value, str):
            parse_time(value)
            return value
    except ValueError:
        pass
    raise InvalidInput(
        f"{where}: timestamp={value!r} is not an ISO-8601 time (e.g. 2025-01-31T09:30:00Z)"
    )


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)
