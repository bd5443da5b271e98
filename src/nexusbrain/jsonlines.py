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


def split_lines(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of a stream that arrives in pieces (a request's body), as they complete. A
    piece without a line break is only appended (splitting the whole buffer each time made
    one long line quadratic)."""
    buffer = bytearray()
    for piece in pieces:
        buffer += piece
        if b"\n" not in piece:
            continue
        *lines, rest = bytes(buffer).split(b"\n")
        buffer = bytearray(rest)
        yield from lines
    if buffer:
        yield bytes(buffer)


def parse_line(line: bytes | str, number: int) -> dict[str, Any]:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise InvalidInput(f"line {number} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"line {number} is not a JSON object")
    return value
