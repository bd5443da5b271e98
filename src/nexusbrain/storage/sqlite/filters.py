"""Search filters as an SQL condition over `documents d` (SQLite)."""

from __future__ import annotations

from typing import Any

from nexusbrain.clock import format_time
from nexusbrain.records import SearchFilters


def filter_sql(filters: SearchFilters) -> tuple[str, list[Any]]:
    """The condition (empty when there are no filters) and its parameters."""
    clauses: list[str] = []
    params: list[Any] = []
    if filters.domain is not None:
        clauses.append("d.domain = ?")
        params.append(filters.domain)
    if filters.path_prefix is not None:
        clauses.append("substr(d.uri, 1, ?) = ?")
        params.extend([len(filters.path_prefix), filters.path_prefix])
    if filters.document_id is not None:
        clauses.append("d.id = ?")
        params.append(filters.document_id)
    if filters.kind is not None:
        clauses.append("d.kind = ?")
        params.append(filters.kind.value)
    if filters.updated_after is not None:
        clauses.append("d.updated_at >= ?")
        params.append(format_time(filters.updated_after))
    if filters.updated_before is not None:
        clauses.append("d.updated_at < ?")
        params.append(format_time(filters.updated_before))
    return " AND ".join(clauses), params
