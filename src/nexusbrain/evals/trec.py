"""Read TREC runs and qrels, and score runs the way trec_eval (through ir-measures) does.

Conventions, matched against ir-measures 0.4 with its default pytrec_eval backend:

* A run's documents are ordered by score descending, ties broken by docid descending (plain
  string comparison). The rank column, like the ``Q0`` column, is ignored. We use this one order
  for every metric, ``mrr@k`` included; ir-measures computes ``RR@k`` with its MS MARCO provider,
  which breaks ties by docid *ascending*, so on tied scores our ``mrr@k`` can differ from its
  ``RR@k`` (it always equals trec_eval's ``recip_rank`` when that is >= 1/k, else 0).
* Relevant means grade > 0 (trec_eval's default relevance level 1 on integer grades).
  nDCG is graded with gain = grade; grades of 0 or below earn nothing and are left out of the
  ideal ranking.
* The queries scored are exactly the queries in the qrels. A qrels query the run has no entries
  for scores 0.0 on every metric and counts in the mean (ir-measures' default, like
  ``trec_eval -c``); a qrels query with no relevant document also scores 0.0 and counts. Run
  queries absent from the qrels are ignored.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import TypeAlias

from nexusbrain.errors import InvalidInput
from nexusbrain.evals.metrics import Metric, evaluate, mean, parse_metric

Run: TypeAlias = dict[str, list[tuple[str, float]]]
"""qid -> [(docid, score), ...] in file order."""

Qrels: TypeAlias = dict[str, dict[str, int]]
"""qid -> {docid: grade}."""

Source: TypeAlias = str | os.PathLike[str] | Iterable[str]
"""A path (``str`` or ``PathLike``) or an iterable of lines."""


class TrecFormatError(InvalidInput, ValueError):
    """A malformed run or qrels line; also a ValueError."""


class QrelsFormat(StrEnum):
    TREC = "trec"  # qid iter docid rel
    BEIR = "beir"  # query-id<TAB>corpus-id<TAB>score, after a header line


@dataclass(frozen=True)
class RunScores:
    """Scores of one run: ``per_query[qid][metric.key]`` and ``mean[metric.key]``."""

    metrics: tuple[Metric, ...]
    per_query: Mapping[str, Mapping[str, float]]
    mean: Mapping[str, float]


def _numbered_lines(source: Source) -> list[tuple[int, str]]:
    """Non-blank lines with their 1-based line numbers."""
    if isinstance(source, str | os.PathLike):
        lines: Iterable[str] = Path(source).read_text(encoding="utf-8").splitlines()
    else:
        lines = source
    return [(n, line) for n, line in enumerate(lines, start=1) if line.strip()]


def _error(kind: str, lineno: int, problem: str, line: str) -> TrecFormatError:
    return TrecFormatError(f"{kind} line {lineno}: {problem}: {line.strip()!r}")


def _parse_score(lineno: int, text: str, line: str) -> float:
    try:
        score = float(text)
    except ValueError:
        raise _error("run", lineno, f"score {text!r} is not a number", line) from None
    if math.isnan(score):
        raise _error("run", lineno, "score is NaN", line)
    return score


def _parse_run_line(lineno: int, line: str) -> tuple[str, str, float]:
    fields = line.split()
    if len(fields) != 6:
        problem = f"expected 6 fields 'qid Q0 docid rank score tag', got {len(fields)}"
        raise _error("run", lineno, problem, line)
    qid, _q0, docid, _rank, score_text, _tag = fields
    return qid, docid, _parse_score(lineno, score_text, line)


def read_run(source: Source) -> Run:
    """Read a TREC run (``qid Q0 docid rank score tag``); blank lines are skipped.

    Raises :class:`TrecFormatError` (a ValueError) naming the line for a wrong field count, a
    non-numeric or NaN score, or a docid repeated within a query.
    """
    run: Run = {}
    seen: set[tuple[str, str]] = set()
    for lineno, line in _numbered_lines(source):
        qid, docid, score = _parse_run_line(lineno, line)
        if (qid, docid) in seen:
            raise _error("run", lineno, f"docid {docid!r} repeated for query {qid!r}", line)
        seen.add((qid, docid))
        run.setdefault(qid, []).append((docid, score))
    return run


def detect_qrels_format(first_line: str) -> QrelsFormat:
    """TREC qrels have 4 fields a line, BEIR tsv 3."""
    n_fields = len(first_line.split())
    if n_fields == 4:
        return QrelsFormat.TREC
    if n_fields == 3:
        return QrelsFormat.BEIR
    raise TrecFormatError(
        f"cannot tell the qrels format from {first_line.strip()!r}: expected "
        "'qid iter docid rel' (TREC) or 'query-id<TAB>corpus-id<TAB>score' (BEIR)"
    )


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _parse_qrels_line(lineno: int, line: str, fmt: QrelsFormat) -> tuple[str, str, int]:
    fields = line.split()
    if fmt is QrelsFormat.TREC and len(fields) == 4:
        qid, _iteration, docid, grade = fields
    elif fmt is QrelsFormat.BEIR and len(fields) == 3:
        qid, docid, grade = fields
    else:
        shape = "'qid iter docid rel'" if fmt is QrelsFormat.TREC else "'query-id corpus-id score'"
        raise _error("qrels", lineno, f"expected {fmt} qrels {shape}, got {len(fields)}", line)
    if not _is_int(grade):
        raise _error("qrels", lineno, f"relevance {grade!r} is not an integer", line)
    return qid, docid, int(grade)


def _skip_beir_header(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    if lines and not _is_int(lines[0][1].split()[-1]):
        return lines[1:]
    return lines


def read_qrels(source: Source, fmt: QrelsFormat | None = None) -> Qrels:
    """Read TREC qrels (``qid iter docid rel``) or BEIR tsv (``query-id corpus-id score``).

    The format is detected from the first non-blank line unless ``fmt`` is given. A BEIR header
    line (its last field not an integer) is skipped. A judgment repeated for the same query and
    document, or a malformed line, raises :class:`TrecFormatError` naming the line.
    """
    lines = _numbered_lines(source)
    if not lines:
        return {}
    fmt = fmt or detect_qrels_format(lines[0][1])
    if fmt is QrelsFormat.BEIR:
        lines = _skip_beir_header(lines)
    qrels: Qrels = {}
    for lineno, line in lines:
        qid, docid, grade = _parse_qrels_line(lineno, line, fmt)
        judged = qrels.setdefault(qid, {})
        if docid in judged:
            raise _error("qrels", lineno, f"docid {docid!r} judged twice for {qid!r}", line)
        judged[docid] = grade
    return qrels


def ranked_docids(results: Iterable[tuple[str, float]]) -> list[str]:
    """Docids in trec_eval order: score descending, ties by docid descending."""
    return [docid for docid, _ in sorted(results, key=lambda r: (r[1], r[0]), reverse=True)]


def _unique_metrics(metrics: Iterable[Metric | str]) -> tuple[Metric, ...]:
    parsed = (m if isinstance(m, Metric) else parse_metric(m) for m in metrics)
    return tuple({m.key: m for m in parsed}.values())


def _score_query(
    ranked: Sequence[str], grades: Mapping[str, int], metrics: tuple[Metric, ...]
) -> Mapping[str, float]:
    return MappingProxyType({m.key: evaluate(m, ranked, grades) for m in metrics})


def score_run(
    run: Mapping[str, Iterable[tuple[str, float]]], qrels: Qrels, metrics: Iterable[Metric | str]
) -> RunScores:
    """Score every qrels query of ``run`` with ``metrics`` (objects or names like ``ndcg@10``).

    See the module docstring for the trec_eval conventions. Raises :class:`TrecFormatError` if
    the qrels hold no query, since a mean over no queries means nothing.
    """
    chosen = _unique_metrics(metrics)
    if not qrels:
        raise TrecFormatError("the qrels hold no query: nothing to score")
    per_query = {
        qid: _score_query(ranked_docids(run.get(qid, ())), qrels[qid], chosen)
        for qid in sorted(qrels)
    }
    means = {m.key: mean(scores[m.key] for scores in per_query.values()) for m in chosen}
    return RunScores(chosen, MappingProxyType(per_query), MappingProxyType(means))
