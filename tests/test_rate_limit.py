"""Rate limiting: a token bucket per client, loopback exempt by default, 429 with Retry-After."""

from __future__ import annotations

import pytest

from nexusbrain.api.ratelimit import MAX_CLIENTS, RateLimiter, is_loopback, retry_after_header
from nexusbrain.brain import Brain
from nexusbrain.config import RateLimit, ServerSettings, server_settings
from nexusbrain.errors import ConfigError

from .conftest import _serve, free_port
from .test_api import assert_error


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_then_the_rate() -> None:
    clock = FakeClock()
    limiter = RateLimiter(RateLimit(rate=2, burst=3), clock)
    assert [limiter.retry_after("10.0.0.1") for _ in range(3)] == [0, 0, 0]
    assert limiter.retry_after("10.0.0.1") == pytest.approx(0.5)  # one token per 0.5 s
    clock.now += 0.5
    assert limiter.retry_after("10.0.0.1") == 0
    assert limiter.retry_after("10.0.0.1") == pytest.approx(0.5)
    clock.now += 60  # the bucket refills to the burst, no further
    assert [limiter.retry_after("10.0.0.1") for _ in range(4)][-1] == pytest.approx(0.5)


def test_a_refused_request_takes_no_token() -> None:
    clock = FakeClock()
    limiter = RateLimiter(RateLimit(rate=1, burst=1), clock)
    assert limiter.retry_after("10.0.0.1") == 0
    for _ in range(5):
        assert limiter.retry_after("10.0.0.1") == pytest.approx(1.0)
    clock.now += 1.0
    assert limiter.retry_after("10.0.0.1") == 0


def test_clients_have_their_own_buckets() -> None:
    limiter = RateLimiter(RateLimit(rate=1, burst=1), FakeClock())
    assert limiter.retry_after("10.0.0.1") == 0
    assert limiter.retry_after("10.0.0.1") > 0
    assert limiter.retry_after("10.0.0.2") == 0


def test_loopback_is_exempt_unless_limited() -> None:
    exempt = RateLimiter(RateLimit(rate=1, burst=1), FakeClock())
    assert all(exempt.retry_after(host) == 0 for host in ["127.0.0.1", "::1", None] * 10)
    limited = RateLimiter(RateLimit(rate=1, burst=1, limit_loopback=True), FakeClock())
    assert limited.retry_after("127.0.0.1") == 0
    assert limited.retry_after("127.0.0.1") > 0


def test_rate_zero_turns_limiting_off() -> None:
    limiter = RateLimiter(RateLimit(rate=0, burst=1, limit_loopback=True), FakeClock())
    assert all(limiter.retry_after("10.0.0.1") == 0 for _ in range(1000))


def test_the_bucket_table_is_bounded() -> None:
    limiter = RateLimiter(RateLimit(rate=1, burst=1), FakeClock())
    for i in range(MAX_CLIENTS + 50):
        limiter.retry_after(f"10.{i // 65536}.{i // 256 % 256}.{i % 256}")
    assert len(limiter._buckets) == MAX_CLIENTS


def test_retry_after_rounds_up_to_whole_seconds() -> None:
    assert [retry_after_header(w) for w in (0.01, 0.5, 1.0, 1.2, 7.0)] == [
        "1",
        "1",
        "1",
        "2",
        "7",
    ]


def test_settings_from_the_environment() -> None:
    assert server_settings(environ={}).rate_limit == RateLimit()
    env = {"BRAIN_RATE_LIMIT": "5.5", "BRAIN_RATE_BURST": "20", "BRAIN_RATE_LIMIT_LOOPBACK": "yes"}
    assert server_settings(environ=env).rate_limit == RateLimit(5.5, 20, True)
    for bad in (
        {"BRAIN_RATE_LIMIT": "fast"},
        {"BRAIN_RATE_LIMIT": "-1"},
        {"BRAIN_RATE_BURST": "0"},
        {"BRAIN_RATE_LIMIT_LOOPBACK": "maybe"},
    ):
        with pytest.raises(ConfigError):
            server_settings(environ=bad)
    settings = server_settings("127.0.0.1", 1, ServerSettings().limits, env)
    assert settings.rate_limit == RateLimit(5.5, 20, True) and settings.port == 1
    assert server_settings(environ={"BIND_PORT": "9000", "BRAIN_BIND_HOST": "::1"}).port == 9000


def test_is_loopback() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("10.0.0.1") and not is_loopback("example.com")


def test_an_over_limit_client_gets_429_with_retry_after(brain: Brain) -> None:
    limit = RateLimit(rate=0.5, burst=3, limit_loopback=True)
    for server in _serve(brain, ServerSettings(port=free_port(), rate_limit=limit)):
        with server.client() as http:
            assert [http.get("/health").status_code for _ in range(3)] == [200, 200, 200]
            response = http.get("/search", params={"q": "anything"})
            error = assert_error(response, 429, "rate_limited")
            assert response.headers["Retry-After"] == "2"  # 1 token at 0.5/s
            assert "0.5 per second" in error["message"]


def test_loopback_clients_are_never_limited_by_default(brain: Brain) -> None:
    limit = RateLimit(rate=1, burst=1)
    for server in _serve(brain, ServerSettings(port=free_port(), rate_limit=limit)):
        with server.client() as http:
            assert {http.get("/health").status_code for _ in range(50)} == {200}


def test_a_forged_x_forwarded_for_does_not_buy_a_new_bucket(brain: Brain) -> None:
    """uvicorn trusts proxy headers from 127.0.0.1 unless told not to: the server tells it."""
    limit = RateLimit(rate=0.01, burst=2, limit_loopback=True)
    for server in _serve(brain, ServerSettings(port=free_port(), rate_limit=limit)):
        with server.client() as http:
            forged = [f"203.0.113.{n}" for n in range(5)]
            codes = [
                http.get("/health", headers={"X-Forwarded-For": ip}).status_code for ip in forged
            ]
            assert codes == [200, 200, 429, 429, 429]


def test_a_trusted_proxy_names_the_client(brain: Brain) -> None:
    """Behind a configured proxy each client has its own bucket, and is limited even though
    the proxy itself is on loopback."""
    limit = RateLimit(rate=0.01, burst=2)
    settings = ServerSettings(port=free_port(), rate_limit=limit, trusted_proxies=("127.0.0.1",))
    for server in _serve(brain, settings):
        with server.client() as http:
            alice, bob = {"X-Forwarded-For": "203.0.113.1"}, {"X-Forwarded-For": "203.0.113.2"}
            assert [http.get("/health", headers=alice).status_code for _ in range(3)] == [
                200,
                200,
                429,
            ]
            assert http.get("/health", headers=bob).status_code == 200


def test_trusted_proxies_come_from_the_environment() -> None:
    env = {"BRAIN_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8"}
    settings = server_settings("127.0.0.1", 1, ServerSettings().limits, env)
    assert settings.trusted_proxies == ("127.0.0.1", "10.0.0.0/8")
    assert server_settings("127.0.0.1", 1, ServerSettings().limits, {}).trusted_proxies == ()
