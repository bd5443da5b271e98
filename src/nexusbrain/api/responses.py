"""The models of the answers: what views.py returns, declared so that the OpenAPI document is
the truth. Documentation only: the routes send the views' dicts as they are (views.py stays
the one place that shapes JSON), and tests check real answers against these models
(tests/test_openapi.py) and every fuzzed answer against the document
(tests/reliability/test_fuzz.py). A view that is a record field for field has the record's
fields (`mirror`): only what they mean is said here."""

from __future__ import annotations

import dataclasses
import typing
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from nexusbrain.records import (
    DenseCoverage,
    DocumentHead,
    DocumentKind,
    FusionContribution,
    Hit,
    ImportResult,
    RerankChange,
    RetireReason,
    RetrieverScore,
    SearchMode,
    WriteStatus,
)
from nexusbrain.retrieval.explain import ListPosition, Verdict


class Out(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def mirror(
    record: type, name: str, doc: str | None = None, *, until: str | None = None, **meanings: str
) -> type[Out]:
    """The model of a view that is `record` field for field, every field present (views.py
    writes it with asdict, or by the same names), each described by its meaning if given.
    With `until`, only the record's fields up to that one: the start of a view that goes on
    with fields of its own (a subclass declares them)."""
    hints = typing.get_type_hints(record)
    names = [f.name for f in dataclasses.fields(record)]
    if until is not None:
        names = names[: names.index(until) + 1]
    fields: dict[str, Any] = {n: (hints[n], Field(description=meanings.get(n))) for n in names}
    model: type[Out] = create_model(name, __base__=Out, __doc__=doc, **fields)
    return model


class ErrorDetail(Out):
    code: str = Field(description="a stable name: not_found, invalid_input, too_large, busy...")
    message: str = Field(description="what was wrong, naming the value, and the fix")


class ErrorOut(Out):
    """Every error, whatever its status."""

    error: ErrorDetail


# Views that are a record field for field. mypy cannot read a model made by a call: to it,
# each is an Out.
if TYPE_CHECKING:
    ImportOut = Out
    RetrieverOut = Out
    FusionOut = Out
    RerankOut = Out
    DenseCoverageOut = Out
    ListPositionOut = Out
    DocumentHeadOut = Out
    HitHeadOut = Out
else:
    ImportOut = mirror(
        ImportResult,
        "ImportOut",
        "What the import did. Into a brain with data, documents are matched by uri.",
        documents="created",
        updated="took the import's newer version",
        unchanged="the same revision",
        kept="newer here (the import's revisions join their history)",
        relationships="versions added",
        duplicates="facts held already",
        retired="facts here that gave way to an updated note's",
        kept_facts="stated by a note whose version here is the newer",
    )
    RetrieverOut = mirror(RetrieverScore, "RetrieverOut")
    FusionOut = mirror(FusionContribution, "FusionOut")
    RerankOut = mirror(RerankChange, "RerankOut")
    DenseCoverageOut = mirror(
        DenseCoverage,
        "DenseCoverageOut",
        embedded="chunks the dense list could rank",
        has_vector="false: BM25 alone ranked this hit",
    )
    ListPositionOut = create_model(
        "ListPositionOut",
        __base__=mirror(
            ListPosition, "ListPosition", rank="null: not in that list, to the search's depth"
        ),
        label=(str, Field(description='the list in words ("keywords")')),
    )
    # The starts of two views that go on with fields of their own: bases, not answers, so
    # deleted once the views are declared (the OpenAPI document lists this module's models).
    DocumentHeadOut = mirror(DocumentHead, "DocumentHeadOut", until="revision")
    HitHeadOut = mirror(Hit, "HitHeadOut", until="unit")


# models


class EmbedderOut(Out):
    profile: str = Field(description="edge, quality, hashing, openai or onnx")
    model_id: str
    dim: int
    where: str = Field(description="in process, the server's URL, or the model's folder")
    embedding: str = Field(description="inline (in the write) or background")


class RerankerOut(Out):
    kind: str = Field(description="quality, hashing, http or onnx")
    model_id: str
    where: str = Field(description="in process, the server's URL, or the model's folder")


class ModelVectorsOut(Out):
    model: str
    vectors: int = Field(description="vectors stored (one per distinct text)")
    chunks: int = Field(description="live chunks that have one")


class ModelSwitchOut(Out):
    from_: str | None = Field(alias="from", description="the model search uses meanwhile")
    to: str = Field(description="the configured model, which search switches to once it covers")
    embedded_chunks: int
    chunks: int


class ModelsOut(Out):
    embedder: EmbedderOut | None = Field(description="null: lexical only")
    reranker: RerankerOut | None
    search_model: str | None = Field(description="the model whose vectors search uses")
    chunks: int
    covered: int | None = Field(description="live chunks that have the search model's vector")
    vectors: list[ModelVectorsOut]
    switch: ModelSwitchOut | None = Field(description="a model switch under way")


class ModelCheckOut(Out):
    role: str = Field(description="embedder or reranker")
    model_id: str
    ok: bool
    seconds: float = Field(description="how long one call took")
    dim: int | None = Field(description="the embedder's dimension")
    error: str | None = Field(description="what failed, in words")


class ModelChecksOut(Out):
    checks: list[ModelCheckOut]
    ok: bool


class EmbeddingOut(Out):
    object: str = Field(description='"embedding"')
    index: int
    embedding: list[float] | str = Field(description="the vector, or its base64 float32 bytes")


class UsageOut(Out):
    prompt_tokens: int = Field(description="words, not the model's tokens")
    total_tokens: int


class EmbeddingsOut(Out):
    """OpenAI's embeddings answer."""

    object: str = Field(description='"list"')
    data: list[EmbeddingOut]
    model: str
    usage: UsageOut


class RerankTextOut(Out):
    text: str


class RerankResultOut(Out):
    index: int = Field(description="the document's place in the request, from 0")
    relevance_score: float
    document: RerankTextOut | None = Field(default=None, description="with return_documents")


class RerankUsageOut(Out):
    total_tokens: int = Field(description="words, not the model's tokens")


class RerankedOut(Out):
    model: str
    results: list[RerankResultOut] = Field(description="best first")
    usage: RerankUsageOut


class ServedModelOut(Out):
    id: str
    object: str = Field(description='"model"')
    owned_by: str
    name: str = Field(description="its other name (the profile): what BRAIN_EMBED_MODEL may say")
    kind: str = Field(description="embedding or rerank")


class ServedModelsOut(Out):
    """OpenAI's list of models."""

    object: str
    data: list[ServedModelOut]


# system


class HealthOut(Out):
    status: str = Field(
        description='"ok" once the database answered (a 503 in the error shape when it does'
        " not): a probe, open without the token"
    )


class VersionOut(Out):
    version: str
    schema_: int = Field(alias="schema", description="the database's schema version")


class BreachOut(Out):
    limit: str
    value: float
    max: float
    message: str


class EnvelopeOut(Out):
    name: str
    ok: bool
    limits: dict[str, float]
    observed: dict[str, float | None]
    breaches: list[BreachOut]


class SwitchOut(Out):
    to: str = Field(description="the configured model, which search switches to once it covers")
    embedded_chunks: int | None = Field(description="the chunks it has embedded so far")


class StatsOut(Out):
    version: str
    db_path: str
    documents: int
    retired_documents: int
    chunks: int
    db_bytes: int
    rss_bytes: int
    schema_version: int
    embedder: str = Field(description="the profile: edge, quality, hashing, none, openai or onnx")
    model_id: str | None = Field(description="the model whose vectors search uses (none: off)")
    embedding: str = Field(
        description="inline (in the write), background (a thread after it) or off"
    )
    embedded_chunks: int | None = Field(
        description="chunks that have the model's vector; trails chunks while it embeds"
    )
    switch: SwitchOut | None = Field(
        description="while the configured model embeds the brain, before search switches to it"
    )
    envelope: EnvelopeOut


# writes


class WriteOut(Out):
    status: WriteStatus
    id: int
    revision: str
    chunks: int


class WriteCountsOut(Out):
    created: int
    updated: int
    duplicate: int


class BatchOut(Out):
    results: list[WriteOut]
    counts: WriteCountsOut
    chunks: int


class ConversationOut(Out):
    results: list[WriteOut] = Field(description="one for each session")


# search


class SpanOut(Out):
    char_start: int
    char_end: int = Field(description="exclusive")
    line_start: int = Field(description="from 1")
    line_end: int


class TraceOut(Out):
    """Why a hit ranked where it did. The keys after `retrievers` are present when they apply."""

    retrievers: list[RetrieverOut]
    fusion: list[FusionOut] = []
    fusion_method: str = Field(default="rrf", description="rrf or zscore")
    fused_rank: int | None = None
    prf_terms: list[str] = []
    rerank: RerankOut | None = None
    context: str | None = None
    dense_coverage: DenseCoverageOut | None = Field(
        default=None, description="present while some chunks still wait for their vectors"
    )
    notes: list[str] = Field(
        default=[],
        description="what went otherwise than asked: a model server that did not answer (BM25"
        " alone ranked the search), a reranker that did not finish in time",
    )
    note: str | None = Field(
        default=None,
        description="in words: a model that did not answer (BM25 alone ranked the search), "
        "and dense_coverage",
    )
    day: str | None = Field(
        default=None,
        description="the day (2022-11-09) or month (2022-11) the query names, when this hit "
        "was said then",
    )


class HitOut(HitHeadOut):
    heading_path: list[str]
    span: SpanOut
    page: int | None = Field(description="the PDF page the span is on (from 1); null otherwise")
    text: str
    truncated: bool = Field(description="recall cut its text to fit the budget (span says where)")
    trace: TraceOut
    also_in: list[CopyOut] = Field(
        description="other places that hold this hit's text (copies, shown once); empty with"
        " distinct=false"
    )
    tags: list[str] = Field(description="a memory's tags; empty for other documents")


class CopyOut(Out):
    chunk_id: int
    document_id: int
    uri: str
    span: SpanOut
    page: int | None = Field(description="the PDF page the span is on; null otherwise")


class RelationshipOut(Out):
    id: int
    from_: str = Field(alias="from")
    from_id: int
    type: str
    to: str
    to_id: int
    valid_at: str | None
    invalid_at: str | None
    created_at: str | None
    superseded_at: str | None
    current: bool
    reason: RetireReason | None
    source: str | None
    supersedes: int | None


class GraphTraceOut(Out):
    context: str
    entity: str
    hit_rank: int


class GraphFactOut(Out):
    text: str
    relationship: RelationshipOut
    trace: GraphTraceOut


class ConfidenceOut(Out):
    value: float = Field(description="the chance that one of the first five hits is relevant")
    coverage: float = Field(description="the share of the query's idf weight the best hit holds")
    matched: float = Field(description="that weight, in idfs of a word no chunk holds")
    weak: bool = Field(description="too low to call it a good match")


class SearchOut(Out):
    query: str
    mode: SearchMode
    confidence: ConfidenceOut | None = Field(description="null when there are no hits")
    match: str = Field(description="the confidence in words")
    lists: dict[str, str] = Field(
        description='the lists the hits come from, each named in words ("bm25": "keywords")'
    )
    hits: list[HitOut]
    graph_context: list[GraphFactOut] = Field(default=[], description="with graph=true")


class RecallOut(Out):
    query: str
    budget_tokens: int
    tokens_used: int
    left_out: int = Field(description="hits that did not fit the budget")
    truncated: bool = Field(description="a hit's text was cut to fit")
    confidence: ConfidenceOut | None
    match: str
    hits: list[HitOut]
    graph_context: list[GraphFactOut]


class ExplanationOut(Out):
    query: str
    document_id: int
    uri: str
    mode: SearchMode
    k: int
    best_per_document: bool
    verdict: Verdict
    returned: bool
    retired: bool
    rank: int | None = Field(description="the document's place among the search's hits")
    chunk_id: int | None = Field(description="the chunk that rank (or the fused rank) is about")
    fused_rank: int | None
    fused_score: float | None
    excluded_by: list[str] = Field(description="the filters the document fails")
    lists: list[ListPositionOut]
    depth: int
    copy_of: int | None = Field(
        description="verdict copy: the chunk id of the hit that shows this document's text"
    )


# documents


class ChunkOut(Out):
    id: int
    ordinal: int
    span: SpanOut
    heading_path: list[str]
    unit: str | None
    meta: dict[str, Any]
    text: str


class DocumentOut(DocumentHeadOut):
    metadata: dict[str, Any]
    created_at: str
    updated_at: str
    deleted_at: str | None
    content: str
    chunks: list[ChunkOut] = Field(default=[], description="with chunks=true")


del DocumentHeadOut, HitHeadOut  # bases of HitOut and DocumentOut, not answers


class ListedOut(Out):
    id: int
    uri: str
    title: str
    kind: DocumentKind
    chunks: int = Field(description="its chunks in the index")
    updated_at: str


class ListingOut(Out):
    prefix: str
    total: int = Field(description="live documents whose uri starts with the prefix")
    documents: list[ListedOut] = Field(description="the first `limit` of them, by uri")


class SkippedOut(Out):
    path: str
    reason: str


class SourceOut(Out):
    name: str
    root: str = Field(description="the folder, as an absolute path")
    include: list[str] = Field(description="globs a file must match one of (none: every file)")
    exclude: list[str] = Field(description="globs no file it keeps matches")
    domain: str | None
    files: int = Field(description="its live documents")
    chunks: int
    created_at: str
    synced_at: str | None = Field(description="when its last sync ended; null: never synced")
    errors: list[SkippedOut] = Field(description="files its last sync could not read, and why")


class SourcesOut(Out):
    sources: list[SourceOut] = Field(description="by name")


class RevisionOut(Out):
    revision: str
    title: str
    event: str = Field(description="created, updated or retired")
    recorded_at: str


class DocumentHistoryOut(Out):
    id: int
    revisions: list[RevisionOut]


class DeletedOut(Out):
    id: int
    uri: str
    status: str = Field(description="retired, or already_retired")


# graph


class EntityOut(Out):
    id: int
    key: str
    name: str
    type: str | None
    aliases: list[str]


class EntityOutcomeOut(EntityOut):
    status: WriteStatus
    id: int | None = Field(description="null in a dry run, for an entity it would create")  # type: ignore[assignment]


class RetiredOut(Out):
    id: int | None
    reason: RetireReason
    replaced_by: int | None


class RelationshipOutcomeOut(Out):
    id: int | None = Field(description="null in a dry run, for a fact it would create")
    status: WriteStatus = Field(description="created or duplicate")
    from_: str = Field(alias="from")
    type: str
    to: str
    valid_at: str | None
    invalid_at: str | None
    source: str | None
    supersedes: int | None
    retired: list[RetiredOut]


class GraphIngestOut(Out):
    at: str
    dry_run: bool
    relationships: list[RelationshipOutcomeOut]
    entities: list[EntityOutcomeOut]


class HistoryOut(Out):
    id: int
    versions: list[RelationshipOut] = Field(description="oldest first")
    current: RelationshipOut | None


class RelationsOut(Out):
    as_of_valid: str | None
    as_of_known: str | None
    relationships: list[RelationshipOut]


class HopOut(Out):
    depth: int
    path: list[int] = Field(description="the relationship ids from the start")
    relationship: RelationshipOut
    valid_from: str | None
    valid_until: str | None


class TraversalOut(Out):
    from_: EntityOut = Field(alias="from")
    depth: int
    as_of_valid: str | None
    as_of_known: str | None
    hops: list[HopOut]
    truncated: bool
