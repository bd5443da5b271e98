"""Faults: a full disk (a small tmpfs), a read-only file system, and a write-ahead log left by a
killed process. Each gives a clear error, and nothing acknowledged is lost. The file systems are
real mounts: the tests skip where this process may not mount (they need root)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from nexusbrain.cli.main import cli
from nexusbrain.errors import Full, StorageError

from .checks import file_checks, open_brain


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_refuses_writes_clearly_and_loses_nothing(small_disk: Path) -> None:
    db = small_disk / "brain.db"
    kept: list[str] = []
    with open_brain(db) as brain:
        with pytest.raises(Full, match="the disk is full"):
            for i in range(100_000):
                text = f"memory {i}: " + " ".join(f"word{i}x{j}" for j in range(200))
                brain.add_memory(text)
                kept.append(text)
        assert kept  # some writes went through first
        refused = CliRunner().invoke(cli, ["--db", str(db), "add", "one more note " * 500])
        assert refused.exit_code == 1 and "the disk is full" in refused.output
    with open_brain(db) as brain:
        texts = {r["content"] for r in brain.admin.export() if r["type"] == "document"}
    assert set(kept) <= texts
    file_checks(db)
    print(f"full disk: {len(kept)} acknowledged before it filled, 0 lost")


def test_a_read_only_file_system_gives_a_clear_error(small_disk: Path) -> None:
    db = small_disk / "brain.db"
    with open_brain(db) as brain:
        brain.add_memory("the vault key rotates every ninety days")
    remount = subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], capture_output=True)
    if remount.returncode != 0:
        pytest.skip(f"cannot remount read-only: {remount.stderr.decode().strip()}")
    try:
        with pytest.raises(StorageError, match="its file system is read-only"):
            open_brain(db)
        result = CliRunner().invoke(cli, ["--db", str(db), "search", "vault key"])
        assert result.exit_code == 1 and "error:" in result.output
        assert "Traceback" not in result.output
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    with open_brain(db) as brain:
        assert brain.search("vault key")[0].text == "the vault key rotates every ninety days"


@pytest.mark.slow
def test_a_disk_filling_under_http_writers_answers_507_and_loses_nothing(small_disk: Path) -> None:
    import threading

    from nexusbrain.config import ServerSettings

    from ..conftest import LiveServer, _serve, free_port

    db = small_disk / "brain.db"
    statuses: list[int] = []
    kept: list[str] = []
    with open_brain(db) as brain:
        for server in _serve(brain, ServerSettings(port=free_port())):

            def write(n: int, server: LiveServer = server) -> None:
                with server.client() as http:
                    for i in range(400):
                        text = f"writer {n} memory {i}: " + " ".join(
                            f"w{n}x{i}y{j}" for j in range(150)
                        )
                        answer = http.post("/add", json={"text": text})
                        statuses.append(answer.status_code)
                        if answer.status_code == 200:
                            kept.append(text)
                        else:
                            assert answer.json()["error"]["code"] == "storage_full"

            writers = [threading.Thread(target=write, args=(n,)) for n in range(4)]
            for writer in writers:
                writer.start()
            for writer in writers:
                writer.join(timeout=300)
    assert 507 in statuses and set(statuses) <= {200, 507}
    with open_brain(db) as brain:
        texts = {r["content"] for r in brain.admin.export() if r["type"] == "document"}
    assert set(kept) <= texts
    file_checks(db)
    refused = statuses.count(507)
    print(
        f"disk filling under 4 writers: {len(kept)} acknowledged, {refused} refused (507), 0 lost"
    )


WRITER = """
import os, signal, sys
from nexusbrain.brain import Brain
from nexusbrain.config import Profile, Settings
with Brain.open(settings=Settings(db=sys.argv[1], embedder=Profile.HASHING)) as brain:
    for i in range(200):
        brain.add_memory(f"committed memory {i} about harbors")
        print(i, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_wal_left_by_a_killed_process_is_recovered(tmp_path: Path) -> None:
    db = tmp_path / "brain.db"
    done = subprocess.run(
        [sys.executable, "-c", WRITER, str(db)], capture_output=True, timeout=120, env=os.environ
    )
    assert done.returncode == -signal.SIGKILL
    acknowledged = done.stdout.decode().split()
    assert len(acknowledged) == 200
    wal = Path(f"{db}-wal")
    assert wal.exists() and wal.stat().st_size > 0  # the writes live in the log, not the file
    copy = tmp_path / "copy"  # as a backup tool would find the files after a crash
    copy.mkdir()
    for part in tmp_path.glob("brain.db*"):
        shutil.copy(part, copy / part.name)
    time.sleep(0.01)
    for folder in (tmp_path, copy):
        with open_brain(folder / "brain.db") as brain:
            texts = {r["content"] for r in brain.admin.export() if r["type"] == "document"}
        assert {f"committed memory {i} about harbors" for i in range(200)} <= texts
        file_checks(folder / "brain.db")
