"""Sources: named folders the brain keeps in sync (`nexusbrain sources ...`, `brain.sources`).

A source is a folder, the globs that choose its files, and the domain they are filed under.
Its documents are the live documents under its root that its globs keep, so adding, syncing
and removing one need nothing beyond what `ingest-dir` does: a sync is `ingest-dir` with the
globs, and removing a source retires its documents (their rows and history are kept). Roots
may not nest, so that each file belongs to one source at most."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from nexusbrain.brain.writes import Writer
from nexusbrain.clock import Clock
from nexusbrain.errors import Conflict, InvalidInput, NotFound
from nexusbrain.ingest.directory import DirectoryReport
from nexusbrain.ingest.files import FileProblem, chosen, resolve_root
from nexusbrain.records import MAX_ID, ListedDocument, Progress, Source, SourceStatus
from nexusbrain.storage.base import DocumentStore, SourceStore

MAX_NAME = 100
_GONE = (
    "the folder is missing: its documents stay until it is back, or `sources remove` retires them"
)


class Sources:
    """The sources of one brain. Thread-safe as the store is."""

    def __init__(
        self, sources: SourceStore, documents: DocumentStore, writer: Writer, clock: Clock
    ) -> None:
        self._sources = sources
        self._documents = documents
        self._writer = writer
        self._clock = clock

    def add(
        self,
        root: str | Path,
        *,
        name: str | None = None,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        domain: str | None = None,
        progress: Progress | None = None,
    ) -> tuple[SourceStatus, DirectoryReport]:
        """Add the folder as a source named `name` (by default the folder's name) and sync it.
        Raises NotFound or InvalidInput for a root that is not a folder, InvalidInput for a
        bad name or glob, Conflict for a name taken or a root that nests with another's."""
        folder = resolve_root(root)
        name = folder.name if name is None else name
        self._register(Source(name, folder.as_posix(), tuple(include), tuple(exclude), domain))
        report = self.sync(name, progress=progress)
        return self.status(self._get(name)), report

    def _register(self, source: Source) -> None:
        _check_name(source.name)
        for glob in (*source.include, *source.exclude):
            if not glob.strip():
                raise InvalidInput("an --include or --exclude glob is empty: give a pattern")
        folder = Path(source.root)
        for other in self._sources.sources():
            held = Path(other.root)
            if folder in held.parents or held in folder.parents:
                raise Conflict(
                    f"{folder} and the source {other.name!r} ({held}) nest: a file may belong"
                    f" to one source only; add the outer folder with --exclude, or remove"
                    f" {other.name!r} first"
                )
        self._sources.add_source(source, self._clock())

    def keep(self, root: str | Path) -> Source:
        """The source of this folder, added (named after it, with -2, -3... when the name is
        taken) if there is none, and synced when the watch of it begins: what
        `serve --watch DIR` asks for."""
        folder = resolve_root(root).as_posix()
        held = self._sources.sources()
        for source in held:
            if source.root == folder:
                return source
        names = {source.name for source in held}
        base = Path(folder).name or "root"
        name = next(n for n in (base, *(f"{base}-{i}" for i in range(2, 1000))) if n not in names)
        self._register(Source(name, folder))
        return self._get(name)

    def all(self) -> list[SourceStatus]:
        """Every source by name, with its files and chunks now."""
        return [self.status(source) for source in self._sources.sources()]

    def show(self, name: str) -> SourceStatus:
        """The source named `name`, with its files and chunks now. Raises NotFound for an
        unknown source."""
        return self.status(self._get(name))

    def status(self, source: Source) -> SourceStatus:
        found = self._live(source)
        return SourceStatus(source, len(found), sum(d.chunks for d in found))

    def sync(self, name: str, *, progress: Progress | None = None) -> DirectoryReport:
        """Bring the store in line with the source's folder, as `ingest-dir` does, and record
        when and what it could not read. A folder that is missing is that sync's one error,
        and nothing is retired. Raises NotFound for an unknown source."""
        source = self._get(name)
        if Path(source.root).is_dir():
            report = self._writer.directory(
                source.root,
                domain=source.domain,
                progress=progress,
                include=source.include,
                exclude=source.exclude,
            )
        else:  # an unmounted disk, a folder moved: nothing is retired until it is back
            gone = FileProblem(source.root, _GONE)
            report = DirectoryReport(root=source.root, errors=(gone,))
        problems = [(p.path, p.reason) for p in report.errors]
        self._sources.record_sync(name, self._clock(), problems)
        return report

    def update(
        self, name: str | None = None, *, progress: Progress | None = None
    ) -> list[tuple[SourceStatus, DirectoryReport]]:
        """Sync one source, or every one. Raises NotFound for an unknown source."""
        names = [name] if name is not None else [s.name for s in self._sources.sources()]
        synced = []
        for each in names:
            report = self.sync(each, progress=progress)
            synced.append((self.status(self._get(each)), report))
        return synced

    def remove(self, name: str) -> tuple[Source, int]:
        """Stop keeping the source: its row goes first (a watch's next sync of it then finds
        nothing to sync), then its documents are retired. Returns it and how many were
        retired. Raises NotFound for an unknown source."""
        source = self._get(name)
        self._sources.remove_source(name)
        ids = [d.id for d in self._live(source)]
        return source, self._writer.retire(ids) if ids else 0

    def watch(self, *, on_sync: Callable[[DirectoryReport], None], stop: threading.Event) -> None:
        """Keep every source in sync while its files change, until `stop` is set: each is
        synced when the watch of it begins and after each burst of changes; a source added
        or removed meanwhile, by any process, is followed or let go within a second
        (ingest/watch.py)."""
        from nexusbrain.ingest.watch import follow_sources  # watchfiles, only when watching

        def listed() -> dict[str, str]:
            return {source.name: source.root for source in self._sources.sources()}

        follow_sources(listed, self.sync, on_sync, stop=stop)

    def _get(self, name: str) -> Source:
        found = self._sources.source(name)
        if found is None:
            raise NotFound(f"no source named {name!r}: `nexusbrain sources list` names them")
        return found

    def _live(self, source: Source) -> list[ListedDocument]:
        """The source's live documents: those under its root that its globs keep."""
        prefix = source.root.rstrip("/") + "/"
        found = self._documents.list_documents(prefix, MAX_ID)[1]
        if not (source.include or source.exclude):
            return found
        return [
            d for d in found if chosen(d.uri.removeprefix(prefix), source.include, source.exclude)
        ]


def _check_name(name: str) -> None:
    if not name.strip() or len(name) > MAX_NAME or "/" in name or name != name.strip():
        raise InvalidInput(
            f"source name {name!r} must be 1 to {MAX_NAME} characters, without a / or spaces"
            " around it: give another with --name"
        )
