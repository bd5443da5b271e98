"""Which Host and Origin headers are this server's own: the check that keeps web pages out.

A page of another site must not read or write the brain through the user's browser:
- DNS rebinding: the page's name (evil.example) comes to resolve to 127.0.0.1, and the browser
  then sends `Host: evil.example:8765` to the brain. Only the server's own names are answered:
  127.0.0.1, localhost and [::1] with the bound port, the bound address when it is a specific
  one, and the names of BRAIN_ALLOWED_HOSTS (`*` answers any name; use it only with a token).
- Cross-site requests: a browser names the page's origin in `Origin` on every request but a
  plain GET. A request whose Origin is not one of the server's own names is refused, so is
  `Origin: null` (sandboxed frames, files), unless the browser's Sec-Fetch-Site says the
  request is the page's own (a no-referrer page posting a form to itself sends null).
- Simple requests: a page may POST text/plain or a form to any site without asking first, so
  the JSON endpoints refuse those content types (the sign-in form of the web UI excepted).

The Guard applies this to every route, /mcp included.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from nexusbrain.api.ratelimit import is_loopback

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})
SIMPLE_CONTENT_TYPES = frozenset(
    {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data"}
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class AllowedHosts:
    """Host names with a port ("localhost:8765"), names answered on any port ("brain.lan"),
    or any name at all."""

    with_port: frozenset[str]
    any_port: frozenset[str] = frozenset()
    any_host: bool = False

    @classmethod
    def of_server(cls, host: str, port: int, extra: Iterable[str] = ()) -> AllowedHosts:
        names = {f"{name}:{port}" for name in LOOPBACK_NAMES}
        if host not in WILDCARD_BINDS and not is_loopback(host):
            names.add(f"{_bracketed(host.lower())}:{port}")
        given = [e.strip().lower() for e in extra if e.strip()]
        with_port = {e for e in given if _split(e)[1] is not None}
        any_port = {_bracketed(e) for e in given if e not in with_port and e != "*"}
        return cls(frozenset(names | with_port), frozenset(any_port), "*" in given)

    def names(self) -> str:
        """For messages: the names answered."""
        shown = sorted(self.with_port) + sorted(self.any_port)
        return "any name" if self.any_host else ", ".join(shown)

    def host_ok(self, header: str) -> bool:
        """`header` is a Host header: name[:port], port 80 when absent."""
        if self.any_host:
            return True
        name, port = _split(header.strip().lower())
        return name in self.any_port or f"{name}:{port or 80}" in self.with_port

    def origin_ok(self, origin: str, host: str) -> bool:
        """An Origin header, sent with the Host header `host`: the request's own origin, or
        another of the server's names. `null` and other schemes are refused."""
        try:
            parts = urlsplit(origin.strip().lower())
            port = parts.port
        except ValueError:
            return False
        if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path:
            return False
        name = _bracketed(parts.hostname)
        here = f"{name}:{port}" if port else name
        if here == host.strip().lower():
            return True
        if self.any_host:
            return False  # any Host is answered, so only the request's own origin is known
        return name in self.any_port or f"{name}:{port or _DEFAULT_PORTS[parts.scheme]}" in (
            self.with_port
        )


def simple_content_type(header: str) -> bool:
    """Whether a Content-Type is one a page may send anywhere without a CORS preflight."""
    return header.split(";", 1)[0].strip().lower() in SIMPLE_CONTENT_TYPES


def _split(host: str) -> tuple[str, int | None]:
    """("name", port) of "name:port", "[v6]:port", "name" or "[v6]"."""
    name, colon, port = host.rpartition(":")
    if not colon or (":" in name and not name.endswith("]")) or not port.isdigit():
        return host, None
    return name, int(port)


def _bracketed(name: str) -> str:
    return f"[{name}]" if ":" in name and not name.startswith("[") else name
