"""Answers from a server already running for the brain: one HTTP request per command.

This is the command line's fast path. It imports the standard library, click and orjson (a
small C extension; the JSON it prints must be the very bytes the in-process path prints), and
nothing of the brain: no numpy, no model, no web framework. `tests/test_cli_client.py` checks
that from a real process. It speaks HTTP/1.1 on a plain socket (wire.py): http.client
would bring the email package and ssl, half of the fast path's imports.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

from nexusbrain import discovery, wire
from nexusbrain.cli.answers import Filters, View, given
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
_ERRORS: dict[str, type[BrainError]] = {
    cls.code: cls
    for cls in (NotFound, InvalidInput, TooLarge, Conflict, ConfigError, MissingExtra, StorageError)
}


def reach(db: str | None) -> Remote | None:
    """The running server for this command (discovery.locate); None: work in process."""
    found = discovery.locate(db)
    return Remote(found.url, found.token) if found is not None else None


class Remote:
    """A running server; each method sends one request (a document named by a path that is
    not its uri takes a second, as Brain.document tries it)."""

    def __init__(self, url: str, token: str | None):
        self.url = url
        self.token = token

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
        try:
            response = wire.request(self.url, method, target, headers, payload)
        except (OSError, ValueError) as exc:
            raise BrainError(f"the server at {self.url} did not answer {path}: {exc}") from None
        status, data = response.status, response.body
        if status >= 400:
            raise _error(status, data, self.url)
        answer: View = orjson.loads(data)
        return answer


def _flag(value: bool) -> str | None:
    return "true" if value else None


def _candidates(ref: str) -> list[str]:
    """The ref as given, then the file it names here resolved (as the server stores paths).
    A ref that cannot be a path here ('~nobody', a name too long) is only itself."""
    try:
        path = Path(ref).expanduser()
        if not path.exists():
            return [ref]
        resolved = path.resolve().as_posix()
    except (OSError, RuntimeError, ValueError):
        return [ref]
    return [ref] if resolved == ref else [ref, resolved]


def _error(status: int, data: bytes, url: str) -> BrainError:
    """The server's error as the in-process path raises it: same class, same message."""
    try:
        error = orjson.loads(data)["error"]
        code, message = str(error["code"]), str(error["message"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return BrainError(f"the server at {url} answered HTTP {status}")
    return _ERRORS.get(code, BrainError)(message)
