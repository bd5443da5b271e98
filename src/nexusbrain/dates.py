"""Calendar days and months, as lexical index tokens (pure).

A conversation turn is indexed with the day and the month it was said in
(ingest/conversation.py), and a query that names a day ("on 9 November, 2022", "8th December
2023", "2022-11-09") or a month ("in May 2023") also searches for that day's or month's token
(retrieval/terms.py). So "what did Nate cook on 9 November, 2022?" finds that day's turns even
when none of them says the date, which a turn rarely does: the date is the session's, not the
words'. A token is one run of ASCII letters and digits (`day20221109`, `month202211`), which the
analyzer keeps whole and its stemmer leaves alone.
"""

from __future__ import annotations

import re
from datetime import date, datetime

_MONTHS = (
    "january february march april may june july august september october november december"
).split()
# a month by its name or its first three letters (and "sept"), any case
_MONTH = r"(?P<{}>(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*)\.?"
_DAY = r"(?P<{}>\d{{1,2}})(?:st|nd|rd|th)?"
_YEAR = r"(?P<{}>\d{{4}})"
_NAMED = re.compile(
    r"\b(?:"
    + r"(?P<iy>\d{4})-(?P<im>\d{1,2})-(?P<id>\d{1,2})"  # 2022-11-09
    + rf"|{_DAY.format('ad')}\s+(?:of\s+)?{_MONTH.format('am')},?\s+{_YEAR.format('ay')}"
    + rf"|{_MONTH.format('bm')}\s+{_DAY.format('bd')},?\s+{_YEAR.format('by')}"
    + rf"|{_MONTH.format('cm')},?\s+{_YEAR.format('cy')}"  # a month only
    + r")(?!\d)",
    re.IGNORECASE,
)


_TOKEN = re.compile(r"day\d{8}|month\d{6}")


def is_time_token(token: str) -> bool:
    """Whether an index token is a day's or a month's: a query's own words are the others."""
    return _TOKEN.fullmatch(token) is not None


def token_time(token: str) -> str:
    """The day or month a token stands for, in ISO-8601: "2022-11-09", "2022-11"."""
    digits = token.removeprefix("day").removeprefix("month")
    return "-".join(filter(None, (digits[:4], digits[4:6], digits[6:])))


def day_token(day: date) -> str:
    return f"day{day:%Y%m%d}"


def month_token(day: date) -> str:
    return f"month{day:%Y%m}"


def stamp_day(stamp: str) -> date | None:
    """The day of an ISO-8601 time on its own calendar (the day as written, not as UTC has
    it: "23:30-05:00" is said on the evening's day); None when `stamp` is not ISO-8601."""
    try:
        return datetime.fromisoformat(stamp).date()
    except ValueError:
        return None


def day_tokens(day: date) -> list[str]:
    """What a text said on `day` is indexed with: its day's and its month's tokens."""
    return [day_token(day), month_token(day)]


def named_tokens(text: str) -> list[str]:
    """A token for each day or month that `text` names, in order: a day when it gives day,
    month and year, a month when it gives month and year. A day that no calendar has (31
    February) and a month word that is no month name ("mayhem") name nothing."""
    return [token for match in _NAMED.finditer(text) if (token := _token_of(match))]


def without_dates(text: str) -> str:
    """`text` with each day or month it names blanked out: its words refer to a time, and
    are not words a matching text must hold (retrieval/pipeline.py, the confidence)."""
    return _NAMED.sub(lambda match: " " if _token_of(match) else match[0], text)


def _token_of(match: re.Match[str]) -> str | None:
    parts = {k: v for k, v in match.groupdict().items() if v is not None}
    day: int | None
    if "iy" in parts:
        year, month, day = int(parts["iy"]), int(parts["im"]), int(parts["id"])
    else:
        year = int(parts.get("ay") or parts.get("by") or parts["cy"])
        month = _month(parts.get("am") or parts.get("bm") or parts["cm"])
        found_day = parts.get("ad") or parts.get("bd")
        day = int(found_day) if found_day else None
    try:
        named = date(year, month, 1 if day is None else day)
    except ValueError:
        return None
    return month_token(named) if day is None else day_token(named)


def _month(word: str) -> int:
    """The month a word names, or 0 (no month) for a word that only starts like one."""
    word = word.lower()
    return next((n for n, name in enumerate(_MONTHS, start=1) if name.startswith(word)), 0)
