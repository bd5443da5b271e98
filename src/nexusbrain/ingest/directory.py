"""Incremental ingest of a folder: unchanged files cost no writes, changed files are re-chunked
in one transaction each, and files gone from disk are retired from search."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from nexusbrain.clock import Clock
from nexusbrain.errors import InvalidInput
from nexusbrain.ingest.chunking import ChunkingConfig
from nexusbrain.ingest.documents import content_hash, decode_utf8, prepare_markdown
from nexusbrain.ingest.files import FileProblem, scan
from nexusbrain.records import WriteStatus
from nexusbrain.storage import Store

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]


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


@dataclass(slots=True)
class _Tally:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    chunks: int = 0


def ingest_directory(
    store: Store,
    root: str | Path,
    *,
    domain: str,
    chunking: ChunkingConfig,
    max_bytes: int,
    clock: Clock,
    progress: Progress | None = None,
) -> DirectoryReport:
    started = clock()
    found = scan(root)
    prefix = found.root.as_posix().rstrip("/") + "/"
    known = store.revisions_under(prefix)
    tally = _Tally()
    problems = list(found.problems)
    for done, path in enumerate(found.files, start=1):
        try:
            _ingest_file(store, path, known, tally, domain, chunking, max_bytes, clock())
        except InvalidInput as exc:
            problems.append(FileProblem(str(path), exc.message))
        except OSError as exc:
            problems.append(FileProblem(str(path), f"cannot read: {exc.strerror}"))
        if progress:
            progress(done, len(found.files))
    seen = {path.as_posix() for path in found.files}
    deleted = _retire_missing(store, known, seen, clock())
    return DirectoryReport(
        root=str(found.root),
        added=tally.added,
        updated=tally.updated,
        unchanged=tally.unchanged,
        deleted=deleted,
        chunks=tally.chunks,
        errors=tuple(problems),
        seconds=(clock() - started).total_seconds(),
    )


def _ingest_file(
    store: Store,
    path: Path,
    known: Mapping[str, str],
    tally: _Tally,
    domain: str,
    chunking: ChunkingConfig,
    max_bytes: int,
    now: datetime,
) -> None:
    uri = path.as_posix()
    data = path.read_bytes()
    revision = content_hash(data)
    if known.get(uri) == revision:
        tally.unchanged += 1
        return
    text = decode_utf8(data, uri, max_bytes)
    prepared = prepare_markdown(text, uri=uri, domain=domain, config=chunking, revision=revision)
    result = store.write_document(prepared.draft, prepared.chunks, now)
    if result.status is WriteStatus.DUPLICATE:
        tally.unchanged += 1
        return
    tally.chunks += result.chunks
    if result.status is WriteStatus.CREATED:
        tally.added += 1
    else:
        tally.updated += 1


def _retire_missing(store: Store, known: Mapping[str, str], seen: set[str], now: datetime) -> int:
    gone = [uri for uri in known if uri not in seen]
    ids = [doc.id for uri in gone if (doc := store.find_document(uri)) is not None]
    if ids:
        log.info("retiring %d document(s) whose files are gone", len(ids))
    return store.retire_documents(ids, now) if ids else 0
