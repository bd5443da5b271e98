"""Clocks. Time is always timezone-aware UTC, and it is passed in so tests can freeze it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The system clock, in UTC."""
    return datetime.now(UTC)


def parse_time(text: str) -> datetime:
    """Parse ISO-8601 into an aware UTC datetime; a naive value is taken as UTC.

    ValueError if it is not ISO-8601, or if its offset takes it outside years 1 to 9999 in UTC
    (``0001-01-01T00:00+05:00`` is a moment of year 0)."""
    return as_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))


def as_utc(value: datetime) -> datetime:
    """`value` in UTC (a naive value is taken as UTC); ValueError if UTC has no such moment."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{value.isoformat()} is outside years 1 to 9999 in UTC") from None


def format_time(value: datetime) -> str:
    """ISO-8601 with microseconds, in UTC: sortable as text and exact on round trip."""
    return value.astimezone(UTC).isoformat(timespec="microseconds")


class FrozenClock:
    """A clock for tests: returns a fixed time, moved on only by `advance`."""

    def __init__(self, start: datetime) -> None:
        self.now = start.astimezone(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now = self.now + timedelta(**delta)
