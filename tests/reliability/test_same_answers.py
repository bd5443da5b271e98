"""Same data, same answer: the result lists depend on the data alone, not on its history (export
then import gives a brain that answers every query as the original does), nor on which process
asks (a fresh process on the same file answers as a long-lived one)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings
from nexusbrain.records import SearchMode

WORDS = (
    "deploy vault key rotate backup bucket river stone cloud engine piano violin orbit comet"
    " harbor ship bridge tunnel forest maple cedar lantern garden tomato summer water service"
    " outage alert queue worker cache index shard replica quorum ledger invoice tariff"
).split()
QUERIES = [" ".join(WORDS[i : i + 3]) for i in range(0, len(WORDS) - 3, 2)]

ANSWERS = """
import json, sys
from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings
with Brain.open(settings=Settings(db=sys.argv[1], embedder=Profile.EDGE)) as brain:
    module = __import__("tests.reliability.test_same_answers", fromlist=["answers"])
    print(json.dumps(module.answers(brain)))
"""


def note(i: int, edit: int = 0) -> str:
    body = " ".join(WORDS[(i * 7 + j * (3 + edit)) % len(WORDS)] for j in range(40))
    return f"# Note {i}\n\n{body}.\n\n## More\n\n{' '.join(reversed(body.split()))}."


def answers(brain: Brain) -> list[list[tuple[str, int, int, float]]]:
    out = []
    for mode in SearchMode:
        for query in QUERIES:
            hits = brain.search(query, mode=mode, k=10)
            out.append([(h.uri, h.char_start, h.char_end, round(h.score, 12)) for h in hits])
    return out


def with_history(path: Path) -> Brain:
    """A brain whose index lived through writes, updates and deletions."""
    brain = Brain.open(settings=Settings(db=path, embedder=Profile.EDGE))
    for i in range(60):
        brain.ingest_markdown(note(i), uri=f"n/{i}.md")
    brain.search("warm the index")
    for i in range(0, 60, 3):
        brain.ingest_markdown(note(i, edit=1), uri=f"n/{i}.md")
    brain.search("warm the index again")
    for i in range(1, 60, 6):
        brain.delete_document(brain.find_document(f"n/{i}.md").id)
    for i in range(60, 75):
        brain.ingest_markdown(note(i), uri=f"n/{i}.md")
    return brain


def test_export_then_import_answers_every_query_the_same(tmp_path: Path) -> None:
    with with_history(tmp_path / "a.db") as source:
        before = answers(source)
        records = list(source.admin.export())
    with Brain.open(settings=Settings(db=tmp_path / "b.db", embedder=Profile.EDGE)) as copy:
        copy.admin.import_records(records)
        after = answers(copy)
    assert sum(len(a) for a in before) > 300
    assert after == before


def test_a_fresh_process_answers_as_a_long_lived_one(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    with with_history(path) as brain:
        here = answers(brain)
        root = Path(__file__).resolve().parents[2]
        for cache in tmp_path.glob("a.db.vectors-*"):
            cache.unlink()  # the other process reads every vector from the store
        done = subprocess.run(
            [sys.executable, "-c", ANSWERS, str(path)],
            capture_output=True,
            cwd=root,
            timeout=120,
            check=True,
        )
    there = [[tuple(hit) for hit in hits] for hits in json.loads(done.stdout)]
    assert there == here
