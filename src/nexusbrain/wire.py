"""The little HTTP/1.1 that clients of a running server speak (the command line's fast path,
the stdio MCP relay): one request per connection (`Connection: close`), a body read by its
Content-Length, to the end, or in chunks.

http.client would do the same, but importing it costs more than the rest of the fast path
(it brings the email package and ssl)."""

from __future__ import annotations

import socket
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

MAX_HEAD = 64 * 1024
CONNECT_SECONDS = 2.0
ANSWER_SECONDS = 600.0


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: Mapping[str, str]  # names in lower case
    body: bytes


def connect(url: str) -> socket.socket:
    """A connection to the server at `url` (http://host:port, or https://). Raises OSError
    when nothing answers."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    sock = socket.create_connection((host, port), timeout=CONNECT_SECONDS)
    sock.settimeout(ANSWER_SECONDS)
    if parts.scheme != "https":
        return sock
    import ssl  # only for a server behind TLS

    return ssl.create_default_context().wrap_socket(sock, server_hostname=host)


def request(
    url: str,
    method: str,
    target: str,
    headers: Mapping[str, str],
    payload: bytes = b"",
    sock: socket.socket | None = None,
) -> Response:
    """One request to the server at `url` (on `sock` if given, else a new connection), and
    its response. Raises OSError when the connection fails, ValueError when the answer is
    not HTTP."""
    with sock or connect(url) as connection:
        host = urllib.parse.urlsplit(url).netloc
        return exchange(connection, method, target, host, headers, payload)


def exchange(
    sock: socket.socket,
    method: str,
    target: str,
    host: str,
    headers: Mapping[str, str],
    payload: bytes = b"",
) -> Response:
    """Send one request on `sock` and read its response."""
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


def _response(raw: bytes) -> Response:
    head, found, body = raw.partition(b"\r\n\r\n")
    if not found or len(head) > MAX_HEAD:
        raise ValueError("the answer is not an HTTP response")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    version, _, rest = status_line.partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise ValueError(f"the answer is not an HTTP response: {status_line[:80]!r}")
    fields: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    if fields.get("transfer-encoding", "").lower() == "chunked":
        return Response(int(code), fields, _dechunked(body))
    if "content-length" in fields:
        length = int(fields["content-length"])
        if len(body) < length:
            raise ValueError(f"the answer was cut short: {len(body)} of {length} bytes")
        body = body[:length]
    return Response(int(code), fields, body)


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
