"""Search filters from loose input (query strings, JSON, CLI flags), with clear errors."""

from __future__ import annotations

from datetime import datetime

from nexusbrain.clock import parse_time
from nexusbrain.errors import InvalidInput
from nexusbrain.records import DocumentKind, SearchFilters


def make_filters(
    *,
    domain: str | None = None,
    path_prefix: str | None = None,
    document_id: int | None = None,
    kind: str | None = None,
    updated_after: str | None = None,
    updated_before: str | None = None,
) -> SearchFilters:
    return SearchFilters(
        domain=domain or None,
        path_prefix=path_prefix or None,
        document_id=document_id,
        kind=_kind(kind),
        updated_after=_time("updated_after", updated_after),
        updated_before=_time("updated_before", updated_before),
    )


def _kind(value: str | None) -> DocumentKind | None:
    if not value:
        return None
    try:
        return DocumentKind(value)
    except ValueError:
        choices = ", ".join(k.value for k in DocumentKind)
        raise InvalidInput(f"kind={value!r} is not one of: {choices}") from None


def _time(name: str, value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return parse_time(value)
    except ValueError:
        raise InvalidInput(
            f"{name}={value!r} is not an ISO-8601 time in years 1 to 9999 (e.g. 2025-01-31)"
        ) from None
