"""LoCoMo (Maharana et al., ACL 2024): turn-level retrieval over long two-person conversations.

Input is the original `locomo10.json` format: a list of samples, each with a `sample_id`, a
`conversation` (`speaker_a`, `speaker_b`, `session_<n>` turn lists with `speaker`, `dia_id`,
`text` and, for shared photos, `blip_caption`; `session_<n>_date_time`) and `qa` items
(`question`, `answer`, `evidence` dia_ids, `category`).

Conventions (docs/design/evals.md):

* Each conversation goes into its own scratch workspace through the normal conversation ingest
  path: one document per session, one chunk per turn, whose unit is the turn's dia_id. Each
  question is searched within its own conversation only, and results are turn ids.
* A shared photo's BLIP caption is part of its turn's text (``... [shared a photo of ...]``),
  as LoCoMo shows it to models; `captions=False` leaves it out. The image search `query`
  field is never used.
* Evidence ids are normalised: ``D:11:26`` -> ``D11:26``, ``D30:05`` -> ``D30:5``,
  ``D8:6; D9:17`` -> two ids. An id that cannot be parsed (``D``), or names no turn of the
  conversation, is dropped. Each kind is counted. A question left without evidence is skipped
  and counted.
* Metrics are recall@5, recall@10 and nDCG@10 over the evidence turns, averaged over
  categories 1-4 and given per category. Category 5 (adversarial: the answer is not in the
  conversation) is scored but reported apart, never in the averages.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from nexusbrain.errors import InvalidInput
from nexusbrain.evals.metrics import Metric
from nexusbrain.evals.runner import JudgedQuery, calibrated, score_queries
from nexusbrain.evals.runs import EvalRun, QueryScore, grouped, means, run_config
from nexusbrain.evals.targets import Retrieved, SearchRequest, WorkspaceFactory
from nexusbrain.ingest.conversation import Session, Turn
from nexusbrain.records import Progress

CATEGORIES: Mapping[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
ADVERSARIAL = 5
DEFAULT_METRICS = ("recall@5", "recall@10", "ndcg@10")

LOCOMO_DATE = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
_DIA_ID = re.compile(r"D\s*:?\s*0*(\d+)\s*:\s*0*(\d+)")
_SESSION_KEY = re.compile(r"session_(\d+)")


@dataclass(frozen=True, slots=True)
class LocomoTurn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None = None

    def content(self, captions: bool = True) -> str:
        if captions and self.caption:
            return f"{self.text} [shared {self.caption}]"
        return self.text


@dataclass(frozen=True, slots=True)
class LocomoSession:
    number: int
    date: str | None
    turns: tuple[LocomoTurn, ...]


@dataclass(frozen=True, slots=True)
class LocomoQuestion:
    index: int
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]  # raw, as in the file


@dataclass(frozen=True, slots=True)
class LocomoSample:
    sample_id: str
    sessions: tuple[LocomoSession, ...]
    questions: tuple[LocomoQuestion, ...]

    def dia_ids(self) -> set[str]:
        return {t.dia_id for s in self.sessions for t in s.turns}


@dataclass(frozen=True, slots=True)
class Evidence:
    """A question's evidence after normalisation, with what it took to get there."""

    ids: tuple[str, ...]
    normalised: int = 0  # raw entries rewritten into canonical ids
    unparseable: int = 0  # raw entries with no dia_id in them
    unknown: int = 0  # ids naming no turn of the conversation


def canonical_dia_ids(raw: str) -> list[str]:
    """Every ``D<session>:<turn>`` in `raw`, canonical (no stray colons, no leading zeros)."""
    return [f"D{int(s)}:{int(t)}" for s, t in _DIA_ID.findall(raw)]


def normalise_evidence(raw: Sequence[Any], known: set[str]) -> Evidence:
    """Canonical, distinct evidence ids that name turns in `known` (pure)."""
    ids: list[str] = []
    normalised = unparseable = unknown = 0
    for entry in raw:
        found = canonical_dia_ids(str(entry))
        if not found:
            unparseable += 1
            continue
        if found != [str(entry)]:
            normalised += 1
        for dia_id in found:
            if dia_id not in known:
                unknown += 1
            elif dia_id not in ids:
                ids.append(dia_id)
    return Evidence(tuple(ids), normalised, unparseable, unknown)


def load_locomo(path: Path) -> list[LocomoSample]:
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise InvalidInput(f"cannot read LoCoMo file {str(path)!r}: {exc}") from None
    if not isinstance(data, list) or not data:
        raise InvalidInput(f"{path}: expected a list of LoCoMo samples (locomo10.json format)")
    return [_sample(raw, i, path) for i, raw in enumerate(data)]


def _sample(raw: Any, index: int, path: Path) -> LocomoSample:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("conversation"), Mapping):
        raise InvalidInput(f"{path}: sample {index} has no 'conversation' object")
    conversation = raw["conversation"]
    sessions = sorted(
        (
            _session(int(m.group(1)), conversation)
            for key in conversation
            if (m := _SESSION_KEY.fullmatch(key))
        ),
        key=lambda s: s.number,
    )
    questions = [
        LocomoQuestion(
            index=i,
            question=str(q.get("question", "")),
            answer=str(q.get("answer", q.get("adversarial_answer", ""))),
            category=int(q.get("category", 0)),
            evidence=tuple(str(e) for e in q.get("evidence") or ()),
        )
        for i, q in enumerate(raw.get("qa") or [], start=1)
    ]
    return LocomoSample(
        str(raw.get("sample_id", f"sample-{index}")), tuple(sessions), tuple(questions)
    )


def _session(number: int, conversation: Mapping[str, Any]) -> LocomoSession:
    turns: list[LocomoTurn] = []
    for raw in conversation[f"session_{number}"]:
        found = canonical_dia_ids(str(raw.get("dia_id", "")))
        dia_id = found[0] if found else f"D{number}:{len(turns) + 1}"
        caption = raw.get("blip_caption")
        turns.append(
            LocomoTurn(
                dia_id=dia_id,
                speaker=str(raw.get("speaker", "unknown")),
                text=str(raw.get("text", "")),
                caption=str(caption) if caption else None,
            )
        )
    date = conversation.get(f"session_{number}_date_time")
    return LocomoSession(number, str(date) if date else None, tuple(turns))


def session_time(text: str | None) -> str | None:
    """A LoCoMo session date ("1:56 pm on 8 May, 2023") as ISO-8601, the form the ingest
    path reads a time in (naive: LoCoMo gives no time zone); unparseable text is kept."""
    if not text:
        return None
    try:
        return datetime.strptime(text.strip(), LOCOMO_DATE).isoformat()
    except ValueError:
        return text


def sessions_of(sample: LocomoSample, *, captions: bool = True) -> list[Session]:
    """The sample's sessions as the conversation ingest path takes them."""
    return [
        Session(
            id=f"session_{s.number}",
            turns=tuple(
                Turn(role=t.speaker, content=t.content(captions), id=t.dia_id) for t in s.turns
            ),
            conversation=sample.sample_id,
            timestamp=session_time(s.date),
        )
        for s in sample.sessions
        if any(t.content(captions).strip() for t in s.turns)
    ]


@dataclass(frozen=True, slots=True)
class Questions:
    """A sample's scorable questions, and the counts of what normalisation did."""

    queries: tuple[JudgedQuery, ...]
    counts: Mapping[str, int]


def questions_of(sample: LocomoSample, split: str) -> Questions:
    known = sample.dia_ids()
    queries = []
    counts = dict.fromkeys(
        ("normalised_ids", "unparseable_ids", "unknown_ids", "skipped_no_evidence"), 0
    )
    for q in sample.questions:
        evidence = normalise_evidence(q.evidence, known)
        counts["normalised_ids"] += evidence.normalised
        counts["unparseable_ids"] += evidence.unparseable
        counts["unknown_ids"] += evidence.unknown
        if not evidence.ids or not q.question.strip():
            counts["skipped_no_evidence"] += 1
            continue
        queries.append(
            JudgedQuery(
                id=f"{sample.sample_id}:q{q.index}",
                text=q.question,
                judgments=dict.fromkeys(evidence.ids, 1),
                split=split,
                group=f"{q.category} {CATEGORIES.get(q.category, 'unknown')}",
                scope=f"conversation://{sample.sample_id}/",
            )
        )
    return Questions(tuple(queries), counts)


def _turn_id(result: Retrieved) -> str:
    return result.unit or f"chunk:{result.chunk_id}"


def run_locomo(
    path: Path,
    factory: WorkspaceFactory,
    request: SearchRequest,
    metrics: Sequence[Metric],
    *,
    split: str = "dev",
    captions: bool = True,
    progress: Progress | None = None,
) -> EvalRun:
    """Each conversation in its own workspace; its questions searched within it."""
    samples = load_locomo(path)
    prepared = [questions_of(s, split) for s in samples]
    total = sum(len(p.queries) for p in prepared)
    started = time.perf_counter()
    scores: list[QueryScore] = []
    ingesting = searching = 0.0
    described: Mapping[str, Any] = {}
    for sample, questions in zip(samples, prepared, strict=True):
        before = time.perf_counter()
        with factory() as workspace:
            workspace.add_sessions(sessions_of(sample, captions=captions), None)
            ingesting += time.perf_counter() - before
            found, spent = score_queries(
                workspace,
                questions.queries,
                request,
                metrics,
                _turn_id,
                _offset(progress, len(scores), total),
            )
            described = workspace.describe()
        searching += spent
        scores.extend(found)
    averaged = [s for s in scores if not _adversarial(s.group)]
    config = run_config(
        suite="locomo",
        dataset=str(path),
        split=split,
        request=request,
        target=described,
        metrics=metrics,
        captions=captions,
        averaged_categories=[c for c in CATEGORIES if c != ADVERSARIAL],
    )
    return EvalRun(
        suite="locomo",
        split=split,
        metrics=means(averaged, metrics),
        per_query=tuple(scores),
        config=config,
        groups=_category_groups(scores, metrics),
        counts=_counts(samples, prepared, len(averaged), len(scores) - len(averaged)),
        seconds={
            "ingest": ingesting,
            "search": searching,
            "total": time.perf_counter() - started,
        },
        calibration=calibrated(averaged),
    )


def _adversarial(group: str | None) -> bool:
    return (group or "").startswith(f"{ADVERSARIAL} ")


def _offset(progress: Progress | None, done: int, total: int) -> Progress | None:
    if progress is None:
        return None
    return lambda phase, n, _: progress(phase, done + n, total)


def _category_groups(
    scores: Sequence[QueryScore], metrics: Sequence[Metric]
) -> dict[str, dict[str, float]]:
    """Means per category; category 5's name says it is not in the averages."""
    out = {}
    for name, values in grouped(scores, metrics, "category").items():
        if name.startswith(f"category {ADVERSARIAL} "):
            name += " (adversarial: reported apart, not averaged)"
        out[name] = values
    return out


def _counts(
    samples: Sequence[LocomoSample], prepared: Sequence[Questions], scored: int, apart: int
) -> dict[str, int]:
    counts = {
        "conversations": len(samples),
        "questions": sum(len(s.questions) for s in samples),
        "scored": scored,
        "adversarial_reported_apart": apart,
    }
    for key in ("skipped_no_evidence", "normalised_ids", "unparseable_ids", "unknown_ids"):
        counts[key] = sum(p.counts[key] for p in prepared)
    return counts
