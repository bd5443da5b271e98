"""Answers from a server already running for the brain: one HTTP request per command.

This is the command line's fast path. It imports the standard library, click and orjson (a
small C extension; the JSON it prints must be the very bytes the in-process path prints), and
nothing of the brain: no numpy, no model, no web framework. `tests/test_cli_client.py` checks
that from a real process. It speaks HTTP/1.1 on a plain socket (cli/wire.py): http.client
would bring the email package and ssl, half of the fast path's imports.
"""

from __future__ import annotations

import socket
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

from nexusbrain import discovery
from nexusbrain.cli import wire
from nexusbrain.cli.answers import Filters, View, given
from nexusbrain.config import api_token, resolve_db, server_url
from nexusbrain.errors import (
    BrainError,
    ConfigError,
    Conflict,
    InvalidInput,
    MissingExtra,
    NotFound,
    StorageError,
    TooLarge,
)

Params = Mapping[str, str | int]
CONNECT_SECONDS = 2.0
ANSWER_SECONDS = 600.0
_ERRORS: dict[str, type[BrainError]] = {
    cls.code: cls
    for cls in (NotFound, InvalidInput, TooLarge, Conflict, ConfigError, MissingExtra, StorageError)
}


def reach(db: str | None) -> Remote | None:
    """The server for this command: BRAIN_URL when --db is not given, else the one that the
    discovery file beside the database names, if it answers. None: work in process."""
    if db is None:
        url = server_url()
        if url is not None:
            remote = Remote.connect(url, api_token())
            if remote is None:
                raise BrainError(
                    f"nothing answers at BRAIN_URL={url}: start `nexusbrain serve` there, "
                    "or unset BRAIN_URL to work in process"
                )
            return remote
    info = discovery.find(resolve_db(db))
    if info is None:
        return None
    return Remote.connect(info.url, info.token() or api_token())


class Remote:
    """A running server; each method sends one request (a document named by a path that is
    not its uri takes a second, as Brain.document tries it)."""

    def __init__(self, url: str, token: str | None, first: socket.socket | None = None):
        self.url = url
        self.token = token
        self._next = first  # the connection `connect` opened, for the first request

    @classmethod
    def connect(cls, url: str, token: str | None) -> Remote | None:
        """The server at `url`; None when nothing answers there."""
        try:
            first = _open(url)
        except OSError:
            return None
        return cls(url, token, first)

    def close(self) -> None:
        if self._next is not None:
            self._next.close()
            self._next = None

    def search(
        self, query: str, *, k: int | None, mode: str, filters: Filters, best_per_document: bool
    ) -> View:
        params = given(q=query, k=k, mode=mode, best_per_document=_flag(best_per_document))
        return self._call("GET", "/search", params | filters.params())

    def recall(self, query: str, *, k: int | None, budget_tokens: int | None, mode: str) -> View:
        body = given(query=query, k=k, budget_tokens=budget_tokens, mode=mode)
        return self._call("POST", "/recall", body=body)

    def explain(
        self,
        query: str,
        document: str,
        *,
        k: int | None,
        mode: str,
        filters: Filters,
        best_per_document: bool,
    ) -> View:
        flags = given(q=query, k=k, mode=mode, best_per_document=_flag(best_per_document))
        params = flags | filters.params()
        return self._by_reference(document, lambda ref: ("/explain", params | {"doc": ref}))

    def document(self, ref: str, *, chunks: bool) -> View:
        flags = given(chunks=_flag(chunks))
        if ref.isascii() and ref.isdigit():
            return self._call("GET", f"/documents/{ref}", flags)
        return self._by_reference(ref, lambda uri: ("/documents", flags | {"uri": uri}))

    def add(
        self, text: str, *, source: str | None, domain: str | None, tags: tuple[str, ...]
    ) -> View:
        body: dict[str, Any] = given(text=text, source=source, domain=domain)
        return self._call("POST", "/add", body=body | {"tags": list(tags)})

    def stats(self) -> View:
        view = self._call("GET", "/stats")
        view.pop("envelope", None)  # the server's own status, beyond what `stats` shows
        return view

    def graph_add(self, request: Mapping[str, Any], *, dry_run: bool) -> View:
        return self._call("POST", "/ingest", given(dry_run=_flag(dry_run)), body=dict(request))

    def relations(
        self,
        from_name: str | None,
        *,
        to_name: str | None,
        type: str | None,
        as_of_valid: str | None,
        as_of_known: str | None,
    ) -> View:
        params = given(
            to=to_name, type=type, as_of_valid=as_of_valid, as_of_known=as_of_known
        ) | given(**{"from": from_name})
        return self._call("GET", "/graph/relations", params)

    def history(self, relationship_id: int) -> View:
        return self._call("GET", f"/graph/relationships/{relationship_id}/history")

    def traverse(
        self, start: str, *, depth: int, as_of_valid: str | None, as_of_known: str | None
    ) -> View:
        params = given(depth=depth, as_of_valid=as_of_valid, as_of_known=as_of_known)
        return self._call("GET", "/graph/traverse", {"from": start, **params})

    def _by_reference(self, ref: str, request: Callable[[str], tuple[str, Params]]) -> View:
        """Ask with the reference as given, then (when it names a file here) with the file's
        absolute path: the order Brain.document tries them in; the first error if neither."""
        first: NotFound | None = None
        for candidate in _candidates(ref):
            path, params = request(candidate)
            try:
                return self._call("GET", path, params)
            except NotFound as exc:
                first = first or exc
        assert first is not None
        raise first

    def _call(
        self,
        method: str,
        path: str,
        params: Params | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> View:
        target = f"{path}?{urllib.parse.urlencode(params)}" if params else path
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        payload = b""
        if body is not None:
            payload = orjson.dumps(body)
            headers["Content-Type"] = "application/json"
        connection, self._next = self._next, None
        try:
            with connection or _open(self.url) as sock:
                status, data = wire.exchange(
                    sock, method, target, _netloc(self.url), headers, payload
                )
        except (OSError, ValueError) as exc:
            raise BrainError(f"the server at {self.url} did not answer {path}: {exc}") from None
        if status >= 400:
            raise _error(status, data, self.url)
        answer: View = orjson.loads(data)
        return answer


def _open(url: str) -> socket.socket:
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    sock = socket.create_connection((host, port), timeout=CONNECT_SECONDS)
    sock.settimeout(ANSWER_SECONDS)
    if parts.scheme != "https":
        return sock
    import ssl  # only for a server behind TLS

    return ssl.create_default_context().wrap_socket(sock, server_hostname=host)


def _netloc(url: str) -> str:
    return urllib.parse.urlsplit(url).netloc


def _flag(value: bool) -> str | None:
    return "true" if value else None


def _candidates(ref: str) -> list[str]:
    path = Path(ref).expanduser()
    if not path.exists():
        return [ref]
    resolved = path.resolve().as_posix()
    return [ref] if resolved == ref else [ref, resolved]


def _error(status: int, data: bytes, url: str) -> BrainError:
    """The server's error as the in-process path raises it: same class, same message."""
    try:
        error = orjson.loads(data)["error"]
        code, message = str(error["code"]), str(error["message"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return BrainError(f"the server at {url} answered HTTP {status}")
    return _ERRORS.get(code, BrainError)(message)
