"""Answers from a server already running for the brain: one HTTP request per command.

This is the command line's fast path. It imports the standard library, click and orjson (a
small C extension; the JSON it prints must be the very bytes the in-process path prints), the
operations' declarations (standard library only) and nothing of the brain: no numpy, no
model, no web framework. `tests/test_cli_client.py` checks that from a real process. It
speaks HTTP/1.1 on a plain socket (wire.py): http.client would bring the email package and
ssl, half of the fast path's imports.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

from nexusbrain import discovery, wire
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
from nexusbrain.operations import BY_NAME
from nexusbrain.operations.args import Arg, Group, Kind, members
from nexusbrain.operations.spec import ByReference, Http, Operation, View, in_body, in_path

_ERRORS: dict[str, type[BrainError]] = {
    cls.code: cls
    for cls in (NotFound, InvalidInput, TooLarge, Conflict, ConfigError, MissingExtra, StorageError)
}


def reach(db: str | None) -> Remote | None:
    """The running server for this command (discovery.locate); None: work in process."""
    found = discovery.locate(db)
    return Remote(found.url, found.token) if found is not None else None


class Remote:
    """A running server; each operation is one request to its route (a document named by a
    path that is not its uri takes a second, as Brain.document tries it)."""

    def __init__(self, url: str, token: str | None):
        self.url = url
        self.token = token

    def call(self, operation: Operation, args: Mapping[str, Any]) -> View:
        if operation.remote is not None:
            return self._by_reference(operation.remote, args)
        http = operation.http
        assert http is not None, f"no server answers {operation.name}"
        ref = next((a for a in members(operation.call_args()) if a.kind is Kind.REF), None)
        if ref is None:
            view = self._ask(operation, http, args)
        else:
            name = ref.name
            view = _tried(str(args[name]), lambda c: self._ask(operation, http, {**args, name: c}))
        for key in http.adds:  # the server's own status, beyond what the operation answers
            view.pop(key, None)
        return view

    def _by_reference(self, route: ByReference, args: Mapping[str, Any]) -> View:
        ref = str(args["ref"])
        if ref.isascii() and ref.isdigit():
            return self.call(BY_NAME[route.by_id], {**args, "document_id": int(ref)})
        by_uri = BY_NAME[route.by_uri]
        return _tried(ref, lambda uri: self.call(by_uri, {**args, "uri": uri}))

    def _ask(self, operation: Operation, http: Http, args: Mapping[str, Any]) -> View:
        path, params, body = _request(operation, http, args)
        return self._send(http.method, path, params, body if http.body is not None else None)

    def _send(
        self, method: str, path: str, params: Mapping[str, Any], body: Mapping[str, Any] | None
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


def _request(
    operation: Operation, http: Http, args: Mapping[str, Any]
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The route's path, query parameters and body for these arguments; what the route would
    take by default is left out."""
    path, params, body = http.path, dict[str, Any](), dict[str, Any]()
    for arg in operation.call_args():
        value = args.get(arg.name)
        if isinstance(arg, Group):
            if value and in_body(arg, http):
                body[arg.name] = value
            elif value:
                params |= {
                    m.http_name: _query(value[m.name]) for m in arg.members if m.name in value
                }
        elif not _sent(arg, value):
            continue
        elif in_path(arg, http):
            path = path.replace(f"{{{arg.http_name}}}", str(value))
        elif in_body(arg, http):
            body[arg.wire_name] = value
        else:
            params[arg.http_name] = _query(value)
    return path, params, body


def _sent(arg: Arg, value: Any) -> bool:
    """Whether a value goes into the request: not what the route takes when it is left out."""
    if value is None:
        return False
    if isinstance(value, tuple | list):
        return list(value) != list(arg.default or ())
    return bool(value != arg.default)


def _query(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _tried(ref: str, ask: Callable[[str], View]) -> View:
    """The answer for the reference as given, then (when it names a file here) for the file's
    absolute path: the order Brain.document tries them in; the first error if neither."""
    first: NotFound | None = None
    for candidate in _candidates(ref):
        try:
            return ask(candidate)
        except NotFound as exc:
            first = first or exc
    assert first is not None
    raise first


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
