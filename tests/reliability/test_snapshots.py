"""Export and backup read one consistent snapshot and never fail or block a writer: real HTTP
writers on loopback against exports and backups taken meanwhile."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import orjson
from click.testing import CliRunner

from nexusbrain.cli.main import cli

from ..conftest import LiveServer

WRITERS, WRITES, EXPORTS = 4, 40, 6


def consistent(records: list[dict[str, object]]) -> None:
    """Every chunk, revision and relationship refers to a record of the same export."""
    documents = {r["id"] for r in records if r["type"] == "document"}
    assert records[0]["type"] == "header"
    assert all(r["document_id"] in documents for r in records if r["type"] in ("chunk", "revision"))
    live = {r["id"] for r in records if r["type"] == "document" and not r["deleted_at"]}
    with_chunks = {r["document_id"] for r in records if r["type"] == "chunk"}
    assert with_chunks <= live and live <= with_chunks  # a live document has its chunks


def test_exports_during_writes_are_snapshots_and_no_write_fails(live_server: LiveServer) -> None:
    failures: list[str] = []
    exports: list[list[dict[str, object]]] = []

    def write(n: int) -> None:
        with live_server.client() as http:
            for i in range(WRITES):
                answer = http.post("/add", json={"text": f"writer {n} memory {i} about lanterns"})
                if answer.status_code != 200:
                    failures.append(f"{answer.status_code} {answer.text}")

    def export() -> None:
        with live_server.client() as http:
            for _ in range(EXPORTS):
                body = http.get("/export")
                if body.status_code != 200:
                    failures.append(f"export {body.status_code}")
                    continue
                exports.append([orjson.loads(line) for line in body.content.splitlines() if line])

    threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
    threads += [threading.Thread(target=export) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert failures == []
    assert len(exports) == 2 * EXPORTS
    for records in exports:
        consistent(records)
    stats = live_server.brain.stats().store
    assert stats.documents == WRITERS * WRITES
    print(f"exports during writes: {len(exports)} exports, {stats.documents} writes, 0 failed")


def test_a_backup_while_the_server_writes_is_a_whole_brain(
    live_server: LiveServer, tmp_path: Path
) -> None:
    stop = threading.Event()
    written: list[int] = []

    def write() -> None:
        with live_server.client() as http:
            i = 0
            while not stop.is_set():
                assert (
                    http.post("/add", json={"text": f"note {i} on the harbor"}).status_code == 200
                )
                written.append(i)
                i += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        while len(written) < 20:
            threading.Event().wait(0.01)
        db = str(live_server.brain.settings.db)
        target = tmp_path / "copy.db"
        result = CliRunner().invoke(cli, ["--db", db, "backup", str(target), "--json"])
        assert result.exit_code == 0, result.output
        assert orjson.loads(result.output)["bytes"] > 0
    finally:
        stop.set()
        writer.join(timeout=60)
    conn = sqlite3.connect(target)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    copied = CliRunner().invoke(cli, ["--db", str(target), "export"])
    records = [orjson.loads(line) for line in copied.output.splitlines() if line]
    consistent(records)
    assert 20 <= sum(r["type"] == "document" for r in records) <= len(written)
    again = CliRunner().invoke(cli, ["--db", db, "backup", str(target)])
    assert again.exit_code == 1 and "already exists" in again.output
