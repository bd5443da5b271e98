"""Keeping the brain in step with a folder while its files change (`--watch`).

The operating system tells watchfiles (inotify, FSEvents, ReadDirectoryChangesW, through the
Rust `notify` crate) when something under the folder changes, so nothing runs while nothing
changes. A burst of events is gathered until the folder has been quiet for STEP_MS (at most
DEBOUNCE_MS), and then the folder is synced as `ingest-dir` syncs it: by content hash, so
unchanged files cost a read and no write, a changed file is re-chunked in one transaction,
and a file that is gone is retired. That one rule covers every way a file changes: an edit,
an editor's save through a temporary file renamed over the original (vim, most IDEs), a
rename (a retire and an add), a folder moved in or out. A sync of 5,183 unchanged files
takes ~0.1 s (docs/design/cli.md).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from watchfiles import Change, DefaultFilter

# watchfiles.watch() begins watching only when first asked for changes, so a sync before it
# could miss a change made in between. Its own watcher class (typed, behind watch() since
# 0.10) starts watching when made: the first sync then follows the watch's start.
from watchfiles._rust_notify import RustNotify

from nexusbrain.errors import BrainError
from nexusbrain.ingest.directory import DirectoryReport
from nexusbrain.ingest.files import resolve_root
from nexusbrain.ingest.formats import SUFFIXES

log = logging.getLogger(__name__)

DEBOUNCE_MS = 1_000  # the longest a burst of changes is gathered before a sync
STEP_MS = 50  # the quiet time that ends a burst
POLL_MS = 300  # only where the system cannot notify (watchfiles falls back to polling)


class NotesFilter(DefaultFilter):
    """Events that may change what the folder holds: files of a kind ingest reads, and folders
    (a folder moved or removed takes its files with it). Editors' swap and backup files,
    .git and the like (watchfiles' DefaultFilter), and other files, such as a database kept
    in the folder, are not."""

    def __call__(self, change: Change, path: str) -> bool:
        if not super().__call__(change, path):
            return False
        here = Path(path)
        return here.suffix.lower() in SUFFIXES or not here.suffix or here.is_dir()


def follow(
    root: str | Path,
    sync: Callable[[], DirectoryReport],
    on_sync: Callable[[DirectoryReport], None],
    *,
    stop: threading.Event | None = None,
) -> None:
    """Sync the folder once the watch has begun (what changed while nothing watched), then
    after each burst of changes under `root`; `on_sync` gets each sync's report. Returns when
    `stop` is set, or on Ctrl-C in the main thread."""
    folder = resolve_root(root)
    keep = NotesFilter()
    with RustNotify([str(folder)], False, False, POLL_MS, True, False) as watcher:
        _sync(sync, on_sync)
        while True:
            raw = watcher.watch(DEBOUNCE_MS, STEP_MS, 0, stop)  # 0: no timeout
            if isinstance(raw, str):  # "stop", "signal" (Ctrl-C) or "timeout" (none asked)
                return
            changes = [(Change(kind), path) for kind, path in raw if keep(Change(kind), path)]
            if changes:
                log.debug("%d change(s) under %s", len(changes), folder)
                _sync(sync, on_sync)


def _sync(sync: Callable[[], DirectoryReport], on_sync: Callable[[DirectoryReport], None]) -> None:
    """One sync; a failure (the database busy or gone) is logged, and the next burst of
    changes tries again."""
    try:
        report = sync()
    except BrainError as exc:
        log.error("could not sync the folder: %s", exc.message)
        return
    on_sync(report)


FOLLOW_EVERY_S = 1.0  # how often the list of sources is read again while following them


def follow_sources(
    listed: Callable[[], Mapping[str, str]],
    sync: Callable[[str], DirectoryReport],
    on_sync: Callable[[DirectoryReport], None],
    *,
    stop: threading.Event,
    every: float = FOLLOW_EVERY_S,
) -> None:
    """Follow every source `listed` names (name -> root), each as `follow` follows a folder,
    in a thread of its own, `sync(name)` syncing it. The list is read again every `every`
    seconds: a source added meanwhile (by another process too) is followed from then, one
    removed or moved is let go. Returns when `stop` is set, once each thread has ended."""
    running: dict[str, _Following] = {}
    try:
        while True:
            try:
                wanted = dict(listed())
            except BrainError as exc:
                log.error("could not read the sources: %s", exc.message)
                wanted = {name: following.root for name, following in running.items()}
            for name in [n for n, f in running.items() if wanted.get(n) != f.root]:
                running.pop(name).end()
            for name, root in wanted.items():
                if name not in running:
                    running[name] = _Following(name, root, sync, on_sync)
            if stop.wait(every):
                return
    finally:
        for following in running.values():
            following.end()


class _Following:
    """One source followed in a thread of its own until `end`."""

    def __init__(
        self,
        name: str,
        root: str,
        sync: Callable[[str], DirectoryReport],
        on_sync: Callable[[DirectoryReport], None],
    ) -> None:
        self.root = root
        self.stop = threading.Event()
        self.thread = threading.Thread(
            target=self._run, args=(name, sync, on_sync), name=f"nexusbrain-source-{name}"
        )
        self.thread.daemon = True
        self.thread.start()

    def _run(
        self,
        name: str,
        sync: Callable[[str], DirectoryReport],
        on_sync: Callable[[DirectoryReport], None],
    ) -> None:
        try:
            follow(self.root, lambda: sync(name), on_sync, stop=self.stop)
        except BrainError as exc:  # its folder is gone: it stays unfollowed until it changes
            log.error("cannot follow the source %r: %s", name, exc.message)

    def end(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
