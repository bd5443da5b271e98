"""JSON-ready views of records. Every interface (CLI --json, HTTP, MCP) answers with these, so
they give the same answer to the same question."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Any

from nexusbrain.clock import format_time
from nexusbrain.records import (
    Chunk,
    Confidence,
    Copy,
    DenseCoverage,
    Document,
    Hit,
    ImportResult,
    ListedDocument,
    Source,
    SourceStatus,
    Trace,
    WriteResult,
    WriteStatus,
)
from nexusbrain.retrieval.confidence import describe
from nexusbrain.retrieval.retrievers import label

if TYPE_CHECKING:  # the views only read these records: a search view loads none of it
    import numpy as np

    from nexusbrain.brain import BrainStats, EmbedderInfo, Recall
    from nexusbrain.brain.models import ModelCheck
    from nexusbrain.graph.model import (
        AsOf,
        Entity,
        GraphFact,
        History,
        IngestResult,
        Relationship,
        RelationshipOutcome,
        Traversal,
    )
    from nexusbrain.ingest.directory import DirectoryReport
    from nexusbrain.retrieval.explain import Explanation


def write_result(result: WriteResult) -> dict[str, Any]:
    return {
        "status": result.status.value,
        "id": result.document_id,
        "revision": result.revision,
        "chunks": result.chunks,
    }


def write_results(results: Sequence[WriteResult]) -> dict[str, Any]:
    """A conversation's writes, one for each session."""
    return {"results": [write_result(r) for r in results]}


def batch(results: Sequence[WriteResult]) -> dict[str, Any]:
    """A batch's writes, how many of each status, and the chunks they wrote."""
    counts = {status.value: 0 for status in WriteStatus}
    for result in results:
        counts[result.status.value] += 1
    return {
        "results": [write_result(r) for r in results],
        "counts": counts,
        "chunks": sum(r.chunks for r in results),
    }


def trace(value: Trace) -> dict[str, Any]:
    # the two lists written out, not by asdict, which copies each value deeply: they are
    # most of a search answer's items, and asdict took 8% of a search's time
    out: dict[str, Any] = {
        "retrievers": [
            {"retriever": r.retriever, "rank": r.rank, "score": r.score} for r in value.retrievers
        ]
    }
    if value.fusion:
        out["fusion"] = [
            {
                "retriever": f.retriever,
                "weight": f.weight,
                "rank": f.rank,
                "contribution": f.contribution,
                "z": f.z,
            }
            for f in value.fusion
        ]
        out["fusion_method"] = value.fusion_method
        out["fused_rank"] = value.fused_rank
    if value.prf_terms:
        out["prf_terms"] = list(value.prf_terms)
    if value.rerank is not None:
        out["rerank"] = asdict(value.rerank)
    if value.context is not None:
        out["context"] = value.context
    notes = list(value.notes)
    if notes:
        out["notes"] = list(value.notes)
    if value.dense_coverage is not None:
        out["dense_coverage"] = asdict(value.dense_coverage)
        notes.append(coverage_note(value.dense_coverage))
    if notes:
        out["note"] = "; ".join(notes)
    if value.day is not None:
        out["day"] = value.day
    return out


def coverage_note(value: DenseCoverage) -> str:
    """In words, for people and agents: the dense list's reach, and this hit's."""
    reach = f"the dense list covered {value.embedded:,} of {value.chunks:,} chunks"
    if value.has_vector:
        return f"{reach} (the rest still wait for their vectors)"
    return f"this chunk has no vector yet, so BM25 alone ranked it; {reach}"


def hit(value: Hit) -> dict[str, Any]:
    return {
        "rank": value.rank,
        "score": value.score,
        "chunk_id": value.chunk_id,
        "document_id": value.document_id,
        "uri": value.uri,
        "title": value.title,
        "domain": value.domain,
        "kind": value.kind.value,
        "revision": value.revision,
        "unit": value.unit,
        "heading_path": list(value.heading_path),
        "span": span(value),
        "page": value.page,
        "text": value.text,
        "truncated": value.truncated,
        "trace": trace(value.trace),
        "also_in": [
            {
                "chunk_id": c.chunk_id,
                "document_id": c.document_id,
                "uri": c.uri,
                "span": span(c),
                "page": c.page,
            }
            for c in value.also_in
        ],
        "tags": list(value.tags),
    }


def span(value: Hit | Chunk | Copy) -> dict[str, int]:
    """Where a hit or chunk sits in its document: characters (end exclusive), lines (1-based)."""
    return {
        "char_start": value.char_start,
        "char_end": value.char_end,
        "line_start": value.line_start,
        "line_end": value.line_end,
    }


def chunk(value: Chunk) -> dict[str, Any]:
    return {
        "id": value.id,
        "ordinal": value.ordinal,
        "span": span(value),
        "heading_path": list(value.heading_path),
        "unit": value.unit,
        "meta": dict(value.meta),
        "text": value.text,
    }


def document(value: Document, chunks: list[Chunk] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": value.id,
        "uri": value.uri,
        "title": value.title,
        "domain": value.domain,
        "kind": value.kind.value,
        "revision": value.revision,
        "metadata": dict(value.metadata),
        "created_at": format_time(value.created_at),
        "updated_at": format_time(value.updated_at),
        "deleted_at": format_time(value.deleted_at) if value.deleted_at else None,
        "content": value.content,
    }
    if chunks is not None:
        out["chunks"] = [chunk(c) for c in chunks]
    return out


def document_lines(
    value: Document, start: int, end: int, pages: Sequence[int] = ()
) -> dict[str, Any]:
    """Lines `start` to `end` (from 1, inclusive) of a document's content, and where they are:
    with `pages`, the pages of a PDF they are on."""
    lines = value.content.splitlines()
    where: dict[str, Any] = {"start": start, "end": end, "total": len(lines)}
    if pages:
        where["pages"] = list(pages)
    return {"content": "\n".join(lines[start - 1 : end]), "lines": where}


def listing(prefix: str, total: int, documents: Sequence[ListedDocument]) -> dict[str, Any]:
    """The live documents under a uri prefix: how many, and the first of them by uri."""
    return {
        "prefix": prefix,
        "total": total,
        "documents": [
            {
                "id": d.id,
                "uri": d.uri,
                "title": d.title,
                "kind": d.kind.value,
                "chunks": d.chunks,
                "updated_at": format_time(d.updated_at),
            }
            for d in documents
        ],
    }


def document_history(document_id: int, revisions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"id": document_id, "revisions": list(revisions)}


def deletion(value: Document, retired: bool) -> dict[str, Any]:
    """A document retired (`retired`), or found retired already."""
    return {"id": value.id, "uri": value.uri, "status": "retired" if retired else "already_retired"}


def directory_report(report: DirectoryReport) -> dict[str, Any]:
    return {
        "root": report.root,
        "added": report.added,
        "updated": report.updated,
        "unchanged": report.unchanged,
        "deleted": report.deleted,
        "chunks": report.chunks,
        "errors": [{"path": p.path, "reason": p.reason} for p in report.errors],
        "hidden": report.hidden,
        "seconds": round(report.seconds, 3),
    }


def source(value: SourceStatus) -> dict[str, Any]:
    """A source (sources list): what it is, its files and chunks now, and its last sync."""
    found = value.source
    return {
        "name": found.name,
        "root": found.root,
        "include": list(found.include),
        "exclude": list(found.exclude),
        "domain": found.domain,
        "files": value.files,
        "chunks": value.chunks,
        "created_at": _time(found.created_at),
        "synced_at": _time(found.synced_at),
        "errors": [{"path": path, "reason": reason} for path, reason in found.problems],
    }


def sources(values: Sequence[SourceStatus]) -> dict[str, Any]:
    return {"sources": [source(value) for value in values]}


def source_sync(value: SourceStatus, report: DirectoryReport) -> dict[str, Any]:
    """A source after a sync, and what the sync did."""
    return {"source": source(value), "sync": directory_report(report)}


def source_removal(value: Source, retired: int) -> dict[str, Any]:
    """A source removed, and how many of its documents were retired."""
    return {"name": value.name, "root": value.root, "retired": retired}


def import_result(result: ImportResult) -> dict[str, Any]:
    return asdict(result)


def recall(value: Recall) -> dict[str, Any]:
    return {
        "query": value.query,
        "budget_tokens": value.budget_tokens,
        "tokens_used": value.tokens_used,
        "left_out": value.left_out,
        "truncated": value.truncated,
        **match(value.hits),
        "hits": [hit(h) for h in value.hits],
        "graph_context": [graph_fact(f) for f in value.graph_context],
    }


def health() -> dict[str, Any]:
    return {"status": "ok"}


def version(value: BrainStats) -> dict[str, Any]:
    return {"version": value.version, "schema": value.store.schema_version}


def stats(value: BrainStats) -> dict[str, Any]:
    return {
        "version": value.version,
        "db_path": value.db_path,
        "documents": value.store.documents,
        "retired_documents": value.store.retired_documents,
        "chunks": value.store.chunks,
        "db_bytes": value.store.db_bytes,
        "rss_bytes": value.rss_bytes,
        "schema_version": value.store.schema_version,
        **embedder(value.embedder),
    }


def embedder(value: EmbedderInfo) -> dict[str, Any]:
    """The profile, its model and how many chunks have its vectors (a slow profile embeds in
    the background, so `embedded_chunks` may trail `chunks` for a while)."""
    return {
        "embedder": value.profile.value,
        "model_id": value.model_id,
        "embedding": "off"
        if value.model_id is None
        else ("background" if value.background else "inline"),
        "embedded_chunks": value.embedded_chunks,
        "switch": None
        if value.switching_to is None
        else {"to": value.switching_to, "embedded_chunks": value.switch_embedded},
    }


def explanation(value: Explanation) -> dict[str, Any]:
    return {
        "query": value.query,
        "document_id": value.document_id,
        "uri": value.uri,
        "mode": value.mode,
        "k": value.k,
        "best_per_document": value.best_per_document,
        "verdict": value.verdict.value,
        "returned": value.returned,
        "retired": value.retired,
        "rank": value.rank,
        "chunk_id": value.chunk_id,
        "fused_rank": value.fused_rank,
        "fused_score": value.fused_score,
        "excluded_by": list(value.excluded_by),
        "lists": [{**asdict(p), "label": label(p.retriever)} for p in value.positions],
        "depth": value.depth,
        "copy_of": value.copy_of,
    }


# knowledge graph


def _time(value: datetime | None) -> str | None:
    return format_time(value) if value is not None else None


def entity(value: Entity) -> dict[str, Any]:
    return {
        "id": value.id,
        "key": value.key,
        "name": value.name,
        "type": value.type,
        "aliases": list(value.aliases),
    }


def relationship(value: Relationship) -> dict[str, Any]:
    return {
        "id": value.id,
        "from": value.from_name,
        "from_id": value.from_id,
        "type": value.type,
        "to": value.to_name,
        "to_id": value.to_id,
        "valid_at": _time(value.valid_at),
        "invalid_at": _time(value.invalid_at),
        "created_at": _time(value.created_at),
        "superseded_at": _time(value.superseded_at),
        "current": value.current,
        "reason": value.reason.value if value.reason else None,
        "source": value.source,
        "supersedes": value.supersedes,
    }


def graph_ingest(value: IngestResult) -> dict[str, Any]:
    return {
        "at": format_time(value.at),
        "dry_run": value.dry_run,
        "relationships": [relationship_outcome(o) for o in value.relationships],
        "entities": [
            {"status": o.status.value, **entity(o.entity), "id": o.id} for o in value.entities
        ],
    }


def relationship_outcome(value: RelationshipOutcome) -> dict[str, Any]:
    r = value.relationship
    return {
        "id": value.id,
        "status": value.status.value,
        "from": r.from_name,
        "type": r.type,
        "to": r.to_name,
        "valid_at": _time(r.valid_at),
        "invalid_at": _time(r.invalid_at),
        "source": r.source,
        "supersedes": value.supersedes,
        "retired": [
            {"id": x.id, "reason": x.reason.value, "replaced_by": x.successor}
            for x in value.retired
        ],
    }


def relationship_history(value: History) -> dict[str, Any]:
    return {
        "id": value.id,
        "versions": [relationship(v) for v in value.versions],
        "current": relationship(value.current) if value.current else None,
    }


def relations(items: Sequence[Relationship], as_of: AsOf) -> dict[str, Any]:
    return {
        "as_of_valid": _time(as_of.valid),
        "as_of_known": _time(as_of.known),
        "relationships": [relationship(r) for r in items],
    }


def traversal(value: Traversal) -> dict[str, Any]:
    return {
        "from": entity(value.start),
        "depth": value.depth,
        "as_of_valid": _time(value.as_of.valid),
        "as_of_known": _time(value.as_of.known),
        "hops": [
            {
                "depth": h.depth,
                "path": [edge.id for edge in h.path],
                "relationship": relationship(h.relationship),
                "valid_from": _time(h.valid_from),
                "valid_until": _time(h.valid_until),
            }
            for h in value.hops
        ],
        "truncated": value.truncated,
    }


def graph_fact(value: GraphFact) -> dict[str, Any]:
    return {
        "text": value.text,
        "relationship": relationship(value.relationship),
        "trace": {"context": "graph", "entity": value.entity, "hit_rank": value.hit_rank},
    }


def search(
    query: str, mode: str, hits: Sequence[Hit], facts: Sequence[GraphFact] | None = None
) -> dict[str, Any]:
    """The answer to a search, the same from the CLI, HTTP and MCP; with the top hits' graph
    context when `facts` are given."""
    out = {
        "query": query,
        "mode": str(mode),
        **match(hits),
        "lists": lists(hits),
        "hits": [hit(h) for h in hits],
    }
    if facts is not None:
        out["graph_context"] = [graph_fact(f) for f in facts]
    return out


def lists(hits: Sequence[Hit]) -> dict[str, str]:
    """The lists the hits' traces name, each in words ("bm25": "keywords"): what the command
    line and the web page print, so that they keep no copy of the names."""
    names = {r.retriever for h in hits for r in h.trace.retrievers}
    names.update(f.retriever for h in hits for f in h.trace.fusion)
    return {name: label(name) for name in sorted(names)}


def match(hits: Sequence[Hit]) -> dict[str, Any]:
    """How good a match a result set is: its confidence (None when it is empty) and the
    same in words."""
    value = result_confidence(hits)
    view = None
    if value is not None:
        view = {
            "value": value.value,
            "coverage": value.coverage,
            "matched": value.matched,
            "weak": value.weak,
        }
    return {"confidence": view, "match": describe(value, hits=len(hits))}


def result_confidence(hits: Sequence[Hit]) -> Confidence | None:
    """The result set's confidence, which every hit it ranked carries (context added to a
    recall carries none)."""
    return next((h.trace.confidence for h in hits if h.trace.confidence is not None), None)


# models


def models_report(value: Mapping[str, Any]) -> dict[str, Any]:
    """What `nexusbrain models` says (brain/models.py's report: already JSON)."""
    return dict(value)


def models_check(checks: Sequence[ModelCheck]) -> dict[str, Any]:
    return {"checks": [asdict(c) for c in checks], "ok": all(c.ok for c in checks)}


def embeddings(
    model_id: str, vectors: np.ndarray, encoding: str, texts: Sequence[str]
) -> dict[str, Any]:
    """OpenAI's embeddings answer. Its usage counts words, not the model's tokens."""
    import base64

    import numpy as np

    def encoded(row: np.ndarray) -> Any:
        if encoding == "base64":
            return base64.b64encode(row.astype("<f4").tobytes()).decode("ascii")
        return row.astype(np.float32).tolist()

    words = sum(len(t.split()) for t in texts)
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": encoded(row)}
            for i, row in enumerate(vectors)
        ],
        "model": model_id,
        "usage": {"prompt_tokens": words, "total_tokens": words},
    }


def reranked(
    model_id: str,
    scores: Sequence[float],
    top_n: int | None,
    query: str,
    documents: Sequence[str],
    *,
    with_text: bool,
) -> dict[str, Any]:
    """The rerank answer: the best `top_n` (every one by default), best first, each with its
    index in the request, its score and, `with_text`, its text. Its usage counts words."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:top_n]
    results: list[dict[str, Any]] = []
    for i in order:
        result: dict[str, Any] = {"index": i, "relevance_score": scores[i]}
        if with_text:
            result["document"] = {"text": documents[i]}
        results.append(result)
    words = len(query.split()) + sum(len(d.split()) for d in documents)
    return {"model": model_id, "results": results, "usage": {"total_tokens": words}}


def served(models: Sequence[tuple[str, str, str]]) -> dict[str, Any]:
    """OpenAI's list of models; each also names its profile (`name`) and what it does."""
    return {
        "object": "list",
        "data": [
            {
                "id": model_id,
                "object": "model",
                "owned_by": "nexusbrain",
                "name": name,
                "kind": kind,
            }
            for model_id, name, kind in models
        ],
    }
