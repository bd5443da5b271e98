"""Days and months as index tokens: a question that names a day finds what was said that day."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nexusbrain.brain import Brain
from nexusbrain.dates import day_token, month_token, named_tokens, stamp_day, token_time
from nexusbrain.ingest.conversation import Session, Turn, prepare_session
from nexusbrain.retrieval.terms import query_terms
from nexusbrain.storage.analyzer import tokens

NOV_9 = "day20221109"
NOV = "2022-11-09T13:56:00"


@pytest.mark.parametrize(
    "text",
    [
        "What dish did Nate make on 9 November, 2022?",
        "on 9th November 2022",
        "the 9th of November, 2022",
        "November 9, 2022",
        "nov 9th 2022",
        "Nov. 9 2022",
        "2022-11-09",
        "since 2022-11-09T08:30:00Z",
    ],
)
def test_the_ways_a_person_writes_a_day_name_it(text: str) -> None:
    assert named_tokens(text) == [NOV_9]


def test_a_month_with_its_year_names_the_month_and_nothing_else_names_anything() -> None:
    assert named_tokens("What did Maria start in December 2023?") == ["month202312"]
    assert named_tokens("Sept, 2021 and 2023-03-05") == ["month202109", "day20230305"]
    for text in ("31 February 2022", "mayhem 2022", "in 2022", "November 9", "9/11/2022"):
        assert named_tokens(text) == [], text


@given(st.dates(min_value=date(1000, 1, 1)))
def test_a_day_written_out_or_in_iso_gives_its_token(day: date) -> None:
    assert named_tokens(f"on {day.day} {day:%B %Y}") == [day_token(day)]
    assert named_tokens(day.isoformat()) == [day_token(day)]
    assert named_tokens(f"{day:%B %Y}") == [month_token(day)]
    # the analyzer keeps a token whole, and its stemmer leaves it alone
    assert tokens(day_token(day)) == [day_token(day)]
    assert tokens(month_token(day)) == [month_token(day)]
    assert token_time(day_token(day)) == day.isoformat()
    assert token_time(month_token(day)) == day.isoformat()[:7]


def test_a_time_is_on_the_day_it_was_written_on() -> None:
    assert stamp_day("2022-11-09T23:30:00-05:00") == date(2022, 11, 9)  # UTC says the 10th
    assert stamp_day("2022-11-09") == date(2022, 11, 9)
    assert stamp_day("1:56 pm on 8 May, 2023") is None


def test_a_query_keeps_its_words_and_adds_the_days_it_names() -> None:
    terms = query_terms("What did we decide on 9 November, 2022?", extended_stopwords=True)
    assert terms == ["decide", "9", "november", "2022", NOV_9]
    assert query_terms("what did we decide") == ["what", "did", "we", "decide"]


def test_a_turn_is_indexed_with_its_days_tokens() -> None:
    session = Session(
        "s3",
        (Turn("Nate", "Hello!"), Turn("Joanna", "Hi.", timestamp="2022-11-20T10:00:00Z")),
        timestamp="2022-11-09T13:56:00",
    )
    first, second = prepare_session(session, domain="d").chunks
    assert first.context.splitlines()[-2:] == [NOV_9, "month202211"]
    assert second.context.splitlines()[-2:] == ["day20221120", "month202211"]  # its own time
    undated = prepare_session(Session("s4", (Turn("Nate", "Hello!"),)), domain="d").chunks[0]
    assert undated.context == ""


def test_the_times_are_part_of_a_sessions_revision() -> None:
    turns = (Turn("Nate", "Hello!"),)
    one = prepare_session(Session("s", turns, timestamp="2022-11-09T10:00:00"), domain="d")
    other = prepare_session(Session("s", turns, timestamp="2022-11-10T10:00:00"), domain="d")
    assert one.draft.revision != other.draft.revision


TWO_DAYS = {
    "2022-11-09T13:56:00": (
        "What a week! I tried cooking: homemade coconut ice cream.",
        "That looks delicious, the sprinkles are great.",
    ),
    "2022-11-20T09:00:00": (
        "My favourite dish is pasta with tomatoes, basil and garlic.",
        "Pasta is always a good idea.",
    ),
}


def store_two_days(brain: Brain) -> None:
    """Two sessions eleven days apart, each with a turn by Nate that shares two words with
    "What dish did Nate cook?": only the day can tell them apart."""
    brain.ingest_conversation(
        [
            Session(f"s{n}", (Turn("Nate", nate), Turn("Joanna", joanna)), "c", stamp)
            for n, (stamp, (nate, joanna)) in enumerate(TWO_DAYS.items(), start=1)
        ]
    )


def test_a_question_that_names_the_day_finds_that_days_turn(brain: Brain) -> None:
    store_two_days(brain)
    dated = brain.search("What dish did Nate cook on 9 November, 2022?", k=3)
    assert "coconut ice cream" in dated[0].text and dated[0].trace.day == "2022-11-09"
    assert "coconut" in brain.search("What dish did Nate cook on 2022-11-09?", k=3)[0].text
    other = brain.search("What dish did Nate cook on 20 November, 2022?", k=3)
    assert "pasta" in other[0].text and other[0].trace.day == "2022-11-20"
    assert all(h.trace.day is None for h in brain.search("What dish did Nate cook?"))
    # a month names every day of it
    month = brain.search("What dish did Nate cook in November 2022?", k=2)
    assert [h.trace.day for h in month] == ["2022-11", "2022-11"]


def test_the_confidence_leaves_out_the_day_a_question_names(brain: Brain) -> None:
    """A turn rarely writes its own date, and a note holds no day token: the date is left out
    of what the best hit must hold, in either kind of brain."""
    brain.add_memory("We decided to move the release to Friday.")
    brain.ingest_conversation(
        [Session("s", (Turn("Nate", "I tried cooking coconut ice cream."),), timestamp=NOV)]
    )
    for dated, plain in (
        (
            "what did we decide about the release on 9 November 2022",
            "what did we decide about the release",
        ),
        ("what did Nate cook on 2022-11-09?", "what did Nate cook?"),
    ):
        [first, *_] = brain.search(dated)
        [same, *_] = brain.search(plain)
        assert first.chunk_id == same.chunk_id
        sure, plainly = first.trace.confidence, same.trace.confidence
        assert sure is not None and plainly is not None and not sure.weak
        # the words held weigh the same (the day token moves the lists' margins, which the
        # hashing profile's lexical model does not read)
        assert (sure.coverage, sure.matched, sure.value) == (
            plainly.coverage,
            plainly.matched,
            plainly.value,
        )
    # nothing but a date: judged by its words, which nothing holds
    [only] = brain.search("9 November 2022", k=1)
    assert only.trace.confidence is not None and only.trace.confidence.weak
