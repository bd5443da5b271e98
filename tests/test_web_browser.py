"""The web UI in a real headless browser: Debian's Chromium driven by Playwright.

Skipped, with the reason, when Chromium or Playwright is missing; `.ci/run` installs both.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from nexusbrain.brain import Brain
from nexusbrain.config import ServerSettings
from nexusbrain.envelopes import GIB, MB, Envelope, Figures
from nexusbrain.web import markdown

from .conftest import LiveServer, free_port, start_server
from .test_background_embedding import NOTES, GatedEmbedder, background_brain
from .test_dates import store_two_days
from .test_web import write_compare_files

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if shutil.which(CHROMIUM) is None:
    pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium", allow_module_level=True)

from playwright.sync_api import Browser, Page, expect  # noqa: E402

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PHONE = {"width": 390, "height": 844}
FILLER = "\n\n".join(
    f"## Section {n}\n\nRoutine notes about the weekly rota, meeting rooms and lunch orders."
    for n in range(1, 40)
)
# An emoji before the span: the API counts code points, the browser UTF-16 units.
LEDGER = (
    "# Ledger notes 📒\n\n"
    + FILLER
    + "\n\n## Reconciliation\n\nThe ledger drift came from a rounding bug in the nightly "
    "reconciliation job; we fixed it by summing cents as integers.\n\n## After\n\nNothing else."
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert errors == [], errors  # no script failed on any page


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def seed(brain: Brain) -> int:
    for n in range(3):
        brain.ingest_markdown(f"# Note {n}\n\n{FILLER[:300]}", uri=f"notes/filler-{n}.md")
    ledger = brain.ingest_markdown(LEDGER, uri="notes/ledger.md").document_id
    brain.graph.relate("alice", "works_at", "Acme", valid_at=day("2019-01-01"))
    brain.graph.relate("alice", "works_at", "Globex", valid_at=day("2023-06-01"))
    brain.graph.relate("alice", "manages", "bob", valid_at=day("2020-01-01"))
    brain.graph.relate("bob", "lives_in", "Lisbon")
    return ledger


def no_horizontal_scroll(page: Page) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


def test_search_explain_and_open_the_span(live_server: LiveServer, page: Page) -> None:
    ledger = seed(live_server.brain)
    page.goto(f"{live_server.url}/app")
    page.fill("#q", "ledger drift rounding")
    first = page.locator(".hit").first
    expect(first.locator(".path")).to_have_text("notes/ledger.md")
    query = parse_qs(urlsplit(page.url).query)
    assert query["q"] == ["ledger drift rounding"] and query["mode"] == ["balanced"]
    expect(first.locator("mark").first).to_be_visible()
    assert {m.lower() for m in first.locator("mark").all_inner_texts()} >= {"ledger", "drift"}
    expect(first.locator(".meta")).to_contain_text("lines ")

    first.get_by_role("button", name="Why this hit?").click()
    panel = first.locator(".explain")
    expect(panel.locator(".doc-explain")).to_contain_text("fused rank 1")
    bars = panel.locator(".bar-fill")
    assert bars.count() >= 2  # bm25 and dense at least
    widths = [b.evaluate("e => e.getBoundingClientRect().width") for b in bars.all()]
    assert max(widths) > 0
    expect(panel.locator("tbody th").first).to_have_text("keywords")

    first.get_by_role("link", name="Open the document at this span").click()
    span = page.locator("#span")
    expect(span).to_be_visible()
    chunk_id = int(parse_qs(urlsplit(page.url).query)["chunk"][0])
    chunk = next(c for c in live_server.brain.document_chunks(ledger) if c.id == chunk_id)
    assert "ledger drift" in chunk.text
    # rendered: the chunk's heading and paragraph, highlighted as blocks
    highlighted = page.locator("#content .span")
    assert highlighted.all_inner_texts() == ["Reconciliation", chunk.text.split("\n\n")[1]]
    expect(page.locator("#content h4", has_text="Reconciliation")).to_have_class("span")
    assert page.evaluate("window.scrollY") > 0  # it had to scroll to get there
    box = span.bounding_box()
    assert box is not None and box["y"] < 800 and box["y"] + box["height"] > 0  # in view
    background = span.evaluate("e => getComputedStyle(e).backgroundColor")
    assert background not in ("rgba(0, 0, 0, 0)", "transparent")
    expect(page.locator("#chunks a[aria-current=true]")).to_have_count(1)
    expect(page.locator("#history tbody tr")).to_have_count(1)
    # the source: the chunk's exact characters
    page.get_by_role("button", name="Show the markdown source").click()
    exact = page.locator("#source-span")
    expect(exact).to_be_visible()
    assert exact.inner_text() == chunk.text
    expect(page.locator("#content")).to_be_hidden()
    page.get_by_role("button", name="Show it rendered").click()
    expect(span).to_be_visible()


def test_a_search_link_reloads_the_same_search(live_server: LiveServer, page: Page) -> None:
    seed(live_server.brain)
    page.goto(f"{live_server.url}/app?q=ledger+drift&mode=conservative&k=2")
    expect(page.locator(".hit").first.locator(".path")).to_have_text("notes/ledger.md")
    assert page.locator(".hit").count() <= 2  # k=2 from the link
    assert page.locator("select[name=mode]").input_value() == "conservative"
    assert page.locator("#q").input_value() == "ledger drift"
    expect(page.locator("#search-status")).to_contain_text("(conservative)")


def test_as_of_date_changes_the_relationships(live_server: LiveServer, page: Page) -> None:
    seed(live_server.brain)
    page.goto(f"{live_server.url}/app/graph?entity=alice")
    outgoing = page.locator("#outgoing")
    expect(outgoing).to_contain_text("Globex")
    expect(outgoing).to_contain_text("Acme")  # current version, closed at 2023-06-01
    expect(page.locator("#network svg circle")).to_have_count(5)  # alice, Acme, Globex, bob, Lisbon

    page.fill("#as-of", "2020-06-01")
    expect(outgoing).not_to_contain_text("Globex")
    expect(outgoing).to_contain_text("Acme")
    assert parse_qs(urlsplit(page.url).query)["as_of"] == ["2020-06-01"]
    expect(page.locator("#graph-status")).to_contain_text("held on 2020-06-01")

    page.fill("#as-of", "2024-01-01")
    expect(outgoing).not_to_contain_text("Acme")
    expect(outgoing).to_contain_text("Globex")

    slider = page.locator("#as-of-slider")
    slider.focus()
    page.keyboard.press("Home")  # the day before the first change: nothing held yet
    assert page.locator("#as-of").input_value() == "2018-12-31"
    expect(outgoing).to_contain_text("None.")
    page.keyboard.press("End")
    expect(page.locator("#as-of-label")).to_have_text("current")
    expect(outgoing).to_contain_text("Globex")


def test_relationship_history_shows_supersession(live_server: LiveServer, page: Page) -> None:
    seed(live_server.brain)
    page.goto(f"{live_server.url}/app/graph?entity=alice")
    acme = page.locator(".rel", has_text="Acme")
    acme.get_by_role("button", name="History").click()
    rows = acme.locator(".history tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("contradicted")
    expect(rows.nth(1)).to_contain_text("(current)")


def test_keyboard_reaches_the_search_box_and_submits(live_server: LiveServer, page: Page) -> None:
    seed(live_server.brain)
    page.goto(f"{live_server.url}/app")
    for _ in range(10):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "q":
            break
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.type("reconciliation job")
    page.keyboard.press("Enter")
    expect(page.locator(".hit").first.locator(".path")).to_have_text("notes/ledger.md")
    page.locator(".hit .snippet").first.click()  # out of the field, so "/" is a shortcut
    assert page.evaluate("document.activeElement.id") != "q"
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"


WIDE = (  # a long code line, a long word and a wide table: each must scroll in its own box
    "# Wide\n\n```\n" + "x = 1; " * 60 + "\n```\n\n" + "averyveryverylongword" * 8 + "\n\n"
    "| column | another column | a third column |\n| --- | --- | --- |\n"
    "| " + "cell text " * 12 + " | b | c |\n"
)


def test_pages_fit_a_phone_screen(live_server: LiveServer, browser: Browser) -> None:
    ledger = seed(live_server.brain)
    wide = live_server.brain.ingest_markdown(WIDE, uri="notes/wide.md").document_id
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    phone = context.new_page()
    url = live_server.url
    checks = {
        f"{url}/app?q=ledger+drift": ".hit .explain-toggle",
        f"{url}/app/doc/{ledger}": "#chunks li",
        f"{url}/app/doc/{wide}": "#content pre",
        f"{url}/app?q=averyveryverylongword+cell+text": ".hit .snippet",
        f"{url}/docs": "#get-search",
        f"{url}/app/graph?entity=alice": "#network svg",
        f"{url}/app/evals": "h1",
        f"{url}/app/status": "#stats dt",
    }
    try:
        for address, ready in checks.items():
            phone.goto(address)
            phone.locator(ready).first.wait_for()
            if ready == ".hit .explain-toggle":
                phone.locator(ready).first.click()
                phone.locator(".doc-explain").first.wait_for()
            assert no_horizontal_scroll(phone), address
    finally:
        context.close()


def test_everything_is_served_locally(live_server: LiveServer, page: Page) -> None:
    seed(live_server.brain)
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    for path in ["/app?q=ledger", "/app/graph?entity=alice", "/app/status", "/app/evals"]:
        page.goto(live_server.url + path)
        page.wait_for_load_state("networkidle")
    assert requested
    assert all(u.startswith((live_server.url, "data:")) for u in requested), requested


def test_sign_in_with_the_token(token_server: LiveServer, page: Page) -> None:
    seed(token_server.brain)
    page.goto(f"{token_server.url}/app?q=ledger+drift")
    expect(page.get_by_label("API token")).to_be_focused()
    page.get_by_label("API token").fill("wrong")
    page.keyboard.press("Enter")
    expect(page.get_by_role("alert")).to_contain_text("not this server's token")
    page.get_by_label("API token").fill("s3cret-token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator(".hit").first.locator(".path")).to_have_text("notes/ledger.md")
    assert "/app?q=ledger+drift&" in page.url  # back where it started
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_label("API token")).to_be_visible()


def offline(page: Page, server: str) -> list[str]:
    """Cut `page` off from every host but `server`; returns the requests it refused."""
    refused: list[str] = []

    def route(request: playwright_api.Route) -> None:
        if request.request.url.startswith((server, "data:")):
            request.continue_()
        else:
            refused.append(request.request.url)
            request.abort("internetdisconnected")

    page.context.route("**/*", route)
    return refused


def test_api_docs_work_with_the_network_off(live_server: LiveServer, page: Page) -> None:
    refused = offline(page, live_server.url)
    page.goto(f"{live_server.url}/docs")
    page.wait_for_load_state("networkidle")
    expect(page.get_by_role("heading", level=1)).to_contain_text("HTTP API")
    with live_server.client() as http:
        spec = http.get("/openapi.json").json()
    count = sum(len(item) for item in spec["paths"].values())
    expect(page.locator("article.operation")).to_have_count(count)
    search = page.locator("#get-search")
    expect(search.locator("tbody th").first).to_contain_text("q")
    page.get_by_role("link", name="POST /recall").click()
    expect(page.locator("#post-recall")).to_be_in_viewport()
    page.locator("#post-recall").get_by_role("link", name="RecallIn").click()
    expect(page.locator("#schema-RecallIn")).to_be_in_viewport()
    assert refused == []


RAW_KEYS = ("db_bytes", "rss_bytes", "p95_ms", "retired_documents")


def test_status_page_says_what_each_limit_is(brain: Brain, page: Page) -> None:
    # The server runs in this process, whose RSS late in the suite can pass desktop's 512 MB:
    # desktop's limits, but room for the test process's memory.
    roomy = Envelope(
        "roomy", Figures(documents=50_000, db_bytes=2 * GIB, rss_bytes=8_000 * MB, p95_ms=200)
    )
    settings = ServerSettings(port=free_port(), envelope=roomy)
    server, thread = start_server(brain, settings)
    try:
        page.goto(f"http://127.0.0.1:{settings.port}/app/status")
        envelope = page.locator("#envelope")
        rss = envelope.locator("[data-limit=rss_bytes]")
        expect(rss).to_contain_text("Server memory (RSS)")
        expect(rss).to_contain_text(
            re.compile(r"^Server memory \(RSS\)\d+ MB of the roomy envelope's 8 GB limit \(\d+%\)$")
        )
        expect(envelope.locator("[data-limit=db_bytes]")).to_contain_text(
            "of the roomy envelope's 2 GiB limit"
        )
        expect(envelope.locator("[data-limit=p95_ms]")).to_contain_text("not measured yet")
        expect(envelope).to_contain_text("Within every limit.")
        text = page.locator("main").inner_text()
        assert not [key for key in RAW_KEYS if key in text], text
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_status_page_names_a_broken_limit(brain: Brain, page: Page) -> None:
    tiny = Envelope("tiny", Figures(documents=1, db_bytes=1024, rss_bytes=1_000_000, p95_ms=1.0))
    settings = ServerSettings(port=free_port(), envelope=tiny)
    server, thread = start_server(brain, settings)
    try:
        seed(brain)
        page.goto(f"http://127.0.0.1:{settings.port}/app/status")
        rss = page.locator("#envelope [data-limit=rss_bytes]")
        expect(rss).to_contain_text("of the tiny envelope's 1 MB limit")
        expect(rss).to_contain_text(": over it")
        expect(rss).to_have_class("breach")
        expect(page.locator("#envelope")).to_contain_text("Over a limit.")
        expect(page.locator("#stats")).to_contain_text("Database size")
        text = page.locator("main").inner_text()
        assert not [key for key in RAW_KEYS if key in text], text
    finally:
        server.should_exit = True
        thread.join(timeout=10)


CLIPPED = """els => els.filter(e => {
  const box = e.getBoundingClientRect();
  return e.scrollWidth > e.clientWidth + 1 || box.left < 0 || box.right > window.innerWidth;
}).map(e => e.textContent.trim())"""


def test_eval_plot_reads_at_phone_width(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, live_server: LiveServer, browser: Browser
) -> None:
    write_compare_files(tmp_path)
    monkeypatch.setenv("BRAIN_EVALS_DIR", str(tmp_path))
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    phone = context.new_page()
    try:
        phone.goto(f"{live_server.url}/app/evals")
        rows = phone.locator(".interval-rows li")
        expect(rows).to_have_count(12)
        assert no_horizontal_scroll(phone)
        labels = phone.locator(".interval-label > span, .intervals figcaption, .axis text")
        assert labels.evaluate_all(CLIPPED) == []  # every label whole and on screen
        sizes = labels.evaluate_all("els => els.map(e => parseFloat(getComputedStyle(e).fontSize))")
        assert min(sizes) >= 11, sizes
        width = PHONE["width"]
        for row in rows.all():
            track = row.locator(".track").bounding_box()
            mean = row.locator(".mean").bounding_box()
            bar = row.locator(".range").bounding_box()
            assert track and mean and bar
            assert track["x"] >= 0 and track["x"] + track["width"] <= width
            assert (
                track["x"]
                <= bar["x"]
                <= mean["x"] + mean["width"] / 2
                <= bar["x"] + bar["width"] + 0.5
            )
            assert bar["x"] + bar["width"] <= track["x"] + track["width"]
    finally:
        context.close()


def test_search_says_what_to_do_when_nothing_matches(live_server: LiveServer, page: Page) -> None:
    page.goto(f"{live_server.url}/app")
    intro = page.locator("#search-empty")
    expect(intro.locator("h2")).to_have_text("This brain is empty")
    page.fill("#q", "ledger")
    none = page.locator("#results .no-hits")
    expect(none).to_contain_text("There are no documents in this brain yet.")
    expect(intro).to_be_visible()  # with the way to add some

    seed(live_server.brain)
    page.goto(f"{live_server.url}/app")
    expect(intro).to_contain_text("Search 4 documents")
    page.fill("input[name=domain]", "work")
    page.fill("#q", "ledger drift")
    expect(none.locator("h2")).to_have_text("No hits for “ledger drift”")
    expect(none).to_contain_text("The domain filter may be too narrow: clear it")
    expect(intro).to_be_hidden()
    page.fill("input[name=domain]", "")
    expect(page.locator(".hit").first).to_be_visible()
    page.fill("#q", "")
    expect(intro).to_be_visible()
    expect(page.locator("#results li")).to_have_count(0)


def test_search_says_when_no_hit_is_a_good_match(live_server: LiveServer, page: Page) -> None:
    seed(live_server.brain)
    page.goto(f"{live_server.url}/app?q=ledger+drift")
    match = page.locator("#search-match")
    expect(match).to_contain_text("Good match (confidence")
    expect(match).not_to_have_class(re.compile("weak"))
    page.fill("#q", "zxqvor blenticular")
    expect(match).to_contain_text("No good match (confidence")
    expect(match).to_have_class(re.compile("weak"))
    expect(page.locator(".hit").first).to_be_visible()  # balanced still shows its guesses
    page.select_option("select[name=mode]", "conservative")
    none = page.locator("#results .no-hits")
    expect(none.locator("h2")).to_have_text("No good match for “zxqvor blenticular”")
    expect(none).to_contain_text("returns nothing when nothing matches well")
    expect(match).to_be_empty()


def test_a_hit_says_it_was_said_on_the_day_asked(live_server: LiveServer, page: Page) -> None:
    store_two_days(live_server.brain)
    page.goto(f"{live_server.url}/app?q=What+dish+did+Nate+cook+on+9+November%2C+2022%3F")
    first = page.locator(".hit").first
    expect(first).to_contain_text("coconut ice cream")
    expect(first.locator(".rank")).to_contain_text("said on 2022-11-09, as asked")
    page.fill("#q", "What dish did Nate cook?")
    expect(page.locator(".hit .rank").first).not_to_contain_text("said on")


def test_a_missing_document_or_entity_is_a_404_page(live_server: LiveServer, page: Page) -> None:
    seed(live_server.brain)
    response = page.goto(f"{live_server.url}/app/doc/424242")
    assert response is not None and response.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("No such document")
    page.get_by_label("Search instead").fill("ledger")
    page.keyboard.press("Enter")
    expect(page.locator(".hit").first.locator(".path")).to_have_text("notes/ledger.md")
    response = page.goto(f"{live_server.url}/app/graph?entity=nobody")
    assert response is not None and response.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("No such entity")
    expect(page.locator("#as-of-slider")).to_have_count(0)
    page.get_by_label("Another entity").fill("Alice")
    page.keyboard.press("Enter")
    expect(page.locator("#outgoing")).to_contain_text("Globex")


def test_hits_show_ranks_a_person_can_read(live_server: LiveServer, page: Page) -> None:
    """A lone hit's fused z-score is 0 and two hits' are ±0.3: the hit says where it ranked
    and in which lists; the raw fused score stays in the explanation (and the tooltip)."""
    live_server.brain.ingest_markdown("# Rota\n\nThe weekly rota lives in the wiki.", uri="rota.md")
    with live_server.client() as http:
        raw = http.get("/search", params={"q": "weekly rota"}).json()["hits"]
    assert len(raw) == 1
    page.goto(f"{live_server.url}/app?q=weekly+rota")
    rank = page.locator(".hit .meta .rank")
    expect(rank).to_have_text(re.compile(r"^#1 · (keywords|meaning) #1(, (keywords|meaning) #1)?$"))
    assert "score" not in page.locator(".hit .meta").inner_text()
    score = f"{raw[0]['score']:.4f}"
    assert (
        rank.get_attribute("title") == f"fused score {score} ({raw[0]['trace']['fusion_method']})"
    )
    page.get_by_role("button", name="Why this hit?").click()
    expect(page.locator(".explain caption")).to_contain_text(f"fused score {score}")


GEOMETRY = """svg => {
  const num = (e, name) => Number(e.getAttribute(name));
  const nodes = [...svg.querySelectorAll("circle[data-node]")].map((c) =>
    ({ name: c.dataset.node, x: num(c, "cx"), y: num(c, "cy"), r: num(c, "r") }));
  const edges = [...svg.querySelectorAll("line[data-from]")].map((l) => ({
    from: l.dataset.from, to: l.dataset.to,
    x1: num(l, "x1"), y1: num(l, "y1"), x2: num(l, "x2"), y2: num(l, "y2") }));
  const labels = [...svg.querySelectorAll("text")].map((t) => {
    const b = t.getBBox();
    return { text: t.textContent, x: b.x, y: b.y, w: b.width, h: b.height };
  });
  const [, , width, height] = svg.getAttribute("viewBox").split(" ").map(Number);
  return { nodes, edges, labels, width, height };
}"""


def segment_distance(px: float, py: float, edge: dict[str, float]) -> float:
    dx, dy = edge["x2"] - edge["x1"], edge["y2"] - edge["y1"]
    t = ((px - edge["x1"]) * dx + (py - edge["y1"]) * dy) / (dx * dx + dy * dy)
    t = max(0.0, min(1.0, t))
    return float(((edge["x1"] + t * dx - px) ** 2 + (edge["y1"] + t * dy - py) ** 2) ** 0.5)


def box_circle_distance(box: dict[str, float], node: dict[str, float]) -> float:
    x = max(box["x"], min(node["x"], box["x"] + box["w"]))
    y = max(box["y"], min(node["y"], box["y"] + box["h"]))
    return float(((x - node["x"]) ** 2 + (y - node["y"]) ** 2) ** 0.5)


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] < b["x"] + b["w"]
        and b["x"] < a["x"] + a["w"]
        and a["y"] < b["y"] + b["h"]
        and b["y"] < a["y"] + a["h"]
    )


def assert_readable(picture: dict[str, Any]) -> None:
    """No edge runs through (or within 4 px of) a node it does not join; no label covers a
    node or another label; everything inside the picture."""
    nodes = {n["name"]: n for n in picture["nodes"]}
    for edge in picture["edges"]:
        for name, node in nodes.items():
            if name not in (edge["from"], edge["to"]):
                gap = segment_distance(node["x"], node["y"], edge)
                assert gap > node["r"] + 4, (edge["from"], edge["to"], name, gap)
    labels = picture["labels"]
    for n, label in enumerate(labels):
        for node in nodes.values():
            assert box_circle_distance(label, node) > node["r"], (label["text"], node["name"])
        for other in labels[n + 1 :]:
            assert not overlap(label, other), (label["text"], other["text"])
        assert label["x"] >= 0 and label["x"] + label["w"] <= picture["width"], label
        assert label["y"] >= 0 and label["y"] + label["h"] <= picture["height"], label


CROSSING = [  # two diagonals across a hub's square: on rings, a→c and b→d cross the hub
    ("hub", "links", "north"),
    ("hub", "links", "east"),
    ("hub", "links", "south"),
    ("hub", "links", "west"),
    ("north", "faces", "south"),
    ("east", "faces", "west"),
    ("north", "borders", "east"),
    ("south", "supplies", "a-rather-long-entity-name"),
    ("hub", "reports_to", "north"),  # a second type on one pair shares its line
]


def test_graph_layout_keeps_edges_and_labels_readable(live_server: LiveServer, page: Page) -> None:
    for subject, kind, target in CROSSING:
        live_server.brain.graph.relate(subject, kind, target)
    page.goto(f"{live_server.url}/app/graph?entity=hub")
    svg = page.locator("#network svg")
    expect(svg.locator("circle")).to_have_count(6)
    picture = svg.evaluate(GEOMETRY)
    assert len(picture["edges"]) == 8  # hub–north once, labelled with both types
    texts = {label["text"] for label in picture["labels"]}
    assert {"hub", "north", "east", "south", "west", "faces", "borders"} <= texts
    assert "links, reports_to" in texts and "a-rather-long-ent…" in texts
    assert_readable(picture)
    page.reload()
    assert svg.evaluate(GEOMETRY) == picture  # the same graph, the same picture


DRAW = """triples => {
  const names = [...new Set(triples.flatMap(([a, , b]) => [a, b]))];
  const nodes = names.map((name, i) => ({ name, depth: i === 0 ? 0 : 1 }));
  const edges = triples.map(([from, text, to]) => ({ from, to, text }));
  const measure = (text, kind) => text.length * (kind === "edge" ? 6 : 7) + 4;
  const out = GraphLayout.layout(nodes, edges, measure);
  const boxes = [...out.nodes, ...out.edges].map((item) => item.label).filter(Boolean);
  const line = (e) => ({ from: e.from, to: e.to, x1: e.a.x, y1: e.a.y, x2: e.b.x, y2: e.b.y });
  return {
    width: out.width, height: out.height,
    nodes: out.nodes.map(({ name, x, y, r }) => ({ name, x, y, r })),
    edges: out.edges.map(line),
    labels: boxes.map(({ text, x, y, w, h }) => ({ text, x, y, w, h })),
    shown: boxes.length, total: out.nodes.length + out.edges.length,
  };
}"""


def test_graph_layout_holds_for_other_small_graphs(live_server: LiveServer, page: Page) -> None:
    """Stars, a cycle with chords, and a two-level tree, drawn by the page's own layout."""
    live_server.brain.graph.relate("seed", "is", "here")
    page.goto(f"{live_server.url}/app/graph?entity=seed")
    expect(page.locator("#network svg circle")).to_have_count(2)
    shapes = {
        "star": [("c", "r", f"s{i}") for i in range(9)],
        "wheel": [("c", "r", f"w{i}") for i in range(6)]
        + [(f"w{i}", "next", f"w{(i + 1) % 6}") for i in range(6)]
        + [("w0", "across", "w3"), ("w1", "across", "w4")],
        "tree": [("c", "r", f"t{i}") for i in range(3)]
        + [(f"t{i}", "has", f"t{i}{j}") for i in range(3) for j in range(3)],
    }
    for name, triples in shapes.items():
        picture = page.evaluate(DRAW, triples)
        assert_readable(picture)
        assert picture["shown"] >= 0.8 * picture["total"], (name, picture["shown"])


HOSTILE = (
    "# Release <script>window.pwned = 1</script>\n\n"
    "The **rollback** steps: see [the runbook](javascript:window.pwned=2) and "
    "![diagram](http://example.invalid/x.png) for the *canary* plan. "
    '<img src=x onerror="window.pwned=3"> "><svg onload="window.pwned=4">\n\n'
    "| step | owner |\n| --- | ---: |\n| `<b>drain</b>` | ops |\n\n"
    "```\n<iframe src=javascript:window.pwned=5></iframe>\n```\n\n"
    "> quoted <a href=javascript:window.pwned=6>link</a>\n"
)
ELEMENTS = "root => [...root.querySelectorAll('*')].map((e) => e.localName)"
ALLOWED = {"h3", "h4", "h5", "h6", "p", "strong", "em", "code", "pre", "mark", "div", "table"}
ALLOWED |= {"thead", "tbody", "tr", "th", "td", "blockquote", "ul", "ol", "li", "hr"}


def test_snippets_and_documents_render_hostile_markdown_safely(
    live_server: LiveServer, page: Page
) -> None:
    seed(live_server.brain)
    doc = live_server.brain.ingest_markdown(HOSTILE, uri="notes/hostile.md").document_id
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(f"{live_server.url}/app?q=rollback+canary+runbook")
    hit = page.locator(".hit", has=page.locator(".path", has_text="notes/hostile.md")).first
    snippet = hit.locator(".snippet")
    expect(snippet.locator("strong", has_text="rollback")).to_be_visible()
    expect(snippet.locator("em", has_text="canary")).to_be_visible()
    expect(snippet.locator("mark", has_text="rollback")).to_be_visible()  # terms still marked
    expect(snippet).to_contain_text('<img src=x onerror="window.pwned=3">')  # as text
    assert set(snippet.evaluate(ELEMENTS)) <= ALLOWED | {"h2"}
    assert "see the runbook and" in snippet.inner_text()  # the link as its text, no URL
    assert "javascript:window.pwned=2" not in snippet.inner_text()

    page.goto(f"{live_server.url}/app/doc/{doc}")
    content = page.locator("#content")
    expect(content.locator("h3")).to_have_text("Release <script>window.pwned = 1</script>")
    expect(content.locator("td code")).to_have_text("<b>drain</b>")
    expect(content.locator("pre code")).to_contain_text("<iframe src=javascript:")
    expect(content.locator("blockquote")).to_contain_text("<a href=javascript:")
    assert set(content.evaluate(ELEMENTS)) <= ALLOWED
    assert page.evaluate("window.pwned") is None and dialogs == []


READABLE = (
    "# Links and comments\n\n"
    "Run [`nexusbrain serve`](https://example.com/serve) and read the [**guide**][guide], "
    "[Readable][] and [Readable]; [unknown] stays.\n\n"
    "<!-- a comment on a line of its own -->\n\n"
    "Kept <!-- hidden in a line --> words.\n\n"
    "<!--\na comment\n\nover lines\n-->\n\n"
    "[guide]: https://example.com/guide 'The guide'\n"
    "[readable]: <https://example.com/readable>\n"
)


MARKDOWN_CASES = [
    "# Title\n\nA paragraph\nover two lines with `a<b` and **bold** and *em* and _em_.",
    "| name | value |\n|:---|---:|\n| x \\| y | 1.0 |\n| `q` | **2** |",
    "- one\n- two\n  wrapped\n\n1. first\n2) second\n\n```\n<raw> & code\n```",
    "---\ntitle: x\ntags: [a]\n---\n## After front matter\n\n***\n\n> quote **b**\n> - item",
    "<img src=x onerror=alert(1)> [x](javascript:alert(1)) [ok](https://a.b/c) ![alt](i.png)",
    "snake_case_name 2*3*4 `open\n\n#### <b>h</b> ####\n\n###### deep",
    HOSTILE,
    READABLE,
    "[`a]b`](u) [x][] [y] `[z](u)` <!-- c -->\n\n<!-- open\n\n9. nine\n10. ten\n\n[X]: u\n"
    "> [x] in a quote <!-- q -->\n\n- [ ] a box\n\n<!-- a --> after\n\n0. zero",
]


def test_the_browser_renders_markdown_as_the_server_does(
    live_server: LiveServer, page: Page
) -> None:
    """static/markdown.js against web/markdown.py: the same elements and text."""
    page.goto(f"{live_server.url}/app")
    for text in MARKDOWN_CASES:
        for shift in (0, 2):
            expected = str(markdown.render(text, heading_shift=shift))
            got = page.evaluate(
                """([text, shift, expected]) => {
                  const normal = (root) => {
                    for (const node of [...root.querySelectorAll("*"), root]) {
                      for (const child of [...node.childNodes]) {
                        const blank = child.nodeType === 3 && !child.data.trim();
                        if (blank && !node.closest("pre")) child.remove();
                      }
                    }
                    return root.innerHTML;
                  };
                  const mine = document.createElement("div");
                  mine.append(MD.render(text, { headingShift: shift }));
                  const theirs = new DOMParser().parseFromString(expected, "text/html").body;
                  return [normal(mine), normal(theirs)];
                }""",
                [text, shift, expected],
            )
            assert got[0] == got[1], text


def test_graph_is_drawn_at_phone_size_not_shrunk(live_server: LiveServer, browser: Browser) -> None:
    for subject, kind, target in CROSSING:
        live_server.brain.graph.relate(subject, kind, target)
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    phone = context.new_page()
    try:
        phone.goto(f"{live_server.url}/app/graph?entity=hub")
        svg = phone.locator("#network svg")
        expect(svg.locator("circle")).to_have_count(6)
        picture = svg.evaluate(GEOMETRY)
        assert picture["width"] < 400 and picture["height"] > picture["width"]
        shown = svg.evaluate("e => e.getBoundingClientRect().width / e.viewBox.baseVal.width")
        assert shown > 0.95  # 12 px labels stay 12 px
        assert_readable(picture)
        assert len(picture["labels"]) >= 0.8 * (6 + 8)
        assert no_horizontal_scroll(phone)
    finally:
        context.close()


def test_status_and_search_show_background_embedding(tmp_path: Path, page: Page) -> None:
    """A slow model (the gated fake) embeds in the background: the status page shows how many
    chunks have their vectors and follows them to 100%; a search says which hits BM25 alone
    ranked."""
    gated = GatedEmbedder()
    brain = background_brain(tmp_path / "brain.db", gated)
    settings = ServerSettings(port=free_port())
    server, thread = start_server(brain, settings)
    url = f"http://127.0.0.1:{settings.port}"
    try:
        brain.ingest_markdown_batch(NOTES)
        page.goto(f"{url}/app/status")
        vectors = page.locator("#vectors")
        expect(vectors).to_contain_text(
            "0 of 5 chunks have their vectors (0%), embedding in the background"
        )
        page.goto(f"{url}/app?q=security+report")
        expect(page.locator(".hit").first.locator(".rank")).to_contain_text(
            "(no vector yet: keywords only)"
        )
        expect(page.locator("#search-status")).to_contain_text(
            "Meaning covered 0 of 5 chunks so far"
        )
        page.goto(f"{url}/app/status")
        gated.gate.set()
        expect(vectors).to_have_text("5 of 5 chunks have their vectors (100%)", timeout=20_000)
        text = page.locator("main").inner_text()
        assert "embedded_chunks" not in text
    finally:
        gated.gate.set()
        server.should_exit = True
        thread.join(timeout=10)
        brain.close()


# issue 35.13: the rough edges a new user saw. Each test measures the page (boxes, the
# rendered DOM) and saves a screenshot to look at (under the test's tmp_path).


def test_links_references_and_comments_show_as_a_reader_sees_them(
    live_server: LiveServer, page: Page, tmp_path: Path
) -> None:
    doc = live_server.brain.ingest_markdown(READABLE, uri="notes/readable.md").document_id
    page.goto(f"{live_server.url}/app/doc/{doc}")
    content = page.locator("#content")
    first = content.locator("p").first
    expect(first).to_have_text(
        "Run nexusbrain serve and read the guide, Readable and Readable; [unknown] stays."
    )
    expect(first.locator("code")).to_have_text("nexusbrain serve")
    expect(first.locator("strong")).to_have_text("guide")
    assert content.locator("p").all_inner_texts() == [first.inner_text(), "Kept words."]
    shown = content.inner_text()
    hidden = ("<!--", "-->", "its own", "hidden", "over lines", "example.com", "[guide]")
    assert [part for part in hidden if part in shown] == []
    page.screenshot(path=tmp_path / "links-and-comments.png", full_page=True)
    page.goto(f"{live_server.url}/app?q=nexusbrain+serve+guide")  # a snippet: the same
    snippet = page.locator(".hit .snippet").first
    expect(snippet).to_contain_text("Run nexusbrain serve and read the guide, Readable and")
    expect(snippet.locator("code")).to_have_text("nexusbrain serve")
    page.screenshot(path=tmp_path / "links-in-a-snippet.png")


# The left edge of each item's number in an <ol>, from the list's left edge: the marker is the
# number, ". " and the item's font, and ends where the item's text starts.
MARKER_LEFT = """ol => {
  const left = ol.getBoundingClientRect().left;
  return [...ol.children].map((li, n) => {
    const probe = document.createElement("span");
    probe.textContent = `${ol.start + n}. `;
    probe.style.font = getComputedStyle(li).font;
    probe.style.whiteSpace = "pre";
    probe.style.position = "absolute";
    document.body.append(probe);
    const width = probe.getBoundingClientRect().width;
    probe.remove();
    return [ol.start + n, li.getBoundingClientRect().left - width - left];
  });
}"""


def test_list_numbers_from_10_up_are_whole(
    live_server: LiveServer, page: Page, tmp_path: Path
) -> None:
    items = "\n".join(f"{n}. step {n}" for n in range(1, 13))
    parts = "".join(f"\n\n## Part {n}\n\n" + f"Notes on part {n}. " * 70 for n in range(12))
    text = f"# Steps\n\n{items}\n\nthen\n\n10. the tenth, again\n11. and on{parts}"
    doc = live_server.brain.ingest_markdown(text, uri="notes/steps.md").document_id
    page.goto(f"{live_server.url}/app/doc/{doc}")
    lists = page.locator("#content ol")
    expect(lists).to_have_count(2)
    assert lists.nth(1).get_attribute("start") == "10"  # numbered as written
    chunks = page.locator("#chunks")
    expect(chunks.locator("li")).to_have_count(len(live_server.brain.document_chunks(doc)))
    for ol in (lists.nth(0), lists.nth(1), chunks):
        markers = ol.evaluate(MARKER_LEFT)
        assert max(n for n, _ in markers) >= 11
        assert [n for n, left in markers if left < -0.5] == [], markers  # inside their list
    side = page.locator(".doc-side")
    side.evaluate("e => e.scrollTop = e.scrollHeight")
    side.screenshot(path=tmp_path / "chunk-numbers.png")
    lists.nth(0).screenshot(path=tmp_path / "list-numbers.png")


def test_the_mode_dropdown_lines_up_with_the_hits_box(
    live_server: LiveServer, browser: Browser, tmp_path: Path
) -> None:
    for name, viewport in (("desktop", {"width": 1280, "height": 800}), ("phone", PHONE)):
        context = browser.new_context(viewport=viewport)
        page = context.new_page()
        try:
            page.goto(f"{live_server.url}/app")
            mode = page.locator("select[name=mode]").bounding_box()
            hits = page.locator("input[name=k]").bounding_box()
            assert mode is not None and hits is not None
            assert abs(mode["y"] - hits["y"]) < 0.5, (name, mode, hits)
            assert abs(mode["height"] - hits["height"]) < 0.5, (name, mode, hits)
            page.locator("#search-form").screenshot(path=tmp_path / f"search-options-{name}.png")
        finally:
            context.close()


def test_the_vector_bar_keeps_a_gap_to_its_words(
    live_server: LiveServer, page: Page, tmp_path: Path
) -> None:
    seed(live_server.brain)
    page.goto(f"{live_server.url}/app/status")
    vectors = page.locator("#vectors")
    expect(vectors).to_contain_text("chunks have their vectors (100%)")
    bar = vectors.locator("meter").bounding_box()
    words = vectors.locator("span").evaluate(
        "e => [...e.getClientRects()].map(r => ({x: r.x, y: r.y, right: r.right}))"
    )
    assert bar is not None and words
    for line in words:  # each line of the words is clear of the bar, below it or beside it
        below = line["y"] - (bar["y"] + bar["height"])
        beside = line["x"] - (bar["x"] + bar["width"])
        assert max(below, beside) >= 4, (bar, words)
    vectors.screenshot(path=tmp_path / "vectors.png")
    page.screenshot(path=tmp_path / "status.png")


def test_a_hit_lists_the_copies_of_its_text(live_server: LiveServer, page: Page) -> None:
    from .test_copies import _fill

    _fill(live_server.brain)
    page.goto(f"{live_server.url}/app?q=how+do+I+build+from+source+with+make")
    first = page.locator(".hit").first
    expect(first.locator("h2")).to_have_text("Stable")
    copies = first.locator(".also-in a")
    expect(copies).to_have_text(["copy/README.md:1–4", "nightly/README.md:1–3"])
    assert "chunk=" in (copies.first.get_attribute("href") or "")
    expect(page.locator(".hit h2", has_text="Copy")).to_have_count(0)


def test_a_pdf_hit_shows_its_page_and_its_span_in_the_extracted_text(
    live_server: LiveServer, page: Page, tmp_path: Path
) -> None:
    from .test_formats_ingest import KINDS, QUOKKA
    from .test_ingest_dir import write

    for name, contents, _, _ in KINDS:
        write(tmp_path / "folder" / name, contents)
    assert live_server.brain.ingest_dir(tmp_path / "folder").errors == ()
    page.goto(f"{live_server.url}/app?{urlencode({'q': QUOKKA})}")
    first = page.locator(".hit").first
    expect(first.locator(".path")).to_have_text(re.compile(r"report\.pdf$"))
    expect(first.locator(".meta")).to_contain_text("page 3 · lines ")
    first.get_by_role("link", name="Open the document at this span").click()
    span = page.locator("#source-span")
    expect(span).to_be_visible()
    assert QUOKKA in span.inner_text().replace("\n", " ")
    expect(page.locator("#content-heading")).to_have_text("Text taken from the PDF")
    expect(page.locator("#doc-status")).to_contain_text("Showing page 3, lines ")
    expect(page.locator("#chunks a[aria-current=true]")).to_contain_text("Page 3, lines ")
    box = span.bounding_box()
    assert box is not None and box["y"] < 800 and box["y"] + box["height"] > 0  # in view
