"""The SHA-256 of a model's files, which its model id holds (a stored vector is reused only
with the weights that made it), remembered between processes so that a fresh process does
not hash the weights again: the command line opens the brain on its first call, and hashing
the edge model's 8.3 MB took longer than loading it.

What is remembered is keyed by each file's path and stat: device, inode, size, and the
modification and change times in nanoseconds. Writing a file's bytes updates both times, and
setting the modification time back (os.utime) updates the change time, which no user call
sets; replacing the file gives it another inode. So a file whose bytes changed does not match
what was remembered, and is hashed again. As git does with its index ("racy git"), a digest
is not remembered while the file changed within the last SETTLE seconds: a change made in
the same tick of the file system's clock could otherwise leave every time as it was.

The entries live in the user's cache folder (config.cache_dir: $XDG_CACHE_HOME/nexusbrain on
Linux), one small JSON file per set of files, written whole (a reader never sees half of
one). A folder that cannot be written only means hashing every time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

SETTLE = 2.0  # seconds a file's times must lie in the past before its digest is remembered
BLOCK = 1 << 20


def digest(*paths: Path, cache: Path | None = None, settle: float = SETTLE) -> str:
    """The hex SHA-256 of the files' bytes, one after another. `cache`: the folder of the
    remembered digests (None: the user's cache folder)."""
    files = [path.resolve() for path in paths]
    stats = [_stat(path) for path in files]
    entry = _entry(cache, files)
    known = _recall(entry, files, stats)
    if known is not None:
        return known
    found = hashlib.sha256()
    for path in files:
        with path.open("rb") as handle:
            while block := handle.read(BLOCK):
                found.update(block)
    hexdigest = found.hexdigest()
    # the files' stats again: a file written while it was read gives no entry
    if [_stat(path) for path in files] == stats:
        _remember(entry, files, stats, hexdigest, settle)
    return hexdigest


def read_with_digest(
    path: Path, *, cache: Path | None = None, settle: float = SETTLE
) -> tuple[bytes, str]:
    """The file's bytes and their hex SHA-256, both from one open file, so that the digest is
    that of the bytes returned even when the file is replaced meanwhile."""
    file = path.resolve()
    entry = _entry(cache, [file])
    with file.open("rb") as handle:
        before = _stat_of(os.fstat(handle.fileno()))
        data = handle.read()
        stable = _stat_of(os.fstat(handle.fileno())) == before
    known = _recall(entry, [file], [before]) if stable else None
    if known is not None:
        return data, known
    hexdigest = hashlib.sha256(data).hexdigest()
    if stable:
        _remember(entry, [file], [before], hexdigest, settle)
    return data, hexdigest


Stat = list[int]


def _stat(path: Path) -> Stat:
    return _stat_of(path.stat())


def _stat_of(found: os.stat_result) -> Stat:
    return [found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns]


def _entry(cache: Path | None, files: Sequence[Path]) -> Path:
    if cache is None:
        from nexusbrain.config import cache_dir

        cache = cache_dir()
    name = hashlib.sha256("\0".join(map(str, files)).encode("utf-8")).hexdigest()[:32]
    return cache / "digests" / f"{name}.json"


def _recall(entry: Path, files: Sequence[Path], stats: Sequence[Stat]) -> str | None:
    try:
        known = json.loads(entry.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(known, dict):
        return None
    if known.get("files") != [str(path) for path in files] or known.get("stats") != stats:
        return None
    value = known.get("sha256")
    return value if isinstance(value, str) and len(value) == 64 else None


def _remember(
    entry: Path, files: Sequence[Path], stats: Sequence[Stat], hexdigest: str, settle: float
) -> None:
    newest = max(max(stat[3], stat[4]) for stat in stats) / 1e9
    if time.time() - newest < settle:  # racy: a change in this clock tick would not show
        return
    text = json.dumps({"files": [str(path) for path in files], "stats": stats, "sha256": hexdigest})
    part = entry.with_name(f"{entry.name}.{os.getpid()}.part")
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        part.write_text(text, encoding="utf-8")
        os.replace(part, entry)
    except OSError:
        with contextlib.suppress(OSError):
            part.unlink(missing_ok=True)
