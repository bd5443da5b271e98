"""Envelopes: the limits, their check, the server's own status in /stats and its log warning."""

from __future__ import annotations

import logging
import time

import pytest

from nexusbrain.api.monitor import MIN_SAMPLES, LatencyWindow
from nexusbrain.brain import Brain
from nexusbrain.config import ServerSettings
from nexusbrain.envelopes import (
    ENVELOPES,
    GIB,
    MB,
    Envelope,
    EnvelopeWatch,
    Figures,
    Limit,
    check,
    envelope_named,
)
from nexusbrain.errors import ConfigError

from .conftest import _serve, free_port

TINY = Envelope("tiny", Figures(documents=1, db_bytes=10 * GIB, rss_bytes=10_000 * MB, p95_ms=1e6))


def test_the_desktop_envelope_is_the_issue_s() -> None:
    desktop = ENVELOPES["desktop"].maxima
    assert (desktop.documents, desktop.db_bytes, desktop.rss_bytes, desktop.p95_ms) == (
        50_000,
        2 * 1024**3,
        512_000_000,
        200.0,
    )
    edge, enterprise = ENVELOPES["edge"].maxima, ENVELOPES["enterprise"].maxima
    assert edge.rss_bytes < desktop.rss_bytes and edge.db_bytes < desktop.db_bytes
    assert enterprise.documents == 1_000_000


def test_check_names_each_broken_limit_in_order() -> None:
    desktop = envelope_named("desktop")
    within = Figures(documents=50_000, db_bytes=2 * GIB, rss_bytes=512 * MB, p95_ms=200.0)
    assert check(desktop, within) == ()
    over = Figures(documents=50_001, db_bytes=1, rss_bytes=600 * MB, p95_ms=250.0)
    breaches = check(desktop, over)
    assert [b.limit for b in breaches] == [Limit.DOCUMENTS, Limit.RSS_BYTES, Limit.P95_MS]
    assert [b.message for b in breaches] == [
        "documents 50,001 > 50,000",
        "rss_bytes 600 MB > 512 MB",
        "p95_ms 250.0 ms > 200.0 ms",
    ]


def test_unmeasured_figures_pass() -> None:
    assert check(ENVELOPES["edge"], Figures()) == ()


def test_an_unknown_envelope_names_the_choices() -> None:
    with pytest.raises(ConfigError, match="edge, desktop, enterprise"):
        envelope_named("laptop")
    assert envelope_named(" Edge ").name == "edge"


def test_the_watch_warns_once_per_crossing(caplog: pytest.LogCaptureFixture) -> None:
    watch = EnvelopeWatch(TINY)
    with caplog.at_level(logging.INFO, logger="nexusbrain.envelopes"):
        watch.observe(Figures(documents=1))
        assert not caplog.records
        watch.observe(Figures(documents=2))
        watch.observe(Figures(documents=3))
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and "documents 2 > 1" in warnings[0].getMessage()
        watch.observe(Figures(documents=1))
        assert "within its limit again" in caplog.records[-1].getMessage()
        watch.observe(Figures(documents=5))
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2


def test_the_latency_window_needs_enough_samples() -> None:
    window = LatencyWindow(size=100)
    for ms in range(1, MIN_SAMPLES):
        window.record(float(ms))
    assert window.p95() is None
    for ms in range(MIN_SAMPLES, 101):
        window.record(float(ms))
    assert window.p95() == 95.0
    for _ in range(100):
        window.record(1.0)  # the window forgets old samples
    assert window.p95() == 1.0


def test_stats_report_the_envelope_and_the_log_warns(
    brain: Brain, caplog: pytest.LogCaptureFixture
) -> None:
    settings = ServerSettings(port=free_port(), envelope=TINY, envelope_check_seconds=0.05)
    with caplog.at_level(logging.WARNING, logger="nexusbrain.envelopes"):
        for server in _serve(brain, settings):
            with server.client() as http:
                status = http.get("/stats").json()["envelope"]
                assert status["name"] == "tiny" and status["ok"]
                assert status["limits"]["documents"] == 1
                for i in range(2):  # a soft limit: the second write still lands
                    created = http.post("/add", json={"text": f"note {i}"}).json()
                    assert created["status"] == "created"
                deadline = time.monotonic() + 5
                while not caplog.records and time.monotonic() < deadline:
                    time.sleep(0.02)
                assert caplog.records, "the background check did not notice without /stats"
                for _ in range(MIN_SAMPLES):
                    assert http.get("/search", params={"q": "note"}).status_code == 200
                status = http.get("/stats").json()["envelope"]
    assert not status["ok"]
    assert [b["limit"] for b in status["breaches"]] == ["documents"]
    assert status["observed"]["documents"] == 2 and status["observed"]["p95_ms"] > 0
    assert "envelope tiny: documents 2 > 1" in caplog.records[0].getMessage()
