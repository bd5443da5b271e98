"""Search filters as an SQL condition over `documents d` (PostgreSQL)."""

from __future__ import annotations

from typing import Any

from nexusbrain.records import SearchFilters


def filter_sql(filters: SearchFilters) -> tuple[str, list[Any]]:
    """The condition (empty when there are no filters) and its parameters."""
    clauses: list[str] = []
    params: list[Any] = []
    if filters.domain is not None:
        clauses.append("d.domain = %s")
        params.append(filters.domain)
    if filters.path_prefix is not None:
        clauses.append("starts_with(d.uri, %s)")
        params.append(filters.path_prefix)
    if filters.document_id is not None:
        clauses.append("d.id = %s")
        params.append(filters.document_id)
    if filters.kind is not None:
        clauses.append("d.kind = %s")
        params.append(filters.kind.value)
    if filters.updated_after is not None:
        clauses.append("d.updated_at >= %s")
        params.append(filters.updated_after)
    if filters.updated_before is not None:
        clauses.append("d.updated_at < %s")
        params.append(filters.updated_before)
    return " AND ".join(clauses), params
