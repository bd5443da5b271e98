"""Finding the files of a folder to ingest, safely (no I/O beyond listing and stat)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from nexusbrain.errors import InvalidInput, NotFound
from nexusbrain.ingest.formats import SUFFIXES

# Folders of other people's code that a project keeps beside its own: never one's notes, and
# thousands of source files now that source code is a format. A folder holding pyvenv.cfg
# (a Python virtual environment) is skipped too.
VENDORED = frozenset({"node_modules"})


@dataclass(frozen=True, slots=True)
class FileProblem:
    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class Scan:
    root: Path
    files: tuple[Path, ...]
    problems: tuple[FileProblem, ...]
    hidden: int = 0  # files and folders skipped because their name begins with "."


def resolve_root(root: str | Path) -> Path:
    path = Path(root).expanduser()
    if not path.exists():
        raise NotFound(f"{root}: no such folder")
    if not path.is_dir():
        raise InvalidInput(f"{root}: is not a folder (ingest-dir takes a folder of notes)")
    return path.resolve()


def scan(root: str | Path) -> Scan:
    """Every file under `root` with a suffix ingest reads (formats.SUFFIXES), sorted;
    hidden entries and vendored folders (VENDORED, virtual environments) skipped.

    Symbolic links are followed only while they stay inside the root; a link that leads
    outside it, or back into a folder already being walked (a loop), is reported as a
    problem, not followed."""
    base = resolve_root(root)
    files: list[Path] = []
    problems: list[FileProblem] = []
    hidden = 0
    stack: list[_Folder] = [_Folder(base, base, frozenset({base}))]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder.path), key=lambda e: e.name, reverse=True)
        except OSError as exc:
            problems.append(FileProblem(str(folder.path), f"cannot list folder: {exc.strerror}"))
            continue
        for entry in entries:
            if entry.name.startswith("."):
                hidden += 1
                continue
            if not _utf8(entry.path):
                if entry.is_dir() or _wanted(entry.name):
                    problems.append(FileProblem(_shown(entry.path), _NOT_UTF8))
                continue
            if entry.is_symlink():
                _follow(Path(entry.path), base, folder.ancestors, stack, files, problems)
            elif entry.is_dir(follow_symlinks=False):
                if _vendored(entry.path):
                    continue
                real = folder.real / entry.name
                stack.append(_Folder(Path(entry.path), real, folder.ancestors | {real}))
            elif entry.is_file(follow_symlinks=False) and _wanted(entry.name):
                files.append(Path(entry.path))
    return Scan(base, tuple(sorted(files)), tuple(problems), hidden)


def chosen(relative: str, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> bool:
    """Whether a source's globs keep the file at `relative` (its path under the root, with
    /): one of `include` matches it (or there are none) and none of `exclude` does. A glob
    without a / matches the file's name at any depth ("*.md"); one with a / matches the path
    from the root, its * crossing folders ("drafts/*": everything under drafts/)."""

    def matches(glob: str) -> bool:
        target = relative if "/" in glob else PurePosixPath(relative).name
        return fnmatchcase(target, glob.strip("/") if "/" in glob else glob)

    return (not include or any(map(matches, include))) and not any(map(matches, exclude))


@dataclass(frozen=True, slots=True)
class _Folder:
    """A folder to list: its path under the root as walked, its real path (which stays under
    the root), and the real paths of the folders above it (to spot symlink loops)."""

    path: Path
    real: Path
    ancestors: frozenset[Path]


_NOT_UTF8 = "its name is not valid UTF-8 (a uri must be text): rename it"


def _utf8(path: str) -> bool:
    """False for a name the file system gave as bytes that are not UTF-8 (Python keeps them
    as lone surrogates, which cannot be stored or printed)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(path: str) -> str:
    """A path as text that can be printed: bytes that are not UTF-8 shown as \\xNN."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _vendored(path: str) -> bool:
    return os.path.basename(path) in VENDORED or os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def _wanted(name: str) -> bool:
    return os.path.splitext(name)[1].lower() in SUFFIXES


def _follow(
    path: Path,
    base: Path,
    ancestors: frozenset[Path],
    stack: list[_Folder],
    files: list[Path],
    problems: list[FileProblem],
) -> None:
    """A symbolic link: followed only while it stays inside the root and is not a loop.
    (Entries that are not links need no resolving: their real path is their folder's.)"""
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        problems.append(FileProblem(str(path), _link_error(exc)))
        return
    if real != base and base not in real.parents:
        problems.append(FileProblem(str(path), f"links outside the root {base} (to {real})"))
        return
    if real.is_dir():
        if _vendored(str(real)):
            return
        if real in ancestors:
            problems.append(FileProblem(str(path), f"symlink loop (back to {real})"))
        else:
            stack.append(_Folder(path, real, ancestors | {real}))
    elif real.is_file() and _wanted(path.name):
        files.append(path)


def _link_error(exc: BaseException) -> str:
    if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == 40:
        return "symlink loop"
    if isinstance(exc, FileNotFoundError):
        return "broken symlink (its target does not exist)"
    return f"cannot read: {exc}"
