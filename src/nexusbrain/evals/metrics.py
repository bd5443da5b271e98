"""Retrieval metrics over one ranked list of ids.

Every metric takes ``ranked`` (ids, best first; it may hold the same id more than once) and the
judgments for one query: a set of relevant ids, or for graded nDCG a mapping id -> grade. They are
pure functions of their arguments.

Conventions shared by all metrics:

* ``k`` is a cutoff of at least 1; a ``k`` longer than the list simply covers all of it.
* A query with no relevant ids scores 0.0 on every metric (trec_eval does the same for recall,
  precision, RR and nDCG), except LongMemEval's ``recall_all``, which keeps its official
  vacuous-truth value of 1.0.
* Duplicates: set-style metrics (recall, precision, recall_any/all) count an id once; nDCG grades
  a relevant id at *every* position where it appears while the ideal ranking uses each relevant
  id once, so nDCG can exceed 1.0 for a list with duplicates (see :func:`ndcg_at_k`). For lists
  without duplicates every metric lies in [0, 1].
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeAlias

from nexusbrain.errors import InvalidInput

Judgments: TypeAlias = AbstractSet[str] | Mapping[str, float]
"""Relevant ids for a query, or graded judgments (grade > 0 means relevant)."""


class MetricError(InvalidInput, ValueError):
    """A bad metric name, cutoff or floor; also a ValueError."""


def _check_k(k: int) -> None:
    if k < 1:
        raise MetricError(f"cutoff k must be at least 1, got {k}")


def _distinct_hits(top: Sequence[str], relevant: AbstractSet[str]) -> int:
    return sum(1 for doc in set(top) if doc in relevant)


def relevant_ids(judgments: Judgments) -> AbstractSet[str]:
    """The relevant ids of ``judgments``: the set itself, or the ids graded above 0."""
    if isinstance(judgments, Mapping):
        return frozenset(doc for doc, grade in judgments.items() if grade > 0)
    return judgments


def recall_at_k(ranked: Sequence[str], relevant: AbstractSet[str], k: int) -> float:
    """``|relevant ∩ set(top-k)| / |relevant|``; 0.0 when ``relevant`` is empty.

    An empty relevant set makes recall undefined (0/0); we return 0.0, as trec_eval does, so a
    query without judgments can never raise a mean.
    """
    _check_k(k)
    if not relevant:
        return 0.0
    return _distinct_hits(ranked[:k], relevant) / len(relevant)


def precision_at_k(ranked: Sequence[str], relevant: AbstractSet[str], k: int) -> float:
    """Distinct relevant ids in the top ``k``, divided by ``k`` even when the list is shorter."""
    _check_k(k)
    return _distinct_hits(ranked[:k], relevant) / k


def reciprocal_rank(
    ranked: Sequence[str], relevant: AbstractSet[str], k: int | None = None
) -> float:
    """``1 / rank`` of the first relevant id (within the top ``k`` if given), else 0.0."""
    if k is not None:
        _check_k(k)
    top = ranked if k is None else ranked[:k]
    for rank, doc in enumerate(top, start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean (MRR is ``mean`` of :func:`reciprocal_rank`); raises on no values."""
    items = list(values)
    if not items:
        raise MetricError("cannot average zero values: no queries were scored")
    return math.fsum(items) / len(items)


def _dcg(gains: Iterable[float]) -> float:
    """Standard DCG: the gain at 1-based position i is divided by log2(i + 1)."""
    return math.fsum(gain / math.log2(i + 1) for i, gain in enumerate(gains, start=1))


def _ratio(dcg: float, ideal: float) -> float:
    return dcg / ideal if ideal > 0 else 0.0


def ndcg_at_k(ranked: Sequence[str], relevant: AbstractSet[str], k: int) -> float:
    """Binary nDCG@k: DCG = Σ_{i≤k} rel_i / log2(i+1), IDCG over min(k, |relevant|) ones.

    A relevant id that appears more than once in ``ranked`` earns gain at each position, while
    IDCG counts each distinct relevant id once. The result is therefore NOT bounded by 1 for
    lists with duplicates: ``ranked=["a", "a"], relevant={"a"}, k=2`` gives
    ``(1 + 1/log2(3)) / 1 ≈ 1.63``. We do not clamp, so such inflation stays visible; callers
    should deduplicate if they want a bounded score. Without duplicates it lies in [0, 1].
    0.0 when ``relevant`` is empty.
    """
    _check_k(k)
    dcg = _dcg(1.0 if doc in relevant else 0.0 for doc in ranked[:k])
    return _ratio(dcg, _dcg([1.0] * min(k, len(relevant))))


def graded_ndcg_at_k(ranked: Sequence[str], grades: Mapping[str, float], k: int) -> float:
    """Graded nDCG@k with linear gain (gain = grade), as trec_eval's ``ndcg_cut``.

    Grades of 0 or below (and unjudged ids) earn no gain; the ideal ranking is the positive grades
    sorted descending. Duplicates are graded at every position, exactly as in :func:`ndcg_at_k`,
    so the same >1 caveat applies. With every grade 1 it equals :func:`ndcg_at_k`.
    """
    _check_k(k)
    dcg = _dcg(max(grades.get(doc, 0.0), 0.0) for doc in ranked[:k])
    ideal = sorted((grade for grade in grades.values() if grade > 0), reverse=True)[:k]
    return _ratio(dcg, _dcg(ideal))


# LongMemEval's official retrieval metrics, reproduced from xiaowu0162/LongMemEval,
# src/retrieval/eval_utils.py (`evaluate_retrieval`, `dcg`, `ndcg`), as called from
# src/retrieval/run_retrieval.py where `rankings` is a full argsort of the haystack corpus and
# `correct_docs` the distinct corpus ids that hold the answer.


def recall_any_at_k(ranked: Sequence[str], relevant: AbstractSet[str], k: int) -> float:
    """LongMemEval ``recall_any@k``: 1.0 if any relevant id is in the top ``k``, else 0.0."""
    _check_k(k)
    top = set(ranked[:k])
    return 1.0 if any(doc in top for doc in relevant) else 0.0


def recall_all_at_k(ranked: Sequence[str], relevant: AbstractSet[str], k: int) -> float:
    """LongMemEval ``recall_all@k``: 1.0 if every relevant id is in the top ``k``, else 0.0.

    As in the official code (Python's ``all([])``), an empty relevant set scores 1.0.
    """
    _check_k(k)
    top = set(ranked[:k])
    return 1.0 if all(doc in top for doc in relevant) else 0.0


def _longmemeval_dcg(gains: Sequence[float]) -> float:
    """LongMemEval's DCG: position 1 undiscounted, position i ≥ 2 divided by log2(i).

    Note the discount is log2(i), not the standard log2(i + 1): positions 1 and 2 weigh the same.
    """
    return math.fsum(gain if i == 1 else gain / math.log2(i) for i, gain in enumerate(gains, 1))


def ndcg_any_at_k(
    ranked: Sequence[str],
    relevant: AbstractSet[str],
    k: int,
    corpus: Sequence[str] | None = None,
) -> float:
    """LongMemEval ``ndcg_any@k``: binary gains, :func:`_longmemeval_dcg` discount.

    Each position of the top ``k`` whose id is relevant gains 1 (duplicates included). The official
    ideal ranking is every *corpus entry* sorted by relevance, so its length is the number of
    corpus entries whose id is relevant. Pass ``corpus`` (all candidate ids, duplicates kept, e.g.
    turn ids mapped to session ids) to get exactly that. Without it, each relevant id is assumed to
    occur once in the corpus, so the ideal holds ``|relevant|`` ones; that equals the official
    value whenever corpus ids are unique and contain every relevant id (LongMemEval builds
    ``correct_docs`` from the corpus ids). With ``corpus`` given and ``ranked`` a ranking of that
    corpus the score is in [0, 1]; without it, duplicates in ``ranked`` can push it above 1.
    0.0 when the ideal DCG is 0.
    """
    _check_k(k)
    actual = [1.0 if doc in relevant else 0.0 for doc in ranked[:k]]
    n_ideal = len(relevant) if corpus is None else sum(1 for doc in corpus if doc in relevant)
    return _ratio(_longmemeval_dcg(actual), _longmemeval_dcg([1.0] * min(k, n_ideal)))


class MetricKind(StrEnum):
    """Metric families; the value is the canonical name used in :attr:`Metric.key`."""

    RECALL = "recall"
    PRECISION = "precision"
    NDCG = "ndcg"
    MRR = "mrr"
    RECALL_ANY = "recall_any"
    RECALL_ALL = "recall_all"
    NDCG_ANY = "ndcg_any"


@dataclass(frozen=True)
class Metric:
    """One metric at one cutoff. ``k`` is required except for MRR (None = whole list)."""

    kind: MetricKind
    k: int | None = None

    def __post_init__(self) -> None:
        if self.k is None and self.kind is not MetricKind.MRR:
            raise MetricError(f"metric {self.kind.value!r} needs a cutoff, e.g. {self.kind}@10")
        if self.k is not None:
            _check_k(self.k)

    @property
    def key(self) -> str:
        """Canonical name: ``recall@5``, ``precision@10``, ``ndcg@10``, ``mrr``, ``mrr@10``."""
        return self.kind.value if self.k is None else f"{self.kind.value}@{self.k}"

    def __str__(self) -> str:
        return self.key


_ALIASES: Mapping[str, MetricKind] = {
    "r": MetricKind.RECALL,
    "recall": MetricKind.RECALL,
    "p": MetricKind.PRECISION,
    "precision": MetricKind.PRECISION,
    "ndcg": MetricKind.NDCG,
    "ndcg_cut": MetricKind.NDCG,
    "mrr": MetricKind.MRR,
    "rr": MetricKind.MRR,
    "recip_rank": MetricKind.MRR,
    "recall_any": MetricKind.RECALL_ANY,
    "recall_all": MetricKind.RECALL_ALL,
    "ndcg_any": MetricKind.NDCG_ANY,
}

# name, then optionally a separator (@ or _) and the cutoff: r5, p@5, ndcg_cut_10, recall_any@5.
_NAME_RE = re.compile(r"(?P<name>[a-z_]*[a-z])(?:[@_]?(?P<k>\d+))?")


def parse_metric(name: str) -> Metric:
    """Parse ``ndcg@10``, ``recall@100``, ``p@5``, ``mrr``, ``r5``, ``ndcg10``, ``P_5`` ... .

    Case-insensitive. Accepted names: r/recall, p/precision, ndcg/ndcg_cut, mrr/rr/recip_rank,
    recall_any, recall_all, ndcg_any; the cutoff follows directly or after ``@`` or ``_``.
    """
    match = _NAME_RE.fullmatch(name.strip().lower())
    kind = _ALIASES.get(match.group("name")) if match else None
    if match is None or kind is None:
        known = ", ".join(sorted(_ALIASES))
        raise MetricError(f"unknown metric {name!r}: use NAME@K (e.g. ndcg@10, r5); names: {known}")
    k_text = match.group("k")
    return Metric(kind, None if k_text is None else int(k_text))


def parse_floor(text: str) -> tuple[Metric, float]:
    """Parse a floor such as ``r5=0.85`` into ``(Metric, 0.85)``; the value must be in [0, 1]."""
    name, sep, value_text = text.partition("=")
    try:
        value = float(value_text)
    except ValueError:
        value = math.nan
    if not sep or not 0.0 <= value <= 1.0:
        raise MetricError(f"bad floor {text!r}: expected METRIC=VALUE with VALUE in [0, 1]")
    return parse_metric(name), value


_CutoffMetric: TypeAlias = Callable[[Sequence[str], AbstractSet[str], int], float]

_CUTOFF_METRICS: Mapping[MetricKind, _CutoffMetric] = {
    MetricKind.RECALL: recall_at_k,
    MetricKind.PRECISION: precision_at_k,
    MetricKind.NDCG: ndcg_at_k,
    MetricKind.RECALL_ANY: recall_any_at_k,
    MetricKind.RECALL_ALL: recall_all_at_k,
    MetricKind.NDCG_ANY: ndcg_any_at_k,
}


def evaluate(metric: Metric, ranked: Sequence[str], judgments: Judgments) -> float:
    """Score ``ranked`` with ``metric``.

    ``judgments`` is a set of relevant ids or a mapping id -> grade. nDCG uses the grades when a
    mapping is given (:func:`graded_ndcg_at_k`) and binary relevance for a set; every other metric
    treats grade > 0 as relevant.
    """
    if metric.k is None:  # only MRR may omit the cutoff
        return reciprocal_rank(ranked, relevant_ids(judgments))
    if metric.kind is MetricKind.MRR:
        return reciprocal_rank(ranked, relevant_ids(judgments), metric.k)
    if metric.kind is MetricKind.NDCG and isinstance(judgments, Mapping):
        return graded_ndcg_at_k(ranked, judgments, metric.k)
    return _CUTOFF_METRICS[metric.kind](ranked, relevant_ids(judgments), metric.k)
