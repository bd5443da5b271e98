"""JSON lines: the export stream's format, one JSON object a line (blank lines skipped)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from nexusbrain.errors import InvalidInput


def parse_lines(lines: Iterable[bytes | str]) -> Iterator[dict[str, Any]]:
    """Each non-blank line as a dict. Raises InvalidInput naming the first bad line."""
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield parse_line(line, number)


def parse_line(line: bytes | str, number: int) -> dict[str, Any]:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise InvalidInput(f"line {number} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"line {number} is not a JSON object")
    return value
