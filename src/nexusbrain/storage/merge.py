"""How an export merges into a brain that already holds data, engine-neutral: what to insert,
replace and retire (`planned`). The format and its validation are storage/exchange.py's; each
engine reads the target and writes the plan through storage/sql/transfer.py.

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nexusbrain.errors import Conflict, InvalidInput
from nexusbrain.records import ImportResult
from nexusbrain.storage.exchange import KINDS

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


@dataclass(slots=True)
class Plan:
    """What to write: records to insert (ids final), documents whose row is replaced, and
    current facts to retire (id, when) because the note that stated them was replaced."""

    inserts: list[dict[str, Any]] = field(default_factory=list)
    replaced: list[dict[str, Any]] = field(default_factory=list)
    retired: list[tuple[int, str]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def count(self, name: str, by: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + by

    def result(self, records: int) -> ImportResult:
        """What carrying out the plan did, for an import of `records` records."""
        fields = (
            *("updated", "unchanged", "kept", "entities", "relationships", "duplicates"),
            *("retired", "kept_facts"),
        )
        return ImportResult(
            documents=self.counts.get("documents", 0),
            chunks=self.counts.get("chunks", 0),
            records=records,
            **{name: self.counts.get(name, 0) for name in fields},
        )


def planned(records: list[dict[str, Any]], target: Target) -> Plan:
    """What to write for `records` (validated, in stream order): into an empty brain, every
    record as it is; into one with data, the merge (`merged`)."""
    if not target.empty:
        return merged(records, target)
    plan = Plan(inserts=records)
    names = {"document": "documents", "chunk": "chunks", "entity": "entities"}
    names["relationship"] = "relationships"
    for record in records:
        if name := names.get(str(record["type"])):
            plan.count(name)
    return plan


def merged(records: Sequence[Mapping[str, Any]], target: Target) -> Plan:
    """How `records` (validated, in stream order) merge into `target`. Raises Conflict,
    listing the conflicts, when they cannot all be kept."""
    return _Merge(target).run(records)


class _Merge:
    def __init__(self, target: Target) -> None:
        self.target = target
        self.plan = Plan()
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

    def run(self, records: Sequence[Mapping[str, Any]]) -> Plan:
        by_kind: dict[str, list[Mapping[str, Any]]] = {kind: [] for kind in KINDS}
        for record in records:
            by_kind[str(record["type"])].append(record)
        for record in by_kind["document"]:
            self._document(record)
        for record in by_kind["revision"]:
            self._revision(record)
        for record in by_kind["chunk"]:
            self._chunk(record)
        for record in by_kind["capture"]:
            self._capture(record)
        for record in by_kind["entity"]:
            self._entity(record)
        for record in by_kind["alias"]:
            self._alias(record)
        self._relationships(by_kind["relationship"])
        self._retire_revised()
        for record in by_kind["statement"]:
            self._statement(record)
        if self.conflicts:
            shown = "; ".join(self.conflicts[:MAX_CONFLICTS_SHOWN])
            more = len(self.conflicts) - MAX_CONFLICTS_SHOWN
            raise Conflict(
                f"import refused, nothing was written: {len(self.conflicts)} conflict(s) with"
                f" what this brain holds: {shown}" + (f" (and {more} more)" if more > 0 else "")
            )
        return self.plan

    def _new_id(self, table: str) -> int:
        value = self.next[table]
        self.next[table] = value + 1
        return value

    def _insert(self, record: Mapping[str, Any], **changes: Any) -> None:
        self.plan.inserts.append({**record, **changes})

    def _document(self, r: Mapping[str, Any]) -> None:
        here = self.target.documents.get(str(r["uri"]))
        if here is None:
            new = self._new_id("document")
            self.documents[int(r["id"])] = new
            self.keep_chunks.add(int(r["id"]))
            self._insert(r, id=new)
            self.plan.count("documents")
            return
        self.documents[int(r["id"])] = here.id
        if r["revision"] == here.revision:
            self.plan.count("unchanged")
        elif str(r["updated_at"]) > here.updated_at:
            self.plan.replaced.append({**r, "id": here.id})
            self.keep_chunks.add(int(r["id"]))
            self.revised[f"document:{here.id}"] = str(r["updated_at"])
            self.plan.count("updated")
        else:
            self.plan.count("kept")  # this brain's version is the newer: the import's is history
            self.kept_sources.add(f"document:{here.id}")

    def _revision(self, r: Mapping[str, Any]) -> None:
        document = self._document_of(r, "revision")
        key = (str(r["revision"]), str(r["event"]), str(r["recorded_at"]))
        if key in self.target.revisions.get(document, set()):
            return
        self._insert(r, document_id=document)
        self.plan.count("revisions")

    def _chunk(self, r: Mapping[str, Any]) -> None:
        document = self._document_of(r, "chunk")
        if int(r["document_id"]) not in self.keep_chunks:
            return  # the document here is kept as it is, with its own chunks
        new = self._new_id("chunk")
        self.chunks[int(r["id"])] = new
        self._insert(r, id=new, document_id=document)
        self.plan.count("chunks")

    def _document_of(self, r: Mapping[str, Any], kind: str) -> int:
        document = self.documents.get(int(r["document_id"]))
        if document is None:
            raise InvalidInput(
                f"import: a {kind} record belongs to document {r['document_id']}, which the"
                " stream does not hold"
            )
        return document

    def _entity_of(self, r: Mapping[str, Any], end: str) -> int:
        entity = self.entities.get(int(r[end]))
        if entity is None:
            raise InvalidInput(
                f"import: a {r['type']} record refers to entity {r[end]}, which the stream"
                " does not hold"
            )
        return entity

    def _capture(self, r: Mapping[str, Any]) -> None:
        results = [self.chunks[c] for c in r["results"] if c in self.chunks]
        self._insert(r, results=results)
        self.plan.count("captures")

    def _entity(self, r: Mapping[str, Any]) -> None:
        self.names[int(r["id"])] = str(r["name"])
        here = self.target.entities.get(str(r["key"]))
        if here is not None:
            self.entities[int(r["id"])] = here
            return
        new = self._new_id("entity")
        self.entities[int(r["id"])] = new
        self._insert(r, id=new)
        self.plan.count("entities")

    def _alias(self, r: Mapping[str, Any]) -> None:
        owner = self.entities.get(int(r["entity_id"]))
        if owner is None:
            raise InvalidInput(
                f"import: alias {r['alias']!r} belongs to entity {r['entity_id']}, which the"
                " stream does not hold"
            )
        here = self.target.entities.get(str(r["key"]))
        if here is None:
            self._insert(r, entity_id=owner)
        elif here != owner:
            self.conflicts.append(
                f"alias {r['alias']!r} names another entity here than in the import"
            )

    def _relationships(self, records: Sequence[Mapping[str, Any]]) -> None:
        chains = _chains(records)
        ids: dict[int, int] = {}
        for chain in chains:
            if not self._keeps(chain):
                continue
            for r in chain:
                ids[int(r["id"])] = self._new_id("relationship")
            for r in chain:
                supersedes = r["supersedes"]
                if supersedes is not None and int(supersedes) not in ids:
                    raise InvalidInput(
                        f"import: relationship {r['id']} supersedes {supersedes}, which the"
                        " stream does not hold"
                    )
                self._insert(
                    r,
                    id=ids[int(r["id"])],
                    from_id=self._entity_of(r, "from_id"),
                    to_id=self._entity_of(r, "to_id"),
                    supersedes=ids[int(supersedes)] if supersedes is not None else None,
                    source=self._source(r["source"]),
                )
            self.plan.count("relationships", len(chain))

    def _keeps(self, chain: Sequence[Mapping[str, Any]]) -> bool:
        """Whether a lineage comes along: False for a duplicate fact, and for one stated by
        a note whose version here is the newer (that note's own facts hold); a conflict is
        noted. A current fact here that a replaced note stated gives way (_retire_revised)."""
        current = next((r for r in chain if r["superseded_at"] is None), None)
        if current is None:
            return True  # history only: it holds nothing now, so it clashes with nothing
        if self._source(current["source"]) in self.kept_sources:
            self.plan.count("kept_facts")
            return False
        head, tail = self._entity_of(current, "from_id"), self._entity_of(current, "to_id")
        kind = str(current["relation"])
        window = (current["valid_at"], current["invalid_at"])
        held = self.current.get((head, kind, tail))
        fact = f"{self._name(current, 'from_id')} {kind} {self._name(current, 'to_id')}"
        if held is not None:
            if held.window == window:
                self.restated.add(held.id)
                self.plan.count("duplicates")
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
                self.plan.retired.append((fact.id, self.revised[fact.source]))
        self.plan.count("retired", len(self.plan.retired))

    def _statement(self, r: Mapping[str, Any]) -> None:
        """A note's statements come with its content: only where the import's version of
        the note is the one kept (a replaced document's own statements are dropped)."""
        document = self._document_of(r, "statement")
        if int(r["document_id"]) in self.keep_chunks:
            self._insert(
                r,
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


def _chains(records: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """Relationship versions grouped by lineage (supersedes links), each oldest first."""
    by_id = {int(r["id"]): r for r in records}
    successor = {int(r["supersedes"]): int(r["id"]) for r in records if r["supersedes"]}
    chains = []
    for r in records:
        if r["supersedes"] is not None and int(r["supersedes"]) in by_id:
            continue  # not a lineage's first version
        chain = [r]
        while int(chain[-1]["id"]) in successor:
            chain.append(by_id[successor[int(chain[-1]["id"])]])
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
