"""LongMemEval retrieval (Wu et al., ICLR 2025), following its official retrieval code
(xiaowu0162/LongMemEval, src/retrieval/run_retrieval.py and eval_utils.py).

Conventions kept from the official code:

* Each question has its own haystack. It goes into its own scratch workspace; only user turns
  are indexed. Abstention questions (``_abs`` in the id) are skipped and counted.
* Corpus ids. Turn: ``<session_id>_<n>``, n the 1-based position of the turn among *all* turns
  of the session. In a session whose id contains ``answer``, a user turn without ``has_answer``
  gets ``answer`` replaced by ``noans``. Session: the session id, or its ``noans`` form when no
  user turn has ``has_answer``. The relevant ids are the corpus ids that contain ``answer``.
* Metrics ``recall_any@k``, ``recall_all@k`` and ``ndcg_any@k`` for k in 1, 3, 5, 10, 30, 50.
  A turn run also scores sessions: turn ids lose their last ``_<n>``, and k widens until the
  top holds k distinct sessions (or the corpus runs out), exactly as the official turn runs do.
* Output: one JSON line per question, the question's fields plus ``retrieval_results``:
  ``{query, ranked_items: [{corpus_id, text, timestamp}], metrics: {session, turn}}``.

Where we differ, by design: a session is retrieved as its best user turn (the brain's
session-level unit; the official session runs index the user turns joined as one text), and
``ranked_items`` holds what the brain returned (every item that matched the query, up to the
brain's k limit), not a full permutation of the corpus.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import IO, Any

import orjson

from nexusbrain.errors import InvalidInput
from nexusbrain.evals.metrics import (
    mean,
    ndcg_any_at_k,
    recall_all_at_k,
    recall_any_at_k,
)
from nexusbrain.evals.runs import TOP_SHOWN, EvalRun, QueryScore, run_config
from nexusbrain.evals.targets import SearchRequest, WorkspaceFactory
from nexusbrain.ingest.conversation import Session, Turn
from nexusbrain.records import Progress

KS = (1, 3, 5, 10, 30, 50)
MAX_DEPTH = 1000  # the brain's largest k
REQUIRED = (
    "question_id",
    "question_type",
    "question",
    "question_date",
    "haystack_session_ids",
    "haystack_dates",
    "haystack_sessions",
    "answer_session_ids",
)


class Granularity(StrEnum):
    TURN = "turn"
    SESSION = "session"


@dataclass(frozen=True, slots=True)
class CorpusItem:
    corpus_id: str
    session_id: str  # the haystack session it came from
    text: str
    timestamp: str


def turn_corpus(
    session_id: str, turns: Sequence[Mapping[str, Any]], timestamp: str
) -> list[CorpusItem]:
    """The user turns of one session as official turn-level corpus items."""
    items = []
    for index, turn in enumerate(turns, start=1):
        if turn.get("role") != "user":
            continue
        corpus_id = f"{session_id}_{index}"
        if "answer" in session_id and not turn.get("has_answer", False):
            corpus_id = corpus_id.replace("answer", "noans")
        items.append(CorpusItem(corpus_id, session_id, str(turn.get("content", "")), timestamp))
    return items


def session_corpus_id(session_id: str, turns: Sequence[Mapping[str, Any]]) -> str:
    """The official session-level corpus id."""
    users = [t for t in turns if t.get("role") == "user"]
    if "answer" in session_id and not any(t.get("has_answer", False) for t in users):
        return session_id.replace("answer", "noans")
    return session_id


def strip_turn(corpus_id: str) -> str:
    """A turn corpus id without its last ``_<n>``: its (official) session id."""
    return corpus_id.rsplit("_", 1)[0] if "_" in corpus_id else ""


def score_ranking(
    ranked: Sequence[str], corpus: Sequence[str], ks: Sequence[int] = KS
) -> dict[str, float]:
    """Official metrics of one ranking of corpus ids; relevant = ids containing "answer"."""
    relevant = {doc for doc in corpus if "answer" in doc}
    out: dict[str, float] = {}
    for k in ks:
        out[f"recall_any@{k}"] = recall_any_at_k(ranked, relevant, k)
        out[f"recall_all@{k}"] = recall_all_at_k(ranked, relevant, k)
        out[f"ndcg_any@{k}"] = ndcg_any_at_k(ranked, relevant, k, corpus=corpus)
    return out


def score_turns_as_sessions(
    ranked: Sequence[str], corpus: Sequence[str], ks: Sequence[int] = KS
) -> dict[str, float]:
    """Official ``evaluate_retrieval_turn2session``: session metrics of a turn ranking, with k
    widened until the top holds k distinct sessions."""
    sessions = [strip_turn(doc) for doc in ranked]
    corpus_sessions = [strip_turn(doc) for doc in corpus]
    relevant = {strip_turn(doc) for doc in corpus if "answer" in doc}
    out: dict[str, float] = {}
    for k in ks:
        wide = k
        while wide <= len(corpus_sessions) and len(set(sessions[:wide])) < k:
            wide += 1
        out[f"recall_any@{k}"] = recall_any_at_k(sessions, relevant, wide)
        out[f"recall_all@{k}"] = recall_all_at_k(sessions, relevant, wide)
        out[f"ndcg_any@{k}"] = ndcg_any_at_k(sessions, relevant, wide, corpus=corpus_sessions)
    return out


def load_longmemeval(path: Path) -> list[dict[str, Any]]:
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise InvalidInput(f"cannot read LongMemEval file {str(path)!r}: {exc}") from None
    if not isinstance(data, list):
        raise InvalidInput(f"{path}: expected a JSON list of LongMemEval questions")
    for index, entry in enumerate(data):
        missing = [f for f in REQUIRED if not isinstance(entry, dict) or f not in entry]
        if missing:
            raise InvalidInput(f"{path}: question {index} lacks field(s): {', '.join(missing)}")
    return data


@dataclass(frozen=True, slots=True)
class Haystack:
    """One question's corpus at the run's granularity, and its sessions to ingest."""

    corpus: tuple[CorpusItem, ...]
    sessions: tuple[Session, ...]
    by_turn: Mapping[str, CorpusItem]  # turn corpus id -> the item it stands for


def haystack(entry: Mapping[str, Any], granularity: Granularity) -> Haystack:
    turns: list[CorpusItem] = []
    sessions: list[Session] = []
    by_turn: dict[str, CorpusItem] = {}
    for sid, date, raw in zip(
        entry["haystack_session_ids"],
        entry["haystack_dates"],
        entry["haystack_sessions"],
        strict=True,
    ):
        session_id, stamp = str(sid), str(date)
        items = turn_corpus(session_id, raw, stamp)
        if not any(item.text.strip() for item in items):
            continue
        turns.extend(items)
        sessions.append(_session(entry, session_id, stamp, raw, items))
        if granularity is Granularity.SESSION:
            joined = " ".join(item.text for item in items)
            whole = CorpusItem(session_corpus_id(session_id, raw), session_id, joined, stamp)
            by_turn.update((item.corpus_id, whole) for item in items)
        else:
            by_turn.update((item.corpus_id, item) for item in items)
    corpus = (
        tuple(turns) if granularity is Granularity.TURN else tuple(dict.fromkeys(by_turn.values()))
    )
    return Haystack(corpus, tuple(sessions), by_turn)


def _session(
    entry: Mapping[str, Any],
    session_id: str,
    stamp: str,
    raw: Sequence[Any],
    items: list[CorpusItem],
) -> Session:
    """Every turn goes in (the transcript is whole); user turns carry their corpus id."""
    ids = iter(item.corpus_id for item in items)
    turns = tuple(
        Turn(
            role=str(t.get("role", "unknown")),
            content=str(t.get("content", "")),
            id=next(ids) if t.get("role") == "user" else f"{session_id}_{n}",
        )
        for n, t in enumerate(raw, start=1)
    )
    return Session(
        id=session_id, turns=turns, conversation=str(entry["question_id"]), timestamp=stamp
    )


def retrieve(
    entry: Mapping[str, Any],
    stack: Haystack,
    factory: WorkspaceFactory,
    request: SearchRequest,
    granularity: Granularity,
) -> tuple[list[CorpusItem], Mapping[str, Any]]:
    """The question's ranked corpus items, from a fresh workspace holding its haystack."""
    scope = f"conversation://{entry['question_id']}/"
    depth = max(1, min(MAX_DEPTH, len(stack.corpus)))
    wanted = SearchRequest(
        k=depth, mode=request.mode, best_per_document=granularity is Granularity.SESSION
    )
    with factory() as workspace:
        workspace.add_sessions(stack.sessions, ["user"])
        results = workspace.search(str(entry["question"]), wanted, path_prefix=scope)
        described = workspace.describe()
    ranked = [
        stack.by_turn[r.unit] for r in results if r.unit is not None and r.unit in stack.by_turn
    ]
    return list(dict.fromkeys(ranked)), described


def evaluate_entry(
    entry: Mapping[str, Any],
    stack: Haystack,
    ranked: Sequence[CorpusItem],
    granularity: Granularity,
) -> dict[str, Any]:
    """The official output line for one question."""
    corpus_ids = [item.corpus_id for item in stack.corpus]
    ranked_ids = [item.corpus_id for item in ranked]
    metrics: dict[str, dict[str, float]] = {"session": {}, "turn": {}}
    metrics[granularity.value] = score_ranking(ranked_ids, corpus_ids)
    if granularity is Granularity.TURN:
        metrics["session"] = score_turns_as_sessions(ranked_ids, corpus_ids)
    fields = [*REQUIRED[:4], "answer", *REQUIRED[4:]]
    out = {f: entry[f] for f in fields if f in entry}
    out["retrieval_results"] = {
        "query": entry["question"],
        "ranked_items": [
            {"corpus_id": i.corpus_id, "text": i.text, "timestamp": i.timestamp} for i in ranked
        ],
        "metrics": metrics,
    }
    return out


def run_longmemeval(
    path: Path,
    factory: WorkspaceFactory,
    request: SearchRequest,
    output: IO[bytes],
    *,
    granularity: Granularity = Granularity.TURN,
    split: str = "dev",
    progress: Progress | None = None,
) -> EvalRun:
    """Retrieve for every non-abstention question, write its log line, and average."""
    entries = load_longmemeval(path)
    kept = [e for e in entries if "_abs" not in str(e["question_id"])]
    started = time.perf_counter()
    scores: list[QueryScore] = []
    levels: dict[str, list[dict[str, float]]] = {"session": [], "turn": []}
    described: Mapping[str, Any] = {}
    for done, entry in enumerate(kept, start=1):
        stack = haystack(entry, granularity)
        ranked, described = retrieve(entry, stack, factory, request, granularity)
        line = evaluate_entry(entry, stack, ranked, granularity)
        output.write(orjson.dumps(line) + b"\n")
        result = line["retrieval_results"]["metrics"]
        for level, values in result.items():
            if values:
                levels[level].append(values)
        scores.append(_query_score(entry, stack, ranked, result[granularity.value], split))
        if progress is not None:
            progress("searching", done, len(kept))
    groups = {level: _averages(rows) for level, rows in levels.items() if rows}
    config = run_config(
        suite="longmemeval",
        dataset=str(path),
        split=split,
        request=request,
        target=described,
        metrics=[],
        granularity=granularity.value,
        ks=list(KS),
    )
    config["metrics"] = sorted(groups.get(granularity.value, {}))
    counts = {
        "questions": len(entries),
        "scored": len(kept),
        "skipped_abstention": len(entries) - len(kept),
    }
    seconds = {"total": time.perf_counter() - started}
    metrics = groups.get(granularity.value, {})
    return EvalRun(
        "longmemeval",
        split,
        metrics,
        tuple(scores),
        config,
        {f"level {k}": v for k, v in groups.items()},
        counts,
        seconds,
    )


def _averages(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    return {key: mean(row[key] for row in rows) for key in rows[0]}


def _query_score(
    entry: Mapping[str, Any],
    stack: Haystack,
    ranked: Sequence[CorpusItem],
    scores: Mapping[str, float],
    split: str,
) -> QueryScore:
    relevant = sorted({i.corpus_id for i in stack.corpus if "answer" in i.corpus_id})
    return QueryScore(
        id=str(entry["question_id"]),
        query=str(entry["question"]),
        split=split,
        relevant=tuple(relevant),
        top=tuple(i.corpus_id for i in ranked[:TOP_SHOWN]),
        scores=dict(scores),
        group=str(entry["question_type"]),
    )
