"""How an export merges into a brain that already holds data, engine-neutral: what to insert,
replace and retire, written through a Sink as the staged records are read (`imported`). The
format, its validation and staging are storage/exchange.py's; each engine reads the target
and is the Sink, in storage/sql/transfer.py.

Into an empty brain, import restores every id, so exporting the result gives back the same
bytes. Into a brain with data, it merges, and never drops a record without saying so:
- a document is matched by its uri: the same revision is the same document; otherwise the one
  updated last is kept as the document's content, and both histories of revisions are kept;
- an entity is matched by its key or an alias's key;
- a relationship's whole lineage comes along, its ends and its note source remapped; a fact
  the brain already holds as current, with the same window, is a duplicate; one it holds with
  another window, or a functional fact that would hold two values at once, is a conflict;
- every other record gets a new id past the brain's own.
Conflicts refuse the whole import, listed in the error; nothing is then written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from nexusbrain.errors import Conflict, InvalidInput
from nexusbrain.records import ImportResult
from nexusbrain.storage.exchange import KINDS, Staged

MAX_CONFLICTS_SHOWN = 10


@dataclass(frozen=True, slots=True)
class TargetDocument:
    id: int
    revision: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class HeldFact:
    """A current relationship version of the target."""

    id: int
    from_id: int
    relation: str
    to_id: int
    valid_at: str | None
    invalid_at: str | None
    source: str | None
    to_name: str

    @property
    def window(self) -> tuple[str | None, str | None]:
        return (self.valid_at, self.invalid_at)


@dataclass(frozen=True, slots=True)
class Target:
    """What a merge needs to know of the brain it merges into."""

    documents: Mapping[str, TargetDocument]  # by uri
    revisions: Mapping[int, set[tuple[str, str, str]]]  # document id -> (revision, event, at)
    entities: Mapping[str, int]  # entity key or alias key -> entity id
    current: Sequence[HeldFact]
    next_ids: Mapping[str, int]  # "document", "chunk", "entity", "relationship": first free id
    functional: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return not self.documents and not self.entities and not self.current


class Sink(Protocol):
    """Where an import's records go, in the order they must be written: a document the
    import replaces before its chunks come, facts retired before those that replace them."""

    def insert(self, record: Mapping[str, Any], line: int) -> None:
        """A record to insert as it is, ids final; `line`: its place in the stream."""
        ...

    def replace(self, record: Mapping[str, Any]) -> None:
        """A document here that takes the import's row (its id is this brain's)."""
        ...

    def retire(self, relationship_id: int, at: str) -> None:
        """A current fact here that an updated note no longer states."""
        ...


_FIELDS = (
    *("updated", "unchanged", "kept", "entities", "relationships", "duplicates"),
    *("retired", "kept_facts"),
)


def _result(counts: Mapping[str, int], records: int) -> ImportResult:
    """What an import of `records` records did, from its counts."""
    return ImportResult(
        documents=counts.get("documents", 0),
        chunks=counts.get("chunks", 0),
        records=records,
        **{name: counts.get(name, 0) for name in _FIELDS},
    )


def imported(stage: Staged, target: Target, sink: Sink) -> ImportResult:
    """Write the validated records of `stage` through `sink`: into an empty brain each as it
    is, kind by kind in the export's order; into one with data, merged. Raises Conflict,
    listing the conflicts, once every record has been looked at, if they cannot all be kept:
    the caller's transaction then writes nothing. Only ids and the lineage of facts are held
    in memory, not the records."""
    if not target.empty:
        return _Merge(target, sink).run(stage)
    counts: dict[str, int] = {}
    names = {"document": "documents", "chunk": "chunks", "entity": "entities"}
    names["relationship"] = "relationships"
    for kind in KINDS:
        for line, _, record in stage.read(kind):
            sink.insert(record, line)
        if kind in names:
            counts[names[kind]] = stage.counts.get(kind, 0)
    return _result(counts, stage.records)


class _Merge:
    def __init__(self, target: Target, sink: Sink) -> None:
        self.target = target
        self.sink = sink
        self.counts: dict[str, int] = {}
        self.next = dict(target.next_ids)
        self.documents: dict[int, int] = {}  # imported id -> id here
        self.chunks: dict[int, int] = {}
        self.entities: dict[int, int] = {}
        self.keep_chunks: set[int] = set()  # imported documents whose chunks come along
        self.conflicts: list[str] = []
        self.names: dict[int, str] = {}
        self.current = {(f.from_id, f.relation, f.to_id): f for f in target.current}
        self.current_of: dict[tuple[int, str], list[HeldFact]] = {}
        for fact in target.current:
            self.current_of.setdefault((fact.from_id, fact.relation), []).append(fact)
        self.revised: dict[str, str] = {}  # note source replaced here -> when
        self.restated: set[int] = set()  # held facts of a replaced note that the import states
        self.kept_sources: set[str] = set()  # notes whose version here is the newer

    def run(self, stage: Staged) -> ImportResult:
        steps: tuple[tuple[str, Callable[[Mapping[str, Any], int], None]], ...] = (
            ("document", self._document),
            ("revision", self._revision),
            ("chunk", self._chunk),
            ("capture", self._capture),
            ("entity", self._entity),
            ("alias", self._alias),
        )
        for kind, step in steps:
            for line, _, record in stage.read(kind):
                step(record, line)
        self._relationships(stage)
        for line, _, record in stage.read("statement"):
            self._statement(record, line)
        if self.conflicts:
            shown = "; ".join(self.conflicts[:MAX_CONFLICTS_SHOWN])
            more = len(self.conflicts) - MAX_CONFLICTS_SHOWN
            raise Conflict(
                f"import refused, nothing was written: {len(self.conflicts)} conflict(s) with"
                f" what this brain holds: {shown}" + (f" (and {more} more)" if more > 0 else "")
            )
        return _result(self.counts, stage.records)

    def count(self, name: str, by: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + by

    def _new_id(self, table: str) -> int:
        value = self.next[table]
        self.next[table] = value + 1
        return value

    def _insert(self, record: Mapping[str, Any], line: int, **changes: Any) -> None:
        self.sink.insert({**record, **changes}, line)

    def _document(self, r: Mapping[str, Any], line: int) -> None:
        here = self.target.documents.get(str(r["uri"]))
        if here is None:
            new = self._new_id("document")
            self.documents[int(r["id"])] = new
            self.keep_chunks.add(int(r["id"]))
            self._insert(r, line, id=new)
            self.count("documents")
            return
        self.documents[int(r["id"])] = here.id
        if r["revision"] == here.revision:
            self.count("unchanged")
        elif str(r["updated_at"]) > here.updated_at:
            self.sink.replace({**r, "id": here.id})
            self.keep_chunks.add(int(r["id"]))
            self.revised[f"document:{here.id}"] = str(r["updated_at"])
            self.count("updated")
        else:
            self.count("kept")  # this brain's version is the newer: the import's is history
            self.kept_sources.add(f"document:{here.id}")

    def _revision(self, r: Mapping[str, Any], line: int) -> None:
        document = self._document_of(r, "revision")
        key = (str(r["revision"]), str(r["event"]), str(r["recorded_at"]))
        if key in self.target.revisions.get(document, set()):
            return
        self._insert(r, line, document_id=document)
        self.count("revisions")

    def _chunk(self, r: Mapping[str, Any], line: int) -> None:
        document = self._document_of(r, "chunk")
        if int(r["document_id"]) not in self.keep_chunks:
            return  # the document here is kept as it is, with its own chunks
        new = self._new_id("chunk")
        self.chunks[int(r["id"])] = new
        self._insert(r, line, id=new, document_id=document)
        self.count("chunks")

    def _document_of(self, r: Mapping[str, Any], kind: str) -> int:
        wanted = r["document_id"]
        return _held(self.documents, wanted, f"a {kind} record belongs to document {wanted}")

    def _entity_of(self, r: Mapping[str, Any], end: str) -> int:
        return _held(self.entities, r[end], f"a {r['type']} record refers to entity {r[end]}")

    def _capture(self, r: Mapping[str, Any], line: int) -> None:
        results = [self.chunks[c] for c in r["results"] if c in self.chunks]
        self._insert(r, line, results=results)
        self.count("captures")

    def _entity(self, r: Mapping[str, Any], line: int) -> None:
        self.names[int(r["id"])] = str(r["name"])
        here = self.target.entities.get(str(r["key"]))
        if here is not None:
            self.entities[int(r["id"])] = here
            return
        new = self._new_id("entity")
        self.entities[int(r["id"])] = new
        self._insert(r, line, id=new)
        self.count("entities")

    def _alias(self, r: Mapping[str, Any], line: int) -> None:
        wanted = r["entity_id"]
        owner = _held(self.entities, wanted, f"alias {r['alias']!r} belongs to entity {wanted}")
        here = self.target.entities.get(str(r["key"]))
        if here is None:
            self._insert(r, line, entity_id=owner)
        elif here != owner:
            self.conflicts.append(
                f"alias {r['alias']!r} names another entity here than in the import"
            )

    def _relationships(self, stage: Staged) -> None:
        """Whole lineages: which come along (_keeps), then the facts here that give way, then
        the lineages written, each oldest first with new ids. Only each version's place in
        the spool and its link are held; records are read back as needed."""
        places: dict[int, int] = {}  # id -> offset in the stage
        links: dict[int, int | None] = {}  # id -> the id it supersedes
        order: list[int] = []
        for _, offset, r in stage.read("relationship"):
            places[int(r["id"])] = offset
            links[int(r["id"])] = None if r["supersedes"] is None else int(r["supersedes"])
            order.append(int(r["id"]))
        kept = []
        for chain in _chains(order, links):
            versions = [stage.at("relationship", places[i]) for i in chain]
            if self._keeps([r for _, r in versions]):
                kept.append(chain)
        self._retire_revised()
        ids: dict[int, int] = {}
        for chain in kept:
            for i in chain:
                ids[i] = self._new_id("relationship")
        for chain in kept:
            for i in chain:
                line, r = stage.at("relationship", places[i])
                supersedes = r["supersedes"]
                if supersedes is not None:
                    what = f"relationship {r['id']} supersedes {supersedes}"
                    supersedes = _held(ids, supersedes, what)
                self._insert(
                    r,
                    line,
                    id=ids[i],
                    from_id=self._entity_of(r, "from_id"),
                    to_id=self._entity_of(r, "to_id"),
                    supersedes=supersedes,
                    source=self._source(r["source"]),
                )
            self.count("relationships", len(chain))

    def _keeps(self, chain: Sequence[Mapping[str, Any]]) -> bool:
        """Whether a lineage comes along: False for a duplicate fact, and for one stated by
        a note whose version here is the newer (that note's own facts hold); a conflict is
        noted. A current fact here that a replaced note stated gives way (_retire_revised)."""
        current = next((r for r in chain if r["superseded_at"] is None), None)
        if current is None:
            return True  # history only: it holds nothing now, so it clashes with nothing
        if self._source(current["source"]) in self.kept_sources:
            self.count("kept_facts")
            return False
        head, tail = self._entity_of(current, "from_id"), self._entity_of(current, "to_id")
        kind = str(current["relation"])
        window = (current["valid_at"], current["invalid_at"])
        held = self.current.get((head, kind, tail))
        fact = f"{self._name(current, 'from_id')} {kind} {self._name(current, 'to_id')}"
        if held is not None:
            if held.window == window:
                self.restated.add(held.id)
                self.count("duplicates")
                return False
            if held.source not in self.revised:
                self.conflicts.append(
                    f"{fact} holds here {_span(*held.window)}, in the import {_span(*window)}"
                )
                return False
        if kind in self.target.functional:
            for other in self.current_of.get((head, kind), []):
                if other.source in self.revised or other.to_id == tail:
                    continue
                if _overlap(other.window, window):
                    self.conflicts.append(
                        f"{fact} {_span(*window)}: {kind} holds one value at a time, and here"
                        f" it is {other.to_name} {_span(*other.window)}"
                    )
                    return False
        return True

    def _retire_revised(self) -> None:
        """The facts a replaced note stated here give way to the import's version of it."""
        for fact in self.target.current:
            if fact.source in self.revised and fact.id not in self.restated:
                self.sink.retire(fact.id, self.revised[fact.source])
                self.count("retired")

    def _statement(self, r: Mapping[str, Any], line: int) -> None:
        """A note's statements come with its content: only where the import's version of
        the note is the one kept (a replaced document's own statements are dropped)."""
        document = self._document_of(r, "statement")
        if int(r["document_id"]) in self.keep_chunks:
            self._insert(
                r,
                line,
                document_id=document,
                from_id=self._entity_of(r, "from_id"),
                to_id=self._entity_of(r, "to_id"),
            )

    def _name(self, r: Mapping[str, Any], end: str) -> str:
        return self.names.get(int(r[end]), f"entity {r[end]}")

    def _source(self, source: str | None) -> str | None:
        """A note's source `document:N` follows its document to its id here."""
        if source is None or not source.startswith("document:"):
            return source
        tail = source.removeprefix("document:")
        if tail.isdigit() and int(tail) in self.documents:
            return f"document:{self.documents[int(tail)]}"
        return source


def _held(ids: Mapping[int, int], wanted: Any, what: str) -> int:
    """The id here of `wanted`, an id in the stream that `what` (a record) points at."""
    found = ids.get(int(wanted))
    if found is None:
        raise InvalidInput(f"import: {what}, which the stream does not hold")
    return found


def _chains(order: Sequence[int], links: Mapping[int, int | None]) -> list[list[int]]:
    """Relationship versions (ids in stream order, with the id each supersedes) grouped by
    lineage, each oldest first."""
    successor = {old: new for new, old in links.items() if old is not None}
    chains = []
    for version in order:
        old = links[version]
        if old is not None and old in links:
            continue  # not a lineage's first version
        chain = [version]
        while chain[-1] in successor:
            chain.append(successor[chain[-1]])
        chains.append(chain)
    return chains


def _span(start: str | None, end: str | None) -> str:
    """A window as a person reads it: whole days as dates, an open end as such."""

    def shown(stamp: str) -> str:
        return stamp.removesuffix("T00:00:00.000000+00:00")

    since = f"from {shown(start)}" if start else "since always"
    return f"{since} until {shown(end)}" if end else f"{since}, open-ended"


def _overlap(a: tuple[str | None, str | None], b: tuple[str | None, str | None]) -> bool:
    start = max(a[0] or "", b[0] or "")
    ends = [end for end in (a[1], b[1]) if end is not None]
    return not ends or start < min(ends)
