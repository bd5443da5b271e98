"""JSON-ready views of records. Every interface (CLI --json, HTTP, MCP) answers with these, so
they give the same answer to the same question."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from nexusbrain.brain import BrainStats, Recall
from nexusbrain.clock import format_time
from nexusbrain.ingest.directory import DirectoryReport
from nexusbrain.records import Chunk, Document, Hit, ImportResult, Trace, WriteResult


def write_result(result: WriteResult) -> dict[str, Any]:
    return {
        "status": result.status.value,
        "id": result.document_id,
        "revision": result.revision,
        "chunks": result.chunks,
    }


def trace(value: Trace) -> dict[str, Any]:
    out: dict[str, Any] = {"retrievers": [asdict(r) for r in value.retrievers]}
    if value.fusion:
        out["fusion"] = [asdict(f) for f in value.fusion]
        out["fused_rank"] = value.fused_rank
    if value.prf_terms:
        out["prf_terms"] = list(value.prf_terms)
    if value.rerank is not None:
        out["rerank"] = asdict(value.rerank)
    if value.context is not None:
        out["context"] = value.context
    return out


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
        "span": {
            "char_start": value.char_start,
            "char_end": value.char_end,
            "line_start": value.line_start,
            "line_end": value.line_end,
        },
        "text": value.text,
        "trace": trace(value.trace),
    }


def chunk(value: Chunk) -> dict[str, Any]:
    return {
        "id": value.id,
        "ordinal": value.ordinal,
        "span": {
            "char_start": value.char_start,
            "char_end": value.char_end,
            "line_start": value.line_start,
            "line_end": value.line_end,
        },
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


def directory_report(report: DirectoryReport) -> dict[str, Any]:
    return {
        "root": report.root,
        "added": report.added,
        "updated": report.updated,
        "unchanged": report.unchanged,
        "deleted": report.deleted,
        "chunks": report.chunks,
        "errors": [{"path": p.path, "reason": p.reason} for p in report.errors],
        "seconds": round(report.seconds, 3),
    }


def import_result(result: ImportResult) -> dict[str, Any]:
    return asdict(result)


def recall(value: Recall) -> dict[str, Any]:
    return {
        "query": value.query,
        "budget_tokens": value.budget_tokens,
        "tokens_used": value.tokens_used,
        "dropped": value.dropped,
        "hits": [hit(h) for h in value.hits],
    }


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
    }
