"""The graph's rules as pure functions: no database, no clock.

Windows are half-open, [start, end), and None means unbounded: a fact with no valid_at held
since always, one with no invalid_at still holds. A version is known at transaction time T
when created_at <= T < superseded_at (or it is not superseded). See docs/design/graph.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from nexusbrain.errors import InvalidInput
from nexusbrain.records import Relationship


@dataclass(frozen=True, slots=True)
class Window:
    start: datetime | None = None
    end: datetime | None = None

    def holds_at(self, t: datetime) -> bool:
        return (self.start is None or self.start <= t) and (self.end is None or t < self.end)

    def overlaps(self, other: Window) -> bool:
        return _before(self.start, other.end) and _before(other.start, self.end)

    def intersect(self, other: Window) -> Window | None:
        """The span both hold in, or None if they never hold at once."""
        if not self.overlaps(other):
            return None
        return Window(_latest(self.start, other.start), _earliest(self.end, other.end))


def _before(start: datetime | None, end: datetime | None) -> bool:
    return start is None or end is None or start < end


def _latest(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else max(a, b)


def _earliest(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else min(a, b)


def checked_window(
    valid_at: datetime | None, invalid_at: datetime | None, where: str = ""
) -> Window:
    """The window [valid_at, invalid_at); InvalidInput (prefixed by `where`) if it is empty."""
    if valid_at is not None and invalid_at is not None and invalid_at <= valid_at:
        raise InvalidInput(
            f"{where}invalid_at={invalid_at.isoformat()} must be after"
            f" valid_at={valid_at.isoformat()}"
        )
    return Window(valid_at, invalid_at)


def window_of(r: Relationship) -> Window:
    return Window(r.valid_at, r.invalid_at)


def known_at(r: Relationship, t: datetime) -> bool:
    return r.created_at <= t and (r.superseded_at is None or t < r.superseded_at)


def visible(r: Relationship, valid: datetime | None, known: datetime | None) -> bool:
    """Whether `r` answers "what held at valid time `valid`, as known at `known`". Without
    `known` only current versions count; without `valid` any window does."""
    in_knowledge = r.current if known is None else known_at(r, known)
    return in_knowledge and (valid is None or window_of(r).holds_at(valid))


class TripleChange(StrEnum):
    """What a new statement of a triple does, given the triple's current version."""

    CREATE = "create"  # no current version: a new edge
    DUPLICATE = "duplicate"  # the same window: nothing is written
    REPLACE = "replace"  # another window: a new edge retires the current one


def triple_change(current: Relationship | None, window: Window) -> TripleChange:
    if current is None:
        return TripleChange.CREATE
    if window_of(current) == window:
        return TripleChange.DUPLICATE
    return TripleChange.REPLACE


@dataclass(frozen=True, slots=True)
class Cut:
    """A contradicted fact: retired, and replaced by a version with `successor` as its
    window, or by nothing when no part of it is left."""

    successor: Window | None


def contradiction_cut(old: Window, new: Window, learned_at: datetime) -> Cut | None:
    """How a new value of a functional type cuts back an old value of the same subject.

    The new fact wins from its valid_at on (or, undated, from `learned_at`, when the brain
    learned it). An old fact that started earlier is closed there: its invalid_at becomes the
    new valid_at. One that starts inside the new fact's span keeps only what lies after that
    span, if anything. None: the two never hold at once, so nothing changes.
    """
    start = new.start if new.start is not None else learned_at
    claim = Window(start, new.end)
    if not old.overlaps(claim):
        return None
    if old.start is None or old.start < start:
        return Cut(Window(old.start, start))
    if claim.end is not None and (old.end is None or claim.end < old.end):
        return Cut(Window(claim.end, old.end))
    return Cut(None)
