"""The little HTTP/1.1 the command line's fast path speaks: one request per connection
(`Connection: close`), a body read by its Content-Length, to the end, or in chunks.

http.client would do the same, but importing it costs more than the rest of the fast path
(it brings the email package and ssl)."""

from __future__ import annotations

import socket
from collections.abc import Mapping

MAX_HEAD = 64 * 1024


def exchange(
    sock: socket.socket,
    method: str,
    target: str,
    host: str,
    headers: Mapping[str, str],
    payload: bytes = b"",
) -> tuple[int, bytes]:
    """Send one request and read its response: (status, body). Raises OSError when the
    connection fails, ValueError when the answer is not HTTP."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if payload or method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(payload)}")
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload)
    return _response(_read_all(sock))


def _read_all(sock: socket.socket) -> bytes:
    parts = []
    while piece := sock.recv(65536):
        parts.append(piece)
    return b"".join(parts)


def _response(raw: bytes) -> tuple[int, bytes]:
    head, found, body = raw.partition(b"\r\n\r\n")
    if not found or len(head) > MAX_HEAD:
        raise ValueError("the answer is not an HTTP response")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    version, _, rest = status_line.partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise ValueError(f"the answer is not an HTTP response: {status_line[:80]!r}")
    fields = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    if fields.get("transfer-encoding", "").lower() == "chunked":
        return int(code), _dechunked(body)
    if "content-length" in fields:
        length = int(fields["content-length"])
        if len(body) < length:
            raise ValueError(f"the answer was cut short: {len(body)} of {length} bytes")
        return int(code), body[:length]
    return int(code), body


def _dechunked(body: bytes) -> bytes:
    out: list[bytes] = []
    while True:
        size_line, found, body = body.partition(b"\r\n")
        if not found:
            raise ValueError("the answer's chunks were cut short")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return b"".join(out)
        if len(body) < size + 2:
            raise ValueError("the answer's chunks were cut short")
        out.append(body[:size])
        body = body[size + 2 :]
