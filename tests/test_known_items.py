"""An exact match on a rare word is never lost, in any mode: a ticket searched by its id, a
person by their name, an incident by its error code, a note by the file name it is about
each comes first, whichever embedder ranks the meaning (SPEC §3).

The notes are long enough that an id is a small part of what the embedder sees, and they
share most of their words, so the dense list cannot tell them apart: only the lexical
evidence can, and fusion must let it."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings
from nexusbrain.records import SearchMode

LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"
SUBJECTS = [
    "the login page",
    "the payment flow",
    "the search index",
    "the mobile app",
    "the CSV export",
    "the weekly email digest",
    "webhook retries",
    "the dashboard charts",
    "user invitations",
    "the API rate limiter",
]
SYMPTOMS = [
    "fails intermittently",
    "times out under load",
    "shows the wrong total",
    "crashes on start",
    "returns a server error",
    "drops the last row",
    "loses the session",
]
FILLER = [
    "Support reproduced it on the staging environment and attached the logs.",
    "It started after the last release and affects a handful of customers.",
    "The on-call engineer added a workaround and lowered the priority.",
    "Steps to reproduce are in the linked thread, with screenshots.",
    "We suspect a race between the cache refresh and the background job.",
    "A fix is planned for the next sprint once the root cause is confirmed.",
    "Customers were told about the workaround in the status page update.",
]
FIRST = ["Priya", "Tomasz", "Amara", "Kenji", "Lucía", "Oluwaseun", "Ingrid", "Mateo"]
LAST = ["Raman", "Kowalczyk", "Okafor", "Tanaka", "Fernández", "Adeyemi", "Lindqvist", "Rossi"]
CODES = ["E11000", "ERR_SSL_PROTOCOL_ERROR", "ORA-00942", "EADDRINUSE", "SQLSTATE 40P01"]
FILES = ["docker-compose.override.yml", "settings_local.py", "tsconfig.build.json"]


PROJECTS = ["OPS", "WEB", "PAY", "DATA", "MOB"]


def _ticket_ids(rng: random.Random, n: int) -> list[str]:
    """Half in five shared projects (every OPS ticket holds "OPS"), half in projects of
    their own."""
    ids: set[str] = set()
    while len(ids) < n:
        own = "".join(rng.choice(LETTERS) for _ in range(3))
        project = rng.choice(PROJECTS) if len(ids) % 2 else own
        ids.add(f"{project}-{rng.randint(100, 9999)}")
    return sorted(ids)


def _body(rng: random.Random) -> str:
    return " ".join(rng.sample(FILLER, 5))


def _known_items(brain: Brain) -> list[tuple[str, str]]:
    """Write the notes; (query, the text only its own note holds) for each known item."""
    rng = random.Random(18)
    items: list[tuple[str, str]] = []
    for ticket in _ticket_ids(rng, 200):
        subject, symptom = rng.choice(SUBJECTS), rng.choice(SYMPTOMS)
        brain.add_memory(f"Ticket {ticket}: {subject} {symptom}. {_body(rng)}")
        items.append((ticket, f"Ticket {ticket}:"))
    people = [f"{first} {last}" for first in FIRST for last in LAST][::7]
    for person in people:
        brain.add_memory(f"One-to-one with {person} about {rng.choice(SUBJECTS)}. {_body(rng)}")
        items.append((person, person))
    for code in CODES:
        brain.add_memory(f"Incident: {rng.choice(SUBJECTS)} failed with {code}. {_body(rng)}")
        items.append((code, code))
    for name in FILES:
        brain.add_memory(f"Changed {name} so that {rng.choice(SUBJECTS)} works. {_body(rng)}")
        items.append((name, name))
    return items


@pytest.fixture(scope="module", params=[Profile.HASHING, Profile.EDGE])
def filled(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Brain, list[tuple[str, str]]]]:
    db: Path = tmp_path_factory.mktemp("known") / "brain.db"
    with Brain.open(settings=Settings(db=db, embedder=request.param)) as brain:
        yield brain, _known_items(brain)


@pytest.mark.parametrize("mode", list(SearchMode))
def test_an_exact_match_on_a_rare_word_comes_first_in_every_mode(
    filled: tuple[Brain, list[tuple[str, str]]], mode: SearchMode
) -> None:
    brain, items = filled
    lost = []
    for query, text in items:
        hits = brain.search(query, mode=mode)
        if not hits or text not in hits[0].text:
            lost.append((query, hits[0].text[:40] if hits else None))
    assert len(items) == 200 + 10 + len(CODES) + len(FILES)
    assert lost == []
