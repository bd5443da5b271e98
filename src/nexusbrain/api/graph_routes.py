"""The knowledge graph over HTTP: ingest, relations, history and traversal.

Bodies are checked by pydantic here, then converted by the same function the CLI uses
(`graph.model.inputs_from_json`), so both interfaces give the same answer to the same input.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI, Path, Query
from pydantic import ConfigDict, Field
from pydantic.config import JsonDict

from nexusbrain import views
from nexusbrain.api.openapi import BODY, PARAMETERS, WRITES, answers
from nexusbrain.api.responses import GraphIngestOut, HistoryOut, RelationsOut, TraversalOut
from nexusbrain.api.schemas import HAS_WORDS, TIME, TIME_SCHEMA, Body, Strict, time_field
from nexusbrain.brain import Brain
from nexusbrain.config import GraphConfig
from nexusbrain.graph.model import AsOf, inputs_from_json, parse_instant
from nexusbrain.records import MAX_ID

NAME = Field(min_length=1, max_length=500, json_schema_extra=HAS_WORDS)
Name = Annotated[str, Field(min_length=1, max_length=500, json_schema_extra=HAS_WORDS)]


class EntityIn(Strict):
    name: str = NAME
    type: str | None = Field(default=None, max_length=200)
    aliases: list[Name] = Field(default_factory=list, max_length=100)


class RelationshipIn(Strict):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    from_: str = Field(alias="from", min_length=1, max_length=500, json_schema_extra=HAS_WORDS)
    type: str = Field(min_length=1, max_length=100, json_schema_extra=HAS_WORDS)
    to: str = NAME
    valid_at: str | None = time_field(f"when the fact began; {TIME}")
    invalid_at: str | None = time_field(f"when it stopped (after valid_at); {TIME}")
    source: str | None = Field(default=None, max_length=2000)


class GraphIngestIn(Body):
    entities: list[EntityIn] = Field(default_factory=list, max_length=10_000)
    relationships: list[RelationshipIn] = Field(default_factory=list, max_length=10_000)


AsOfValid = Annotated[
    str | None,
    Query(
        description=f"valid time: what held in the world then; {TIME}",
        json_schema_extra=TIME_SCHEMA,
    ),
]
AsOfKnown = Annotated[
    str | None,
    Query(
        description=f"transaction time: as the brain knew it then; {TIME}",
        json_schema_extra=TIME_SCHEMA,
    ),
]


DEPTHS: JsonDict = {"minimum": 1, "maximum": GraphConfig().max_depth}


def entity_name(alias: str | None = None) -> Any:
    return Query(
        alias=alias, min_length=1, max_length=500, examples=["Alice"], json_schema_extra=HAS_WORDS
    )


def as_of(valid: str | None, known: str | None) -> AsOf:
    return AsOf(parse_instant("as_of_valid", valid), parse_instant("as_of_known", known))


def graph_routes(app: FastAPI, brain: Brain) -> None:
    @app.post("/ingest", tags=["graph"], **answers(GraphIngestOut, 409, *BODY, *WRITES))
    def ingest(body: GraphIngestIn, dry_run: bool = False) -> dict[str, Any]:
        """Entities and relationships. Each relationship answers `created` or `duplicate`;
        a changed window or a contradicted functional fact retires the old version."""
        entities, relationships = inputs_from_json(body.model_dump(by_alias=True))
        return views.graph_ingest(brain.graph.ingest(entities, relationships, dry_run=dry_run))

    @app.get(
        "/graph/relationships/{relationship_id}/history",
        tags=["graph"],
        **answers(HistoryOut, 404, *PARAMETERS),
    )
    def history(
        relationship_id: Annotated[int, Path(ge=1, le=MAX_ID, description="any version's id")],
    ) -> dict[str, Any]:
        """Every version of the lineage, oldest first, and the current one (or null)."""
        return views.relationship_history(brain.graph.history(relationship_id))

    @app.get("/graph/relations", tags=["graph"], **answers(RelationsOut, 404, *PARAMETERS))
    def relations(
        from_: Annotated[str | None, entity_name("from")] = None,
        to: Annotated[str | None, entity_name()] = None,
        type: Annotated[
            str | None, Query(min_length=1, max_length=100, json_schema_extra=HAS_WORDS)
        ] = None,
        as_of_valid: AsOfValid = None,
        as_of_known: AsOfKnown = None,
    ) -> dict[str, Any]:
        """Current relationships of an entity (or those of the as-of times)."""
        when = as_of(as_of_valid, as_of_known)
        found = brain.graph.relations(from_, to_name=to, type=type, as_of=when)
        return views.relations(found, when)

    @app.get("/graph/traverse", tags=["graph"], **answers(TraversalOut, 404, *PARAMETERS))
    def traverse(
        from_: Annotated[str, entity_name("from")],
        depth: Annotated[int, Query(json_schema_extra=DEPTHS)] = 1,
        as_of_valid: AsOfValid = None,
        as_of_known: AsOfKnown = None,
    ) -> dict[str, Any]:
        """Paths along current edges (or those of the as-of times) whose edges hold at once."""
        when = as_of(as_of_valid, as_of_known)
        return views.traversal(brain.graph.traverse(from_, depth, as_of=when))
