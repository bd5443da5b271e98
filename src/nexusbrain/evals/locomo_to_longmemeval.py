"""Convert LoCoMo conversations into the official LongMemEval JSON format (pure).

The real LongMemEval data is not available offline; this gives the LongMemEval suite real
conversations to run on. Each LoCoMo question with evidence becomes one LongMemEval question
whose haystack is its whole conversation:

* ``question_id`` is ``<sample_id>_q<n>``; adversarial questions (category 5: the answer is not
  in the conversation) get the ``_abs`` suffix LongMemEval uses for abstention, so the suite
  skips them. ``question_type`` is the LoCoMo category name.
* Sessions are ``<sample_id>_session_<n>``, prefixed ``answer_`` when they hold the question's
  evidence, so the ids carry ``answer`` the way the official data marks it; ``has_answer`` is
  true on exactly the evidence turns (normalised as in the LoCoMo suite).
* Both speakers are people, so every turn has role ``user`` (LongMemEval indexes user turns
  only) and its content starts with the speaker's name: ``Caroline: ...``. A shared photo's
  caption is kept as in the LoCoMo suite.
* Dates become LongMemEval's ``2023/05/08 (Mon) 13:56``; ``question_date`` is the last
  session's date.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from nexusbrain.evals.locomo import (
    ADVERSARIAL,
    CATEGORIES,
    LOCOMO_DATE,
    LocomoQuestion,
    LocomoSample,
    normalise_evidence,
)

_LONGMEMEVAL_DATE = "%Y/%m/%d (%a) %H:%M"  # "2023/05/08 (Mon) 13:56"


def longmemeval_date(text: str | None) -> str:
    """A LoCoMo session date in LongMemEval's format; unparseable text is kept as it is."""
    if not text:
        return ""
    try:
        return datetime.strptime(text.strip(), LOCOMO_DATE).strftime(_LONGMEMEVAL_DATE)
    except ValueError:
        return text


def convert_sample(sample: LocomoSample, *, captions: bool = True) -> list[dict[str, Any]]:
    """One LongMemEval question per LoCoMo question that has evidence in the conversation."""
    known = sample.dia_ids()
    out = []
    for question in sample.questions:
        evidence = set(normalise_evidence(question.evidence, known).ids)
        if evidence and question.question.strip():
            out.append(_question(sample, question, evidence, captions))
    return out


def convert(samples: Sequence[LocomoSample], *, captions: bool = True) -> list[dict[str, Any]]:
    return [q for sample in samples for q in convert_sample(sample, captions=captions)]


def _question(
    sample: LocomoSample, question: LocomoQuestion, evidence: set[str], captions: bool
) -> dict[str, Any]:
    ids, dates, sessions, answers = [], [], [], []
    for session in sample.sessions:
        base = f"{sample.sample_id}_session_{session.number}"
        holds = any(t.dia_id in evidence for t in session.turns)
        session_id = f"answer_{base}" if holds else base
        turns = [
            {
                "role": "user",
                "content": f"{t.speaker}: {t.content(captions)}",
                "has_answer": t.dia_id in evidence,
                "dia_id": t.dia_id,
            }
            for t in session.turns
        ]
        ids.append(session_id)
        dates.append(longmemeval_date(session.date))
        sessions.append(turns)
        if holds:
            answers.append(session_id)
    suffix = "_abs" if question.category == ADVERSARIAL else ""
    return {
        "question_id": f"{sample.sample_id}_q{question.index}{suffix}",
        "question_type": CATEGORIES.get(question.category, "unknown"),
        "question": question.question,
        "answer": question.answer,
        "question_date": dates[-1] if dates else "",
        "haystack_session_ids": ids,
        "haystack_dates": dates,
        "haystack_sessions": sessions,
        "answer_session_ids": answers,
    }
