"""The HTTP client of a model server (an OpenAI-compatible embedder, a reranker): JSON
requests with a timeout each, retries with backoff on 429, 5xx, timeouts and dropped
connections, and what went wrong said in words.

httpx (with the TLS, e-mail and cookie modules it loads) is imported when a server is first
made, not with this module: every brain imports it (brain/models.py), and a brain on the
shipped models never asks a server, so the command line's cold start does not pay for it.

The key travels in the Authorization header only: no message, log line or repr holds it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from nexusbrain.errors import ModelUnavailable

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

RETRIES = 4  # tries after the first, for work that can wait (a write's vectors)
BACKOFF = 0.5  # seconds before the first retry; doubled each time
MOST_WAIT = 8.0  # the longest pause between tries, Retry-After included
COOL_DOWN = 5.0  # seconds a search leaves a server alone after it failed one
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


class Refused(ModelUnavailable):
    """The server answered, and said no: a status that retrying does not change (401, 404,
    400...). `status` is it; `detail` the server's own words, if any."""

    def __init__(self, message: str, status: int, detail: str) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


class ModelServer:
    """One server: its base URL, what it is to a reader ("the embedding server"), its key.
    Thread-safe: one connection pool for every thread that asks."""

    def __init__(
        self,
        url: str,
        what: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        retries: int = RETRIES,
        connections: int = 8,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        """`sleep` pauses between tries (a test's records them); by default a pause that
        `interrupt` ends."""
        self.url = url.rstrip("/")
        self.what = what
        self.timeout = timeout
        self.retries = retries
        self._interrupted = threading.Event()
        self._sleep = sleep or self._interrupted.wait
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._keyed = bool(api_key)
        import httpx

        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        self._client = httpx.Client(headers=headers, limits=limits, follow_redirects=True)
        self._down_until = 0.0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ModelServer({self.url!r}, {self.what!r})"

    def close(self) -> None:
        self.interrupt()
        self._client.close()

    def interrupt(self) -> None:
        """For good: no more tries after a failure, and a pause before one ends now, so that
        whoever waits on a request (a brain that closes, waiting for its background batch)
        waits for the try in flight at most, not for every retry of a server that is down."""
        self._interrupted.set()

    def post(
        self,
        path: str,
        body: Mapping[str, Any],
        *,
        timeout: float | None = None,
        retries: int | None = None,
    ) -> Any:
        """The JSON answer to a POST of `body` to `path`; ModelUnavailable (Refused for a
        status that retrying does not change) once the tries are spent."""
        return self._ask("POST", path, body, timeout, self.retries if retries is None else retries)

    def get(self, path: str, *, timeout: float | None = None) -> Any:
        return self._ask("GET", path, None, timeout, 0)

    def ask_now(self, path: str, body: Mapping[str, Any], timeout: float) -> Any:
        """For a search, which cannot wait: one try within `timeout`, and after a failure no
        try for COOL_DOWN seconds (each search would otherwise wait the whole timeout). A
        refusal answers at once, and leaves the next try alone."""
        with self._lock:
            waiting = self._down_until - time.monotonic()
        if waiting > 0:
            raise ModelUnavailable(
                f"the {self.what} at {self.url} failed a moment ago; not asked again for "
                f"{waiting:.0f} s"
            )
        try:
            return self._ask("POST", path, body, timeout, 0)
        except Refused:
            raise
        except ModelUnavailable:
            with self._lock:
                self._down_until = time.monotonic() + COOL_DOWN
            raise

    def _ask(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None,
        timeout: float | None,
        retries: int,
    ) -> Any:
        url = self.url + path
        for attempt in range(retries + 1):
            try:
                answer = self._try(method, url, body, timeout or self.timeout)
            except _Again as again:
                if attempt == retries or self._interrupted.is_set():
                    raise again.failure from None
                wait = again.after if again.after is not None else BACKOFF * 2**attempt
                log.warning("%s; trying again in %.1f s", again.failure.message, wait)
                self._sleep(min(MOST_WAIT, wait))
                if self._interrupted.is_set():
                    raise again.failure from None
                continue
            with self._lock:  # it answers: searches need not wait out a cool-down
                self._down_until = 0.0
            return answer
        raise AssertionError("unreachable")  # pragma: no cover

    def _try(self, method: str, url: str, body: Mapping[str, Any] | None, timeout: float) -> Any:
        """The JSON answer; _Again for a failure worth another try, Refused for one that is
        not."""
        import httpx

        try:
            response = self._client.request(method, url, json=body, timeout=timeout)
        except httpx.TimeoutException:
            raise _Again(
                ModelUnavailable(
                    f"the {self.what} at {self.url} did not answer within {timeout:g} s"
                )
            ) from None
        except httpx.TransportError as exc:
            raise _Again(
                ModelUnavailable(f"the {self.what} at {self.url} cannot be reached: {_reason(exc)}")
            ) from None
        if response.status_code >= 300:
            self._failed(response, url)
        try:
            return response.json()
        except ValueError:
            raise ModelUnavailable(
                f"the {self.what} at {self.url} answered {url} with something that is not "
                "JSON: is the URL its API's base (ending in /v1)?"
            ) from None

    def _failed(self, response: httpx.Response, url: str) -> None:
        status, detail = response.status_code, _detail(response)
        said = f" ({detail})" if detail else ""
        if status in RETRY_STATUSES:
            busy = "is rate limiting" if status == 429 else "failed"
            failure = ModelUnavailable(f"the {self.what} at {self.url} {busy}: {status}{said}")
            raise _Again(failure, _retry_after(response))
        if status in (401, 403):
            message = (
                f"the {self.what} at {self.url} refused the key ({status}{said})"
                if self._keyed
                else f"the {self.what} at {self.url} asks for a key ({status}{said})"
            )
            raise Refused(message, status, detail)
        raise Refused(f"the {self.what} refused {url}: {status}{said}", status, detail)


class _Again(Exception):
    """A failure worth another try, after `after` seconds if the server said (Retry-After)."""

    def __init__(self, failure: ModelUnavailable, after: float | None = None) -> None:
        super().__init__(failure.message)
        self.failure = failure
        self.after = after


def _reason(exc: httpx.TransportError) -> str:
    import httpx

    if isinstance(exc, httpx.ConnectError):
        return "nothing answers there (is it running?)"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "it closed the connection before answering"
    return str(exc) or type(exc).__name__


def _detail(response: httpx.Response) -> str:
    """The server's own words: an OpenAI-style {"error": {"message"}}, {"error": "..."},
    {"detail": ...} or a short text."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:200]
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        return str(error)[:300] if error is not None else ""
    return ""


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After", "").strip()
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None
