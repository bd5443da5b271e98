"""Search filters as an SQL condition over `documents d`, on any engine."""

from __future__ import annotations

from typing import Any

from nexusbrain.records import SearchFilters
from nexusbrain.storage.sql.dialect import Connection, Dialect


def filter_sql(filters: SearchFilters, dialect: Dialect) -> tuple[str, list[Any]]:
    """The condition (empty when there are no filters), in the dialect's SQL, and its
    parameters."""
    clauses: list[str] = []
    params: list[Any] = []
    if filters.domain is not None:
        clauses.append("d.domain = ?")
        params.append(filters.domain)
    if filters.path_prefix is not None:
        clause, values = dialect.prefix("d.uri", filters.path_prefix)
        clauses.append(clause)
        params.extend(values)
    if filters.document_id is not None:
        clauses.append("d.id = ?")
        params.append(filters.document_id)
    if filters.kind is not None:
        clauses.append("d.kind = ?")
        params.append(filters.kind.value)
    if filters.updated_after is not None:
        clauses.append("d.updated_at >= ?")
        params.append(dialect.time_param(filters.updated_after))
    if filters.updated_before is not None:
        clauses.append("d.updated_at < ?")
        params.append(dialect.time_param(filters.updated_before))
    return dialect.sql(" AND ".join(clauses)), params


def chunk_ids(conn: Connection, filters: SearchFilters, dialect: Dialect) -> list[int]:
    """Ids of the live chunks that pass the filters."""
    where, params = filter_sql(filters, dialect)
    query = "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id"
    rows = conn.execute(query + (f" WHERE {where}" if where else ""), params).fetchall()
    return [row[0] for row in rows]
