"""No web page can read or write the brain through the user's browser (issue 17, finding 7):
Host and Origin are checked on every route, and JSON endpoints refuse the content types a
page may send without asking (text/plain, forms). The requests here are shaped as a browser
sends them; the last tests drive a real Chromium from another origin and by DNS rebinding."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from nexusbrain.api.app import create_app
from nexusbrain.brain import Brain
from nexusbrain.config import Limits, Profile, ServerSettings, Settings, server_settings
from nexusbrain.mcp_server.http import mount_mcp

from ..conftest import LiveServer, _serve, free_port
from ..test_api import assert_error

EVIL = "http://evil.example"
MEMORY = {"text": "planted by another site"}


def one_document_export(tmp_path: Path) -> bytes:
    """An export stream of one document, as a page would post it to /import."""
    with Brain.open(settings=Settings(db=tmp_path / "src.db", embedder=Profile.HASHING)) as source:
        source.add_memory("planted by an import from another site")
        return b"".join(orjson.dumps(r) + b"\n" for r in source.admin.export())


def stored(http: httpx.Client) -> int:
    return int(http.get("/stats").json()["documents"])


def port_of(server: LiveServer) -> int:
    return int(server.url.rsplit(":", 1)[1])


@pytest.mark.parametrize("path", ["/export", "/health", "/stats", "/openapi.json", "/app"])
def test_another_host_name_is_refused_on_every_route(live_server: LiveServer, path: str) -> None:
    """DNS rebinding: evil.example resolves to 127.0.0.1, the browser sends its name."""
    with live_server.client() as http:
        http.post("/add", json={"text": "a secret note"})
        for host in ("evil.example", f"evil.example:{port_of(live_server)}", "127.0.0.1:1"):
            refused = http.get(path, headers={"Host": host})
            error = assert_error(refused, 421, "host_not_allowed")
            assert "BRAIN_ALLOWED_HOSTS" in error["message"]
            assert b"secret" not in refused.content


def test_loopback_names_with_the_bound_port_are_answered(live_server: LiveServer) -> None:
    port = port_of(live_server)
    with live_server.client() as http:
        for host in (
            f"127.0.0.1:{port}",
            f"localhost:{port}",
            f"[::1]:{port}",
            f"LOCALHOST:{port}",
        ):
            assert http.get("/health", headers={"Host": host}).status_code == 200, host
        for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
            answered = http.post("/add", json=MEMORY, headers={"Origin": origin})
            assert answered.status_code == 200, origin


@pytest.mark.parametrize(
    "origin",
    [
        EVIL,
        "null",
        "http://localhost:3000",
        "http://127.0.0.1",
        "file://",
        "https://127.0.0.1.evil.example",
    ],
)
def test_a_write_from_another_origin_is_refused(live_server: LiveServer, origin: str) -> None:
    with live_server.client() as http:
        error = assert_error(
            http.post("/add", json=MEMORY, headers={"Origin": origin}), 403, "origin_not_allowed"
        )
        assert origin in error["message"]
        assert_error(http.get("/export", headers={"Origin": origin}), 403, "origin_not_allowed")
        assert stored(http) == 0


def test_origin_null_passes_only_when_the_browser_says_same_origin(
    live_server: LiveServer,
) -> None:
    """A no-referrer page (the web UI's) posting a form to itself sends Origin: null."""
    with live_server.client() as http:
        for site, status in (("same-origin", 200), ("cross-site", 403), ("same-site", 403)):
            headers = {"Origin": "null", "Sec-Fetch-Site": site}
            assert http.post("/add", json=MEMORY, headers=headers).status_code == status, site


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ],
)
def test_json_endpoints_refuse_simple_request_content_types(
    live_server: LiveServer, tmp_path: Path, content_type: str
) -> None:
    """The content types a page may post to any site without a CORS preflight."""
    stream = one_document_export(tmp_path)
    with live_server.client() as http:
        for path, body in (
            ("/import", stream),
            ("/add", orjson.dumps(MEMORY)),
            ("/ingest/markdown", orjson.dumps({"title": "t", "content": "planted"})),
            ("/ingest", orjson.dumps({"entities": [{"name": "planted"}]})),
        ):
            refused = http.post(path, content=body, headers={"Content-Type": content_type})
            error = assert_error(refused, 415, "unsupported_media_type")
            assert "application/" in error["message"]
        assert stored(http) == 0
        assert http.get("/graph/relations", params={"from": "planted"}).status_code == 404
        ndjson = {"Content-Type": "application/x-ndjson"}
        assert http.post("/import", content=stream, headers=ndjson).json()["documents"] == 1


def test_the_sign_in_form_still_posts_a_form(token_server: LiveServer) -> None:
    with token_server.client() as http:
        form = http.post("/app/login", data={"token": "s3cret-token", "next": "/app"})
        assert form.status_code == 303


def test_extra_host_names_come_from_the_settings(brain: Brain) -> None:
    settings = ServerSettings(port=free_port(), allowed_hosts=("brain.lan", "10.0.0.5:9000"))
    for server in _serve(brain, settings):
        with server.client() as http:
            assert http.get("/health", headers={"Host": "brain.lan"}).status_code == 200
            assert http.get("/health", headers={"Host": "BRAIN.lan:8080"}).status_code == 200
            assert http.get("/health", headers={"Host": "10.0.0.5:9000"}).status_code == 200
            assert_error(
                http.get("/health", headers={"Host": "10.0.0.5:9001"}), 421, "host_not_allowed"
            )
            https = {"Host": "brain.lan", "Origin": "https://brain.lan"}
            assert http.post("/add", json=MEMORY, headers=https).status_code == 200


def test_allowed_hosts_are_read_from_the_environment() -> None:
    env = {"BRAIN_ALLOWED_HOSTS": " brain.lan, 10.0.0.5:9000 ,,"}
    settings = server_settings("127.0.0.1", 8765, Limits(), env)
    assert settings.allowed_hosts == ("brain.lan", "10.0.0.5:9000")


def test_mcp_shares_the_one_check(brain: Brain) -> None:
    settings = ServerSettings(port=free_port())
    app = create_app(brain, settings)
    mount_mcp(app, brain, settings)
    from ..conftest import start_server

    server, thread = start_server(brain, settings, app=app)
    try:
        url = f"http://127.0.0.1:{settings.port}/mcp"
        hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        with httpx.Client(timeout=10) as http:
            json_only = {"Accept": "application/json, text/event-stream"}
            refused = http.post(url, json=hello, headers={**json_only, "Host": "evil.example"})
            assert_error(refused, 421, "host_not_allowed")
            refused = http.post(url, json=hello, headers={**json_only, "Origin": EVIL})
            assert_error(refused, 403, "origin_not_allowed")
    finally:
        server.should_exit = True
        thread.join(timeout=10)


# a real browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is missing")
    if shutil.which(CHROMIUM) is None:
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium")
    # evil.example resolves to this machine. Chromium's own guard for pages of the public
    # internet that reach the local network (Private/Local Network Access) is turned off, as
    # browsers without it (Firefox, Safari) behave: the server must stand on its own.
    args = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--host-resolver-rules=MAP evil.example 127.0.0.1",
        "--disable-features=PrivateNetworkAccessSendPreflights,"
        "PrivateNetworkAccessRespectPreflightResults,LocalNetworkAccessChecks",
    ]
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        yield browser
        browser.close()


@pytest.fixture
def evil_site() -> Iterator[tuple[str, dict[str, bytes]]]:
    """Another origin on this machine, serving whatever page a test puts in `pages`."""
    pages: dict[str, bytes] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path, b"")
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://localhost:{server.server_address[1]}", pages
    finally:
        server.shutdown()


def test_a_page_of_another_origin_cannot_write(
    chromium: Any, evil_site: tuple[str, dict[str, bytes]], live_server: LiveServer, tmp_path: Path
) -> None:
    site, pages = evil_site
    stream = one_document_export(tmp_path).decode()
    target = live_server.url
    pages["/csrf.html"] = f"""<!doctype html><script>
    const post = (path, body) => fetch({orjson.dumps(target).decode()} + path,
        {{method: "POST", mode: "no-cors", headers: {{"Content-Type": "text/plain"}}, body}});
    Promise.allSettled([
        post("/import", {orjson.dumps(stream).decode()}),
        post("/add", {orjson.dumps(orjson.dumps(MEMORY).decode()).decode()}),
    ]).then(() => {{ document.title = "sent"; }});
    </script>""".encode()
    page = chromium.new_page()
    try:
        page.goto(f"{site}/csrf.html")
        page.wait_for_function("document.title === 'sent'")
    finally:
        page.close()
    with live_server.client() as http:
        assert stored(http) == 0


def test_a_rebound_name_cannot_read_the_export(chromium: Any, live_server: LiveServer) -> None:
    """The attacker's page is served as evil.example (here by the browser's router, as the
    attacker's server would); then the name resolves to 127.0.0.1 and the page reads what it
    takes for its own origin."""
    with live_server.client() as http:
        http.post("/add", json={"text": "a secret note"})
    origin = f"http://evil.example:{port_of(live_server)}"
    page = chromium.new_page()
    try:
        attack = (
            "<!doctype html><script>fetch('/export')"
            ".then(async r => { window.result = [r.status, await r.text()]; })"
            ".catch(e => { window.result = [0, String(e)]; });</script>"
        )
        page.route(
            f"{origin}/attack.html",
            lambda route: route.fulfill(body=attack, content_type="text/html"),
        )
        page.goto(f"{origin}/attack.html")
        page.wait_for_function("window.result !== undefined")
        status, body = page.evaluate("window.result")
    finally:
        page.close()
    assert status == 421 and "secret" not in body, (status, body)
