"""`POST /import` streams (issue 35.2): the records are checked as the body arrives and staged
on disk, then written in one transaction, so the server's memory does not grow with the body.
A real `nexusbrain serve` process, its resident memory sampled while it imports."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import orjson
import psutil
import pytest

from nexusbrain import discovery
from nexusbrain.brain import Brain
from nexusbrain.jsonlines import parse_lines

from .test_cli_client import start, stop

NDJSON = {"content-type": "application/x-ndjson"}
AT = "2026-01-02T03:04:05.000000+00:00"
WORDS = "the staging database moved to another host after the outage of the spring".split()


def export_lines(documents: int, first_bad: int | None = None) -> Iterator[bytes]:
    """An export of `documents` notes of four chunks each (about 5 kB of NDJSON a note);
    `first_bad`: that document's chunks name no document."""
    yield orjson.dumps({"type": "header", "format": "nexusbrain-export", "version": 1}) + b"\n"
    for n in range(1, documents + 1):
        text = " ".join(WORDS[(n + i) % len(WORDS)] for i in range(80)) + f" note{n}"
        yield (
            orjson.dumps(
                {
                    "type": "document",
                    **{"id": n, "uri": f"notes/{n}.md", "title": f"Note {n}", "domain": "default"},
                    **{"kind": "markdown", "revision": f"r{n}", "content": text * 4},
                    **{"metadata": {}, "created_at": AT, "updated_at": AT, "deleted_at": None},
                }
            )
            + b"\n"
        )
    for n in range(1, documents + 1):
        for ordinal in range(4):
            text = " ".join(WORDS[(n * ordinal + i) % len(WORDS)] for i in range(90))
            yield (
                orjson.dumps(
                    {
                        "type": "chunk",
                        **{"id": 4 * n + ordinal, "document_id": n if n != first_bad else 0},
                        **{"ordinal": ordinal, "char_start": 0, "char_end": len(text)},
                        **{"line_start": 1, "line_end": 1, "heading_path": [f"Note {n}"]},
                        **{"text": f"{text} chunk{n}x{ordinal}", "unit": None, "meta": {}},
                        "context": "",
                    }
                )
                + b"\n"
            )


class PeakMemory:
    """The highest resident memory of a process, sampled every 10 ms while in use."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.peak = self.process.memory_info().rss
        self.running = True
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while self.running:
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(0.01)

    def __enter__(self) -> PeakMemory:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.running = False
        self.thread.join()


def imported_with_peak(tmp_path: Path, documents: int) -> tuple[int, int, dict[str, int]]:
    """The server's resident memory before the import (after a refused one, so that what an
    import loads once is loaded), its peak during the import of `documents` notes into the
    empty brain, and the answer."""
    db = tmp_path / "brain.db"
    process = start(db)
    try:
        info = discovery.find(db)
        assert info is not None
        with httpx.Client(base_url=info.url, timeout=600) as http:
            refused = http.post("/import", content=b"".join(export_lines(3, 2)), headers=NDJSON)
            assert refused.status_code == 400, refused.text
            before = psutil.Process(process.pid).memory_info().rss
            body = b"".join(export_lines(documents))
            with PeakMemory(process.pid) as memory:
                answer = http.post("/import", content=iter([body]), headers=NDJSON)
            assert answer.status_code == 200, answer.text
            return before, memory.peak, answer.json()
    finally:
        stop(process)


def check_import(tmp_path: Path, documents: int) -> None:
    before, peak, result = imported_with_peak(tmp_path, documents)
    assert (result["documents"], result["chunks"]) == (documents, 4 * documents)
    grown = (peak - before) / 2**20
    print(f"{documents} notes: RSS {before / 2**20:.0f} MB, peak {peak / 2**20:.0f} MB")
    assert grown <= 100, f"the server grew by {grown:.0f} MB importing {documents} notes"


def test_an_import_streams_through_the_server_in_bounded_memory(tmp_path: Path) -> None:
    # about 10 MB of NDJSON; held whole, the records took ~25 bytes of memory per byte
    check_import(tmp_path, 2_000)


@pytest.mark.slow
def test_a_50_mb_import_grows_the_server_by_at_most_100_mb(tmp_path: Path) -> None:
    check_import(tmp_path, 10_600)  # 50.3 MiB of NDJSON


def test_export_is_sent_in_pieces_of_many_lines() -> None:
    """Issue 35.3: a piece a line (each fetched from a worker thread and sent through the
    middleware) made HTTP /export of 12k documents ten times slower than the CLI's export."""
    from nexusbrain.api.app import PIECE_BYTES, _lines

    records = [orjson.loads(line) for line in export_lines(300)]
    response = _lines(lambda: iter(records))

    async def body() -> list[bytes]:
        return [bytes(piece) async for piece in response.body_iterator]  # type: ignore[arg-type]

    pieces = anyio.run(body)
    sent = b"".join(pieces)
    assert sent == b"".join(orjson.dumps(r) + b"\n" for r in records)
    assert len(pieces) <= -(-len(sent) // PIECE_BYTES) < len(records) / 100
    assert all(piece.endswith(b"\n") for piece in pieces)  # whole lines each


def test_an_import_reports_its_progress_as_it_reads_and_writes(tmp_path: Path) -> None:
    """Issue 35.11: `import` was silent until it ended. The command reports the bytes of the
    file read (as they are checked and staged), then the records written, then embedding."""
    from nexusbrain.cli import bulk
    from nexusbrain.config import Profile, Settings

    source = tmp_path / "export.jsonl"
    source.write_bytes(b"".join(export_lines(300)))  # 1,501 records
    heard: list[tuple[str, int, int]] = []

    def progress(phase: str, done: int, total: int) -> None:
        heard.append((phase, done, total))

    with source.open("rb") as handle:
        lines = parse_lines(bulk._read(handle, progress))
        with Brain.open(settings=Settings(db=tmp_path / "b.db", embedder=Profile.HASHING)) as brain:
            assert brain.admin.import_records(lines, progress).chunks == 1_200
    size = source.stat().st_size
    reading = [(done, total) for phase, done, total in heard if phase == "reading"]
    assert reading[0][1] == size and reading[-1] == (size, size) and len(reading) == 2
    importing = [(done, total) for phase, done, total in heard if phase == "importing"]
    assert importing == [(1_000, 1_501), (1_501, 1_501)]
    assert heard.index(("reading", size, size)) < heard.index(("importing", 1_000, 1_501))
