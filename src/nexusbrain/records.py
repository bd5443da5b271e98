"""The records every layer shares: frozen dataclasses and closed sets as StrEnums."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol


class Progress(Protocol):
    """Told how far a long job has got: `done` of `total` in `phase` ("ingesting"...)."""

    def __call__(self, phase: str, done: int, total: int, /) -> None: ...


MAX_ID = 2**63 - 1  # ids are signed 64-bit integers (SQLite INTEGER, PostgreSQL bigint)
MAX_JSON_DEPTH = 32  # how deeply a stored JSON value (metadata) or a request body may nest


class DocumentKind(StrEnum):
    MARKDOWN = "markdown"
    MEMORY = "memory"
    CONVERSATION = "conversation"
    # files of a folder other than markdown (ingest/formats/)
    TEXT = "text"
    RST = "rst"
    ASCIIDOC = "asciidoc"
    HTML = "html"
    PDF = "pdf"
    CODE = "code"


class SearchMode(StrEnum):
    """Named presets that trade context tokens for recall (see retrieval/modes.py)."""

    CONSERVATIVE = "conservative"
    BALANCED = "balanced"
    TOKENMAX = "tokenmax"


class WriteStatus(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    DUPLICATE = "duplicate"


@dataclass(frozen=True, slots=True)
class DocumentHead:
    """A document without its content: what a hit needs to cite its source."""

    id: int
    uri: str
    title: str
    domain: str
    kind: DocumentKind
    revision: str
    # a memory's tags (`add --tag`): how a person knows it; keyword-only, so that a Document's
    # own fields can follow the head's
    tags: tuple[str, ...] = field(default=(), kw_only=True)


@dataclass(frozen=True, slots=True)
class Document(DocumentHead):
    """A document: its head, then what it holds and when it was written (and retired)."""

    content: str
    metadata: Mapping[str, Any]
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ListedDocument:
    """A live document as a listing shows it (`ls`): what it is, and how much of it is indexed."""

    id: int
    uri: str
    title: str
    kind: DocumentKind
    chunks: int
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Source:
    """A named folder the brain keeps in sync (`sources add`): its files under `root` that
    `include` and `exclude` select (globs; none: every file ingest reads), filed under
    `domain`. `synced_at` and `problems` (path, reason) are its last sync's."""

    name: str
    root: str
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    domain: str | None = None
    created_at: datetime | None = None
    synced_at: datetime | None = None
    problems: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """A source as `sources list` shows it: its live documents (files) and their chunks."""

    source: Source
    files: int
    chunks: int


@dataclass(frozen=True, slots=True)
class Chunk:
    id: int
    document_id: int
    ordinal: int
    char_start: int
    char_end: int
    line_start: int
    line_end: int
    heading_path: tuple[str, ...]
    text: str
    unit: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    context: str = ""
    signature: int | None = None  # of its text (storage/signature.py); None: stored before it


@dataclass(frozen=True, slots=True)
class DocumentDraft:
    """A document about to be written: what ingest hands to storage."""

    uri: str
    title: str
    domain: str
    kind: DocumentKind
    revision: str
    content: str
    metadata: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """A chunk about to be written, its span already cut from the draft's content: what
    chunking (ingest/chunking.py, ingest/formats/) makes of a text."""

    ordinal: int  # 0-based, in document order
    char_start: int  # offset into the content
    char_end: int  # exclusive
    line_start: int  # 1-based line of char_start
    line_end: int  # 1-based line of the chunk's last character
    heading_path: tuple[str, ...]  # enclosing heading texts, outermost first
    text: str  # == content[char_start:char_end]
    unit: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    # indexed with the chunk (at a lower weight) but not part of its span: the visible words
    # of navigation blocks beside it (chunking's rule 6)
    context: str = ""
    text_hash: str | None = None  # of the text as embedded; set by the vector step


@dataclass(frozen=True, slots=True)
class VectorBatch:
    """Vectors to store with a write, keyed by the embedded text's hash."""

    model: str
    dim: int
    vectors: Mapping[str, bytes]


@dataclass(frozen=True, slots=True)
class WriteResult:
    status: WriteStatus
    document_id: int
    revision: str
    chunks: int


@dataclass(frozen=True, slots=True)
class MarkdownNote:
    """One markdown document to ingest. Without a uri, its content identifies it."""

    content: str
    title: str | None = None
    uri: str | None = None
    domain: str | None = None
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class SearchFilters:
    domain: str | None = None
    path_prefix: str | None = None
    document_id: int | None = None
    kind: DocumentKind | None = None
    updated_after: datetime | None = None
    updated_before: datetime | None = None

    def is_empty(self) -> bool:
        return self == SearchFilters()


@dataclass(frozen=True, slots=True)
class Scored:
    """One retriever's raw answer: a chunk id and its score (higher is better). Lists made
    with best-per-document also carry the chunk's document id, so fusion can work per
    document."""

    chunk_id: int
    score: float
    document_id: int | None = None


@dataclass(frozen=True, slots=True)
class RetrieverScore:
    """Where one retriever put a hit: its rank (from 1) and its raw score."""

    retriever: str
    rank: int
    score: float


@dataclass(frozen=True, slots=True)
class FusionContribution:
    """One list's share of a fused score. RRF: weight / (k + rank). Z-score fusion:
    weight × z, where z is the item's score in that list standardised over the list (rank is
    None when the item was scored for that list but is not among its results)."""

    retriever: str
    weight: float
    rank: int | None
    contribution: float
    z: float | None = None


@dataclass(frozen=True, slots=True)
class RerankChange:
    model: str
    rank_before: int
    rank_after: int
    score: float


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a result set's confidence is read from: all of it at hand once the lists are
    fused (retrieval/confidence.py). The best hit is the first of the fused ranking; a list
    position is a rank from 1, None when the list did not rank it; what a list that did not
    run (the dense one without an embedder, a reranker) would say is None."""

    coverage: float  # the share of the query's idf weight that the best hit holds
    matched: float  # that weight, in units of the idf of a word no chunk holds
    fused_margin: float  # the best fused score minus the second's
    lexical_margin: float  # BM25's first score minus its second, over its first
    lexical_rank: int | None  # the best hit's rank in BM25's list
    cosine: float | None = None  # the best hit's similarity to the query (the dense score)
    dense_margin: float | None = None  # the dense list's first score minus its second
    dense_rank: int | None = None  # the best hit's rank in the dense list
    overlap: int | None = None  # how many of BM25's first five are in the dense list's
    rerank: float | None = None  # the reranker's score of the best hit


@dataclass(frozen=True, slots=True)
class Confidence:
    """How likely a result set is to hold a good match, shared by its hits. `value`
    estimates the chance that one of the first five hits is relevant (a logistic model of
    the evidence, fitted on the dev sets: retrieval/confidence.py, docs/tuning.md); `weak`
    says it is low enough to call it no good match."""

    value: float
    weak: bool
    evidence: Evidence

    @property
    def coverage(self) -> float:
        return self.evidence.coverage

    @property
    def matched(self) -> float:
        return self.evidence.matched

    @property
    def cosine(self) -> float | None:
        return self.evidence.cosine


@dataclass(frozen=True, slots=True)
class DenseCoverage:
    """Set while some chunks still wait for their vectors (a slow profile embeds in the
    background): how many chunks the dense list could rank, of how many, and whether this
    hit's chunk was one of them. If not, BM25 alone ranked it."""

    embedded: int
    chunks: int
    has_vector: bool


@dataclass(frozen=True, slots=True)
class Trace:
    """Why a hit ranked where it did."""

    retrievers: tuple[RetrieverScore, ...]
    fusion: tuple[FusionContribution, ...] = ()
    fusion_method: str = "rrf"  # or "zscore"
    fused_rank: int | None = None
    prf_terms: tuple[str, ...] = ()
    rerank: RerankChange | None = None
    context: str | None = None
    confidence: Confidence | None = None  # the result set's, the same for each of its hits
    dense_coverage: DenseCoverage | None = None  # None: every chunk had its vector
    day: str | None = None  # the day ("2022-11-09") or month the query names, if said then
    notes: tuple[str, ...] = ()  # what went otherwise than asked: a model that did not answer


@dataclass(frozen=True, slots=True)
class Copy:
    """Another place a hit's text lives (retrieval/copies.py): the search shows the text once."""

    chunk_id: int
    document_id: int
    uri: str
    char_start: int
    char_end: int
    line_start: int
    line_end: int
    page: int | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    rank: int
    score: float
    chunk_id: int
    document_id: int
    uri: str
    title: str
    domain: str
    kind: DocumentKind
    revision: str
    unit: str | None
    text: str
    char_start: int
    char_end: int
    line_start: int
    line_end: int
    heading_path: tuple[str, ...]
    trace: Trace
    truncated: bool = False  # recall cut its text to fit the budget (its span says where)
    also_in: tuple[Copy, ...] = ()  # copies of its text, which the search did not show again
    page: int | None = None  # the PDF page its chunk is on (from 1); None for other kinds
    tags: tuple[str, ...] = ()  # a memory's tags


@dataclass(frozen=True, slots=True)
class StoreStats:
    documents: int
    retired_documents: int
    chunks: int
    db_bytes: int
    schema_version: int


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import did. Into a brain with data, documents are matched by uri: `updated`
    took the import's newer version, `unchanged` were the same revision, `kept` were newer
    here (the import's revisions join their history). `duplicates` are facts held already;
    `retired` facts here gave way to an updated note's; `kept_facts` of the import were
    stated by a note whose version here is the newer, which governs them."""

    documents: int  # created
    chunks: int
    records: int
    updated: int = 0
    unchanged: int = 0
    kept: int = 0
    entities: int = 0
    relationships: int = 0  # versions added
    duplicates: int = 0
    retired: int = 0
    kept_facts: int = 0


@dataclass(frozen=True, slots=True)
class Capture:
    """One search or recall as the server answered it, for later replay."""

    at: datetime
    operation: str
    query: str
    mode: str | None
    filters: Mapping[str, Any]
    results: tuple[int, ...]
    latency_ms: float


class RetireReason(StrEnum):
    """Why a relationship version stopped being current (it is never deleted)."""

    WINDOW_CHANGED = "window_changed"  # the same triple was re-stated with another window
    CONTRADICTED = "contradicted"  # a functional type got a new value for the same subject
    SOURCE_REVISED = "source_revised"  # the note it came from changed and no longer says it
    RETRACTED = "retracted"  # the note it came from was deleted


@dataclass(frozen=True, slots=True)
class Entity:
    """A thing in the knowledge graph. `key` is the casefolded name; aliases resolve to it."""

    id: int
    key: str
    name: str
    type: str | None
    aliases: tuple[str, ...]
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class RelationshipDraft:
    """A relationship version about to be written."""

    from_id: int
    type: str
    to_id: int
    valid_at: datetime | None
    invalid_at: datetime | None
    source: str | None
    supersedes: int | None


@dataclass(frozen=True, slots=True)
class Statement:
    """A triple as one note states it, with the window it gives."""

    document_id: int
    from_id: int
    type: str
    to_id: int
    valid_at: datetime | None
    invalid_at: datetime | None


@dataclass(frozen=True, slots=True)
class Relationship:
    """One version of a fact `(from, type, to)`, bitemporal: valid time says when it held in
    the world, transaction time when the brain learned it and when it retired it."""

    id: int
    from_id: int
    from_name: str
    type: str
    to_id: int
    to_name: str
    valid_at: datetime | None
    invalid_at: datetime | None
    created_at: datetime
    superseded_at: datetime | None
    reason: RetireReason | None  # why it was retired; None while current
    source: str | None  # the document, chunk or request it came from
    supersedes: int | None  # the version it replaced

    @property
    def current(self) -> bool:
        return self.superseded_at is None


_SURROGATE = re.compile("[\ud800-\udfff]")
_INTEGERS = (-(2**63), 2**64 - 1)  # what JSON columns hold exactly


def json_problem(value: object, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why `value` cannot be stored as JSON and read back the same, or None if it can.

    A value may hold dicts with string keys, lists, strings, booleans, None, finite floats and
    64-bit integers, nested at most `max_depth` containers deep. A string must be Unicode text:
    JSON can spell a lone surrogate ("\\ud800"), but UTF-8 cannot store one. The answer names
    where the problem is (``tags[2]``, ``a.b``)."""
    return None if _storable(value, max_depth) else _locate(value, max_depth)


def _storable(value: object, max_depth: int) -> bool:
    """json_problem's quick pass (it runs on every request body and imported record): only
    whether there is a problem, without the bookkeeping of where."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return False
        elif isinstance(item, dict):
            if depth >= max_depth or not all(_is_key(key) for key in item):
                return False
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            if depth >= max_depth:
                return False
            stack.extend((child, depth + 1) for child in item)
        elif _scalar_problem(item) is not None:
            return False
    return True


def _is_key(key: object) -> bool:
    return isinstance(key, str) and not _SURROGATE.search(key)


def _locate(value: object, max_depth: int) -> str | None:
    stack: list[tuple[object, str, int]] = [(value, "", 0)]
    while stack:
        item, where, depth = stack.pop()
        if not isinstance(item, dict | list):
            problem = _scalar_problem(item)
            if problem:
                return f"{where or 'value'}: {problem}"
        elif depth >= max_depth:
            top = re.split(r"[.\[]", where, maxsplit=1)[0] or "value"
            return f"{top}: nested more than {max_depth} levels deep"
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(item))
        else:
            for key, child in item.items():
                if not _is_key(key):
                    shown = str(key).encode("utf-8", "backslashreplace").decode("utf-8")
                    return f"{where or 'value'}: the key '{shown}' is not Unicode text"
                stack.append((child, f"{where}.{key}" if where else key, depth + 1))
    return None


def _scalar_problem(value: object) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        bad = _SURROGATE.search(value)
        return f"holds a lone surrogate U+{ord(bad[0]):04X}, which is not text" if bad else None
    if isinstance(value, int):
        low, high = _INTEGERS
        return None if low <= value <= high else f"the integer {value} is beyond 64 bits"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value} is not a finite number"
    return f"a {type(value).__name__} is not a JSON value"
