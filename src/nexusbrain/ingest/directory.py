"""Incremental ingest of a folder: unchanged files cost no writes, changed files are re-chunked
(each file's rows replaced inside one transaction; files are written in batches of up to 64),
and files gone from disk are retired from search. Markdown is read as notes
(ingest/documents.py), every other file as its format says (ingest/formats/); a file that
cannot be read is reported with the reason, and the rest ingests."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from nexusbrain.clock import Clock
from nexusbrain.config import ChunkingConfig
from nexusbrain.errors import BrainError, InvalidInput, MissingExtra
from nexusbrain.ingest.documents import Prepared, content_hash, decode_utf8, prepare_markdown
from nexusbrain.ingest.files import FileProblem, chosen, scan
from nexusbrain.ingest.formats import format_of, read_file
from nexusbrain.records import Progress, WriteResult, WriteStatus
from nexusbrain.storage.base import DocumentStore

log = logging.getLogger(__name__)


class FileStatus(StrEnum):
    ADDED = "added"
    UPDATED = "updated"
    RETIRED = "retired"


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file whose document changed: added, updated (re-chunked) or retired (gone)."""

    path: str
    status: FileStatus
    chunks: int = 0  # chunks written


@dataclass(frozen=True, slots=True)
class DirectoryReport:
    root: str
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    chunks: int = 0
    errors: tuple[FileProblem, ...] = field(default_factory=tuple)
    seconds: float = 0.0
    hidden: int = 0  # files and folders skipped because their name begins with "."
    changes: tuple[FileChange, ...] = ()  # every file that was added, updated or retired


@dataclass(slots=True)
class _Tally:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    chunks: int = 0
    problems: list[FileProblem] = field(default_factory=list)
    changes: list[FileChange] = field(default_factory=list)

    def count(self, path: Path, result: WriteResult) -> None:
        if result.status is WriteStatus.DUPLICATE:
            self.unchanged += 1
            return
        self.chunks += result.chunks
        if result.status is WriteStatus.CREATED:
            self.added += 1
            status = FileStatus.ADDED
        else:
            self.updated += 1
            status = FileStatus.UPDATED
        self.changes.append(FileChange(path.as_posix(), status, result.chunks))


WriteBatch = Callable[[Sequence[Prepared]], list[WriteResult]]
Retire = Callable[[Sequence[int]], int]
BATCH_FILES = 64
BATCH_CHARS = 2_000_000


def ingest_directory(
    store: DocumentStore,
    root: str | Path,
    *,
    domain: str,
    chunking: ChunkingConfig,
    max_bytes: int,
    clock: Clock,
    write: WriteBatch,
    retire: Retire,
    progress: Progress | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> DirectoryReport:
    """`write` stores a batch of prepared documents in one transaction; `retire` retires
    documents by id. Both come from the caller, which may add its own work to them. A file
    whose note's graph edges lag its stored revision is written again (a duplicate write,
    which lets `write` bring its edges up to date). With `include` or `exclude` (a source's
    globs, files.chosen), only the files they keep are the folder's: a stored document of
    another is retired."""
    started = clock()
    found = scan(root)
    if include or exclude:
        kept = [p for p in found.files if chosen(_under(p, found.root), include, exclude)]
        found = replace(found, files=tuple(kept))
    prefix = found.root.as_posix().rstrip("/") + "/"
    stored = store.revisions_under(prefix)
    behind = store.edges_behind(prefix)
    known = {uri: revision for uri, revision in stored.items() if uri not in behind}
    tally = _Tally(problems=list(found.problems))
    batch: list[tuple[Path, Prepared]] = []
    for done, path in enumerate(found.files, start=1):
        prepared = _prepare(path, known, tally, domain, chunking, max_bytes)
        if prepared is not None:
            batch.append((path, prepared))
        if batch and (len(batch) >= BATCH_FILES or _chars(batch) >= BATCH_CHARS):
            _flush(batch, write, tally)
        if progress:
            progress("ingesting", done, len(found.files))
    _flush(batch, write, tally)
    seen = {path.as_posix() for path in found.files}
    gone = [uri for uri in stored if uri not in seen]
    ids = [doc.id for uri in gone if (doc := store.find_document(uri)) is not None]
    if ids:
        log.info("retiring %d document(s) whose files are gone", len(ids))
    deleted = retire(ids) if ids else 0
    tally.changes += [FileChange(uri, FileStatus.RETIRED) for uri in gone]
    return DirectoryReport(
        root=str(found.root),
        added=tally.added,
        updated=tally.updated,
        unchanged=tally.unchanged,
        deleted=deleted,
        chunks=tally.chunks,
        errors=tuple(tally.problems),
        seconds=(clock() - started).total_seconds(),
        hidden=found.hidden,
        changes=tuple(tally.changes),
    )


def _prepare(
    path: Path,
    known: Mapping[str, str],
    tally: _Tally,
    domain: str,
    chunking: ChunkingConfig,
    max_bytes: int,
) -> Prepared | None:
    uri = path.as_posix()
    fmt = format_of(path)
    try:
        data = path.read_bytes()
        revision = content_hash(data) if fmt is None else fmt.revision(data)
        if known.get(uri) == revision:
            tally.unchanged += 1
            return None
        if fmt is not None:
            return read_file(
                data, fmt, uri=uri, domain=domain, config=chunking, max_bytes=max_bytes
            )
        text = decode_utf8(data, uri, max_bytes)
        return prepare_markdown(text, uri=uri, domain=domain, config=chunking, revision=revision)
    except InvalidInput as exc:  # its message may begin with the path, already the problem's
        tally.problems.append(FileProblem(uri, exc.message.removeprefix(f"{uri}: ")))
    except MissingExtra as exc:
        label = fmt.label if fmt is not None else path.suffix
        tally.problems.append(
            FileProblem(uri, f"install nexusbrain[{exc.extra}] to read {label} files")
        )
    except OSError as exc:
        tally.problems.append(FileProblem(uri, f"cannot read: {exc.strerror}"))
    return None


def _under(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _chars(batch: list[tuple[Path, Prepared]]) -> int:
    return sum(len(p.draft.content) for _, p in batch)


def _flush(batch: list[tuple[Path, Prepared]], write: WriteBatch, tally: _Tally) -> None:
    """Write the batch in one transaction; if that fails, write file by file so that one bad
    file is reported and the others still land."""
    if not batch:
        return
    try:
        written = list(zip([path for path, _ in batch], write([p for _, p in batch]), strict=True))
    except BrainError:
        written = []
        for path, prepared in batch:
            try:
                written += [(path, result) for result in write([prepared])]
            except BrainError as exc:
                tally.problems.append(FileProblem(path.as_posix(), exc.message))
    for path, result in written:
        tally.count(path, result)
    batch.clear()
