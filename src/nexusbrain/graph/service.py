"""The knowledge graph's library API: `brain.graph` is a `Graph`, the graph's façade. A note's
own edges are kept in step with it by `sync_note` and `retract_notes`, in the transaction that
writes the note (Brain does that).

Every write request takes one timestamp from the clock, once, and runs in one transaction, so
a retired version's superseded_at equals its successor's created_at exactly. The decisions
come from the pure rules in `graph.rules`; this module only reads state and applies them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import datetime

from nexusbrain.clock import Clock
from nexusbrain.config import GraphConfig
from nexusbrain.errors import Conflict, InvalidInput, NotFound
from nexusbrain.graph.model import (
    CURRENT,
    AsOf,
    Entity,
    EntityInput,
    EntityOutcome,
    GraphFact,
    History,
    Hop,
    IngestResult,
    Relationship,
    RelationshipInput,
    RelationshipOutcome,
    Retirement,
    RetireReason,
    Traversal,
    describe,
)
from nexusbrain.graph.names import display_name, entity_key, mention_keys, relationship_type
from nexusbrain.graph.rules import (
    TripleChange,
    Window,
    checked_window,
    contradiction_cut,
    triple_change,
    window_of,
)
from nexusbrain.records import Hit, RelationshipDraft, Statement, WriteStatus
from nexusbrain.storage.graph_base import GraphSession, GraphStore


def note_source(document_id: int) -> str:
    """The source of the edges a note states."""
    return f"document:{document_id}"


def sync_note(
    session: GraphSession,
    config: GraphConfig,
    document_id: int,
    edges: Sequence[RelationshipInput],
    now: datetime,
) -> tuple[RelationshipOutcome, ...]:
    """Bring a note's edges in line with its new revision, inside the caller's transaction
    (the one that writes the note): edges it no longer states are retired (source_revised),
    unless another note states them too, which then becomes their source; the rest are
    ingested with the note as their source."""
    source = note_source(document_id)
    writer = _Writer(session, config, now)
    wanted = {writer.triple(edge) for edge in edges}
    dropped = []
    for old in session.current_from_source(source):
        if (old.from_id, old.type, old.to_id) not in wanted:
            session.retire(old.id, RetireReason.SOURCE_REVISED, now)
            dropped.append(old)
    outcomes = tuple(writer.relate(replace(edge, source=source)) for edge in edges)
    session.set_statements(document_id, [_statement(document_id, o.relationship) for o in outcomes])
    _handed_on(session, writer, dropped, document_id)
    return outcomes


def retract_notes(
    session: GraphSession, config: GraphConfig, document_ids: Sequence[int], now: datetime
) -> int:
    """Retire (retracted) every current edge that deleted notes stated, inside the caller's
    transaction (the one that retires them), unless another note states it too, which then
    becomes its source. Returns how many were retired."""
    writer = _Writer(session, config, now)
    retired = 0
    for document_id in document_ids:
        dropped = session.current_from_source(note_source(document_id))
        for old in dropped:
            session.retire(old.id, RetireReason.RETRACTED, now)
            retired += 1
        session.set_statements(document_id, [])
        _handed_on(session, writer, dropped, document_id)
    return retired


def _statement(document_id: int, edge: Relationship) -> Statement:
    return Statement(
        document_id, edge.from_id, edge.type, edge.to_id, edge.valid_at, edge.invalid_at
    )


def _handed_on(
    session: GraphSession, writer: _Writer, dropped: Sequence[Relationship], document_id: int
) -> None:
    """Each dropped edge that another note still states gets a successor version with that
    note (the lowest id) as its source and its window."""
    for old in dropped:
        others = session.stating(old.from_id, old.type, old.to_id, besides=document_id)
        if others:
            heir = others[0]
            item = RelationshipInput(
                old.from_name,
                old.type,
                old.to_name,
                heir.valid_at,
                heir.invalid_at,
                note_source(heir.document_id),
            )
            writer.relate(item, after=old)


class Graph:
    """Entities and bitemporal relationships over a `GraphStore`."""

    def __init__(self, store: GraphStore, config: GraphConfig, clock: Clock) -> None:
        self._store = store
        self.config = config
        self.clock = clock

    # writes

    def ingest(
        self,
        entities: Sequence[EntityInput] = (),
        relationships: Sequence[RelationshipInput] = (),
        *,
        dry_run: bool = False,
    ) -> IngestResult:
        """Add entities and relationships. With dry_run, report what would change and roll
        it all back: ids the request would create are reported as None."""
        now = self.clock()
        with self._store.session(commit=not dry_run) as session:
            writer = _Writer(session, self.config, now)
            named = [writer.entity(item) for item in entities]
            edges = [writer.relate(item) for item in relationships]
        result = IngestResult(now, dry_run, (*named, *writer.endpoints), tuple(edges))
        return _unsaved(result, writer.created) if dry_run else result

    def relate(
        self,
        from_name: str,
        type: str,
        to_name: str,
        *,
        valid_at: datetime | None = None,
        invalid_at: datetime | None = None,
        source: str | None = None,
        dry_run: bool = False,
    ) -> RelationshipOutcome:
        """One relationship: `graph.relate("alice", "manages", "bob", valid_at=...)`."""
        item = RelationshipInput(from_name, type, to_name, valid_at, invalid_at, source)
        return self.ingest(relationships=[item], dry_run=dry_run).relationships[0]

    # reads

    def entity(self, name: str) -> Entity:
        found = self._store.find_entity(entity_key(name))
        if found is None:
            raise NotFound(f"no entity named {name!r}")
        return found

    def relations(
        self,
        from_name: str | None = None,
        *,
        to_name: str | None = None,
        type: str | None = None,
        as_of: AsOf = CURRENT,
    ) -> list[Relationship]:
        """Relationships of an entity: current ones, or those of `as_of`."""
        if from_name is None and to_name is None:
            raise InvalidInput("give from (or to): the entity whose relations to list")
        with self._store.snapshot():
            return self._store.relations(
                from_ids=[self.entity(from_name).id] if from_name is not None else None,
                to_ids=[self.entity(to_name).id] if to_name is not None else None,
                type=relationship_type(type) if type else None,
                valid=as_of.valid,
                known=as_of.known,
            )

    def history(self, relationship_id: int) -> History:
        """Every version of the relationship's lineage, oldest first, from any version's id."""
        versions = tuple(self._store.lineage(relationship_id))
        if not versions:
            raise NotFound(f"no relationship with id {relationship_id}")
        current = next((v for v in versions if v.current), None)
        return History(relationship_id, versions, current)

    def traverse(self, start: str, depth: int = 1, *, as_of: AsOf = CURRENT) -> Traversal:
        """Paths of up to `depth` outgoing edges from `start`, over current edges (or those of
        `as_of`), keeping a path only while all its edges hold at one time."""
        if not 1 <= depth <= self.config.max_depth:
            raise InvalidInput(f"depth={depth} must be between 1 and {self.config.max_depth}")
        with self._store.snapshot():
            entity = self.entity(start)
            hops, truncated = self._walk(entity, depth, as_of)
        return Traversal(entity, depth, as_of, tuple(hops), truncated)

    def _walk(self, start: Entity, depth: int, as_of: AsOf) -> tuple[list[Hop], bool]:
        frontier = [_Path((start.id,), (), Window())]
        hops: list[Hop] = []
        for level in range(1, depth + 1):
            ends = sorted({path.end for path in frontier})
            out: dict[int, list[Relationship]] = {}
            for edge in self._store.relations(from_ids=ends, valid=as_of.valid, known=as_of.known):
                out.setdefault(edge.from_id, []).append(edge)
            frontier = [nxt for path in frontier for nxt in path.extend(out.get(path.end, ()))]
            for path in frontier:
                if len(hops) == self.config.max_paths:
                    return hops, True
                hops.append(Hop(level, path.edges, path.window.start, path.window.end))
        return hops, False

    def context(self, hits: Sequence[Hit]) -> list[GraphFact]:
        """For the entities named in the top hits (titles and text), their current
        relationships as text, entities in order of mention, each relationship once."""
        named: dict[int, tuple[Entity, int]] = {}
        for hit in hits[: self.config.context_hits]:
            keys = [*mention_keys(hit.title, max_words=16), *mention_keys(hit.text)]
            found = self._store.entities_named(keys)
            for entity in (found[key] for key in keys if key in found):
                named.setdefault(entity.id, (entity, hit.rank))
        facts: list[GraphFact] = []
        seen: set[int] = set()
        with self._store.snapshot():
            for entity, rank in list(named.values())[: self.config.context_entities]:
                edges = [
                    *self._store.relations(from_ids=[entity.id]),
                    *self._store.relations(to_ids=[entity.id]),
                ]
                for edge in sorted(edges, key=lambda r: r.id):
                    if edge.id not in seen:
                        seen.add(edge.id)
                        facts.append(GraphFact(describe(edge), entity.name, rank, edge))
        return facts


class _Path:
    """A path being walked: the entities on it, its edges and the window they share."""

    __slots__ = ("edges", "entities", "window")

    def __init__(
        self, entities: tuple[int, ...], edges: tuple[Relationship, ...], window: Window
    ) -> None:
        self.entities = entities
        self.edges = edges
        self.window = window

    @property
    def end(self) -> int:
        return self.entities[-1]

    def extend(self, edges: Sequence[Relationship]) -> Iterator[_Path]:
        for edge in edges:
            shared = self.window.intersect(window_of(edge))
            if shared is not None and edge.to_id not in self.entities:
                yield _Path((*self.entities, edge.to_id), (*self.edges, edge), shared)


class _Writer:
    """Applies one request's entities and relationships inside one session, at one time."""

    def __init__(self, session: GraphSession, config: GraphConfig, now: datetime) -> None:
        self.session = session
        self.now = now
        self.functional = {relationship_type(t) for t in config.functional_types}
        self.endpoints: list[EntityOutcome] = []  # entities created as relationship ends
        self.created: set[tuple[str, int]] = set()  # ("entity" | "relationship", id)

    def entity(self, item: EntityInput) -> EntityOutcome:
        key = entity_key(item.name)
        kind = item.type.strip() if item.type and item.type.strip() else None
        aliases = [(entity_key(alias, "alias"), display_name(alias)) for alias in item.aliases]
        found = self.session.find_entity(key)
        status = WriteStatus.DUPLICATE
        if found is None:
            found = self._insert_entity(key, item.name, kind)
            status = WriteStatus.CREATED
        elif kind is not None and kind != found.type:
            self.session.set_entity_type(found.id, kind, self.now)
            status = WriteStatus.UPDATED
        for alias_key, alias in aliases:
            owner = self.session.find_entity(alias_key)
            if owner is not None and owner.id != found.id:
                raise Conflict(f"alias {alias!r} already names entity {owner.name!r} ({owner.id})")
            if owner is None:
                self.session.add_alias(found.id, alias_key, alias, self.now)
                if status is WriteStatus.DUPLICATE:
                    status = WriteStatus.UPDATED
        entity = self.session.find_entity(key)
        assert entity is not None
        return EntityOutcome(status, entity.id, entity)

    def relate(
        self, item: RelationshipInput, *, after: Relationship | None = None
    ) -> RelationshipOutcome:
        """Ingest one relationship; `after` is the retired version it continues, when the
        triple has no current one."""
        kind = relationship_type(item.type)
        window = checked_window(item.valid_at, item.invalid_at)
        head, tail = self._endpoint(item.from_name), self._endpoint(item.to_name)
        current = self.session.current_version(head.id, kind, tail.id)
        change = triple_change(current, window)
        if current is not None and change is TripleChange.DUPLICATE:
            return RelationshipOutcome(WriteStatus.DUPLICATE, current.id, current)
        retired: list[Retirement] = []
        if current is not None:
            self.session.retire(current.id, RetireReason.WINDOW_CHANGED, self.now)
        new = self._insert(
            RelationshipDraft(
                head.id,
                kind,
                tail.id,
                window.start,
                window.end,
                item.source,
                current.id if current else (after.id if after else None),
            )
        )
        if current is not None:
            retired.append(Retirement(current.id, RetireReason.WINDOW_CHANGED, new.id))
        if kind in self.functional:
            retired.extend(self._contradict(new))
        return RelationshipOutcome(WriteStatus.CREATED, new.id, new, new.supersedes, tuple(retired))

    def triple(self, item: RelationshipInput) -> tuple[int, str, int] | None:
        """The ids of an edge's triple, if both its entities exist."""
        head = self.session.find_entity(entity_key(item.from_name))
        tail = self.session.find_entity(entity_key(item.to_name))
        if head is None or tail is None:
            return None
        return head.id, relationship_type(item.type), tail.id

    def _contradict(self, new: Relationship) -> Iterator[Retirement]:
        for old in self.session.current_of(new.from_id, new.type):
            if old.to_id == new.to_id:
                continue
            cut = contradiction_cut(window_of(old), window_of(new), self.now)
            if cut is None:
                continue
            self.session.retire(old.id, RetireReason.CONTRADICTED, self.now)
            successor = None
            if cut.successor is not None:
                window = cut.successor
                draft = RelationshipDraft(
                    old.from_id, old.type, old.to_id, window.start, window.end, old.source, old.id
                )
                successor = self._insert(draft).id
            yield Retirement(old.id, RetireReason.CONTRADICTED, successor)

    def _insert(self, draft: RelationshipDraft) -> Relationship:
        new = self.session.insert_relationship(draft, self.now)
        self.created.add(("relationship", new.id))
        return new

    def _insert_entity(self, key: str, name: str, kind: str | None) -> Entity:
        entity = self.session.insert_entity(key, display_name(name), kind, self.now)
        self.created.add(("entity", entity.id))
        return entity

    def _endpoint(self, name: str) -> Entity:
        key = entity_key(name)
        found = self.session.find_entity(key)
        if found is None:
            found = self._insert_entity(key, name, None)
            self.endpoints.append(EntityOutcome(WriteStatus.CREATED, found.id, found))
        return found


def _unsaved(result: IngestResult, created: set[tuple[str, int]]) -> IngestResult:
    """A dry run's result: ids of rows that were rolled back become None."""

    def rel(value: int | None) -> int | None:
        return None if ("relationship", value) in created else value

    entities = tuple(
        replace(o, id=None if ("entity", o.id) in created else o.id) for o in result.entities
    )
    edges = tuple(
        replace(
            o,
            id=rel(o.id),
            supersedes=rel(o.supersedes),
            retired=tuple(replace(r, id=rel(r.id), successor=rel(r.successor)) for r in o.retired),
        )
        for o in result.relationships
    )
    return replace(result, entities=entities, relationships=edges)
