"""--watch: real file changes in a temporary folder, followed by a real brain (and by real
`nexusbrain ingest-dir --watch` and `serve --watch` processes), each waited for with a
bounded timeout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from nexusbrain.brain import Brain
from nexusbrain.ingest.directory import DirectoryReport

from .test_cli_client import cli_process, environment, start, stop

PYTHON = sys.executable
WAIT = 10.0  # seconds any one change may take to be followed (the goal is well under 1 s)


def eventually(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT} s: {what}")
        time.sleep(0.02)


class Watching:
    """Brain.watch_dir on a thread, with every line it would print."""

    def __init__(self, brain: Brain, folder: Path) -> None:
        self.brain = brain
        self.lines: list[str] = []
        self.stop = threading.Event()
        self.syncs = 0
        self.thread = threading.Thread(
            target=brain.watch_dir, args=(folder,), kwargs={"on_sync": self.seen, "stop": self.stop}
        )

    def seen(self, report: DirectoryReport) -> None:
        self.lines += [f"{c.status.value} {Path(c.path).name}" for c in report.changes]
        self.syncs += 1

    def texts(self) -> set[str]:
        return {hit.text for hit in self.brain.search("note", k=50, mode="conservative")}


@pytest.fixture
def watching(brain: Brain, tmp_path: Path) -> Iterator[tuple[Watching, Path]]:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nnote alpha one\n")
    watcher = Watching(brain, folder)
    watcher.thread.start()
    eventually(lambda: watcher.syncs == 1, "the first sync")
    yield watcher, folder
    watcher.stop.set()
    watcher.thread.join(timeout=10)
    assert not watcher.thread.is_alive()


def test_every_kind_of_change_is_followed(watching: tuple[Watching, Path], tmp_path: Path) -> None:
    watcher, folder = watching
    assert watcher.lines == ["added a.md"] and watcher.texts() == {"# A\n\nnote alpha one"}

    (folder / "b.md").write_text("# B\n\nnote bravo\n")
    eventually(lambda: "note bravo" in "".join(watcher.texts()), "a new file")

    (folder / "a.md").write_text("# A\n\nnote alpha two\n")
    eventually(lambda: "note alpha two" in "".join(watcher.texts()), "an edit in place")

    # vim: a test file, the original renamed to a backup, the new text written, the backup
    # removed
    (folder / "4913").write_text("")
    (folder / "4913").unlink()
    (folder / "a.md").rename(folder / "a.md~")
    (folder / "a.md").write_text("# A\n\nnote alpha three\n")
    (folder / "a.md~").unlink()
    eventually(lambda: "note alpha three" in "".join(watcher.texts()), "a save as vim does")

    # an IDE: the new text written to a temporary file, renamed over the original
    (folder / ".a.md.tmp-1234").write_text("# A\n\nnote alpha four\n")
    os.replace(folder / ".a.md.tmp-1234", folder / "a.md")
    eventually(lambda: "note alpha four" in "".join(watcher.texts()), "an atomic save")

    (folder / "b.md").rename(folder / "c.md")
    eventually(lambda: "retired b.md" in watcher.lines, "a rename")
    assert watcher.brain.document(str(folder / "c.md")).content == "# B\n\nnote bravo\n"

    (folder / "sub").mkdir()
    (folder / "sub" / "d.md").write_text("# D\n\nnote delta\n")
    eventually(lambda: "note delta" in "".join(watcher.texts()), "a file in a new folder")
    (folder / "sub").rename(tmp_path / "elsewhere")
    eventually(lambda: "note delta" not in "".join(watcher.texts()), "a folder moved out")

    (folder / "c.md").unlink()
    eventually(lambda: "note bravo" not in "".join(watcher.texts()), "a deletion")
    # a sync's lines are reported once it is done, just after a search can see its change
    eventually(lambda: "retired c.md" in watcher.lines, "the deletion's line")
    assert watcher.lines == [
        "added a.md",
        "added b.md",
        "updated a.md",
        "updated a.md",
        "updated a.md",
        "added c.md",
        "retired b.md",
        "added d.md",
        "retired d.md",
        "retired c.md",
    ]


def test_other_files_and_editor_droppings_cause_no_sync(watching: tuple[Watching, Path]) -> None:
    watcher, folder = watching
    (folder / "brain.db-wal").write_bytes(b"\0" * 100)
    (folder / ".a.md.swp").write_bytes(b"swap")
    (folder / "a.md~").write_text("backup")
    (folder / "b.md").write_text("# B\n\nnote bravo\n")  # then one that counts
    eventually(lambda: "added b.md" in watcher.lines, "the markdown file")
    time.sleep(0.3)
    assert watcher.syncs == 2  # the first sync, and the one for b.md


def test_ingest_dir_watch_prints_a_line_per_change_and_idles(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nalpha\n")
    command = ["-m", "nexusbrain", "--db", str(tmp_path / "b.db"), "ingest-dir", str(folder)]
    process = subprocess.Popen(
        [PYTHON, *command, "--watch"],
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C is what stops it: a test run started in the background by a shell has
        # SIGINT ignored (POSIX), and a child would inherit that
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline().startswith(f"{folder}: 1 added")
        assert process.stdout.readline() == f"into the brain at {tmp_path / 'b.db'}\n"
        assert process.stderr.readline() == f"watching {folder} (Ctrl-C to stop)\n"
        time.sleep(0.5)  # the watch has begun; nothing changes
        idle = psutil.Process(process.pid)
        before = idle.cpu_times()
        time.sleep(2)
        after = idle.cpu_times()
        assert (after.user - before.user) + (after.system - before.system) <= 0.05
        (folder / "a.md").write_text("# A\n\nalpha, edited\n")
        assert process.stdout.readline() == f"updated {folder / 'a.md'} (1 chunk)\n"
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    assert process.returncode == 0


def test_serve_watch_makes_an_edit_searchable_through_the_fast_path(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nthe first draft\n")
    db = tmp_path / "served.db"
    process = start(db, "--watch", str(folder))

    def found(words: str) -> list[str]:
        result = cli_process("search", words, "--json", db=db)
        assert result.code == 0, result.stderr
        return [hit["text"] for hit in json.loads(result.stdout)["hits"]]

    try:
        eventually(lambda: found("first draft") == ["# A\n\nthe first draft"], "the first sync")
        (folder / "a.md").write_text("# A\n\nthe second draft, with zebras\n")
        eventually(lambda: "zebras" in "".join(found("zebras")), "the edit")
    finally:
        out = stop(process).decode()
    assert f"  watching  {folder}" in out
    assert f"updated {folder / 'a.md'} (1 chunk)" in out
