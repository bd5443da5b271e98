"""`nexusbrain mcp` without a second brain: stdio relayed to the MCP endpoint of a server
already running for the same database (`nexusbrain serve --mcp`).

Agents that start one MCP process per conversation then share one warm brain: the relay
loads no model, no index and not the MCP SDK, only the standard library. Each JSON-RPC message
read from stdin (one per line, as MCP's stdio transport frames them) is POSTed to /mcp
(streamable HTTP); the answer, JSON or a stream of server-sent events, goes to stdout one
message per line. The session id and protocol version the server hands out on `initialize`
go with every later message, and the session is closed when stdin closes. Messages are
relayed in order, one at a time, as the client sent them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any, BinaryIO

from nexusbrain import wire

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
INTERNAL_ERROR = -32603


class Relay:
    """One MCP session on the server at `url`, on behalf of one stdio client."""

    def __init__(self, url: str, token: str | None) -> None:
        self.url = url
        self.token = token
        self.session: str | None = None
        self.version: str | None = None

    def send(self, message: bytes) -> list[bytes]:
        """Relay one message (or batch); the messages that answer it."""
        outgoing = _parsed(message)
        log.debug("-> %s", message[:200])
        try:
            response = wire.request(self.url, "POST", MCP_PATH, self._headers(), message)
        except (OSError, ValueError) as exc:
            return _errors(outgoing, f"the server at {self.url} did not answer: {exc}")
        if response.status < 300:  # an error answer's session id names no session
            self.session = response.headers.get("mcp-session-id", self.session)
        if response.status == 202:  # a notification or a response: nothing comes back
            return []
        answers = _messages(response)
        if not answers:
            why = f"the server at {self.url} answered HTTP {response.status} at {MCP_PATH}"
            why += _said(response.body)
            if response.status == 404:
                why += ": it does not serve MCP (start it with `nexusbrain serve --mcp`)"
            return _errors(outgoing, why)
        if response.status >= 400:  # HTTP-level errors come without the request's id
            answers = [_answering(outgoing, answer) for answer in answers]
        self._note_version(outgoing, answers)
        log.debug("<- %d %s", response.status, answers[0][:200])
        return answers

    def close(self) -> None:
        """End the session on the server (best effort: it times out there anyway)."""
        if self.session is None:
            return
        try:
            wire.request(self.url, "DELETE", MCP_PATH, self._headers())
        except (OSError, ValueError) as exc:
            log.debug("could not end the MCP session: %s", exc)

    def _headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        if self.version:
            headers["MCP-Protocol-Version"] = self.version
        return headers

    def _note_version(self, outgoing: Any, answers: list[bytes]) -> None:
        if not (isinstance(outgoing, dict) and outgoing.get("method") == "initialize"):
            return
        for answer in answers:
            result = _parsed(answer)
            if isinstance(result, dict) and isinstance(result.get("result"), dict):
                version = result["result"].get("protocolVersion")
                self.version = version if isinstance(version, str) else self.version


def relay(url: str, token: str | None, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Relay stdin to the server's MCP endpoint and its answers to stdout, until stdin
    closes."""
    session = Relay(url, token)
    log.info("relaying MCP to %s%s", url, MCP_PATH)
    try:
        for line in stdin:
            if line.strip():
                for answer in session.send(line.strip()):
                    stdout.write(answer + b"\n")
                    stdout.flush()
    finally:
        session.close()


def _messages(response: wire.Response) -> list[bytes]:
    """The JSON-RPC messages of a response: its JSON body, or the data of its events."""
    kind = response.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        return [event for event in _events(response.body) if event]
    body = response.body.strip()
    message = _parsed(body)
    if isinstance(message, list) or (isinstance(message, dict) and "jsonrpc" in message):
        return [body]
    return []  # not JSON-RPC: the HTTP API's error shape, or nothing


def _said(body: bytes) -> str:
    """The message of an answer in the HTTP API's error shape, if it is one."""
    error = _parsed(body)
    if isinstance(error, dict) and isinstance(error.get("error"), dict):
        return f": {error['error'].get('message', '')}"
    return ""


def _events(stream: bytes) -> Iterable[bytes]:
    for block in stream.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].strip() for line in block.split(b"\n") if line.startswith(b"data:")]
        yield b"\n".join(data)


def _answering(outgoing: Any, answer: bytes) -> bytes:
    """An error answer given the id of the request it answers, when it came without one."""
    error = _parsed(answer)
    asked = isinstance(outgoing, dict) and "id" in outgoing
    if asked and isinstance(error, dict) and error.get("id") is None and "error" in error:
        return json.dumps(error | {"id": outgoing["id"]}).encode()
    return answer


def _errors(outgoing: Any, message: str) -> list[bytes]:
    """A JSON-RPC error for each request in `outgoing` (notifications get none)."""
    requests = outgoing if isinstance(outgoing, list) else [outgoing]
    log.error("%s", message)
    return [
        json.dumps(
            {"jsonrpc": "2.0", "id": r["id"], "error": {"code": INTERNAL_ERROR, "message": message}}
        ).encode()
        for r in requests
        if isinstance(r, dict) and "id" in r
    ]


def _parsed(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None
