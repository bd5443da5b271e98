"""The knowledge graph: add facts, an entity's relations, a fact's history, a traversal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from nexusbrain.errors import InvalidInput
from nexusbrain.operations.args import HAS_WORDS, TIME, Arg, Face, Kind, Most, Option, Positional
from nexusbrain.operations.spec import Command, Http, Operation, Tool, View

if TYPE_CHECKING:
    from nexusbrain.brain import Brain
    from nexusbrain.graph.model import AsOf

GROUP = """The temporal knowledge graph: entities, and relationships with valid time (when a fact
    held) and transaction time (when the brain learned and retired it).

    \b
    Example:
      nexusbrain graph add alice manages bob --valid-at 2020-01-01 --invalid-at 2023-01-01
      nexusbrain graph relations --from alice
    """

ENTITY = Arg(
    "entity", min_length=1, max_length=500, example="Alice", schema=HAS_WORDS, help="an entity"
)
AS_OF_VALID = Arg(
    "as_of_valid",
    Kind.TIME,
    help=f"valid time: what held in the world then; {TIME}",
    cli=Option(("--as-of-valid",), "ISO-8601 valid time: what held in the world then."),
)
AS_OF_KNOWN = Arg(
    "as_of_known",
    Kind.TIME,
    help=f"transaction time: as the brain knew it then; {TIME}",
    cli=Option(("--as-of-known",), "ISO-8601 transaction time: as the brain knew it then."),
)
MAX_ITEMS = 10_000


def _as_of(valid: str | None, known: str | None) -> AsOf:
    from nexusbrain.graph.model import AsOf, parse_instant

    return AsOf(parse_instant("as_of_valid", valid), parse_instant("as_of_known", known))


def ingest(
    brain: Brain,
    *,
    entities: Sequence[Mapping[str, Any]],
    relationships: Sequence[Mapping[str, Any]],
    dry_run: bool,
) -> View:
    from nexusbrain import views
    from nexusbrain.graph.model import inputs_from_json

    body = {"entities": list(entities), "relationships": list(relationships)}
    entity_inputs, relationship_inputs = inputs_from_json(body)
    result = brain.graph.ingest(entity_inputs, relationship_inputs, dry_run=dry_run)
    return views.graph_ingest(result)


def relations(
    brain: Brain,
    *,
    from_name: str | None,
    to_name: str | None,
    type: str | None,
    as_of_valid: str | None,
    as_of_known: str | None,
) -> View:
    from nexusbrain import views

    when = _as_of(as_of_valid, as_of_known)
    found = brain.graph.relations(from_name, to_name=to_name, type=type, as_of=when)
    return views.relations(found, when)


def history(brain: Brain, *, relationship_id: int) -> View:
    from nexusbrain import views

    return views.relationship_history(brain.graph.history(relationship_id))


def traverse(
    brain: Brain, *, start: str, depth: int, as_of_valid: str | None, as_of_known: str | None
) -> View:
    from nexusbrain import views

    when = _as_of(as_of_valid, as_of_known)
    return views.traversal(brain.graph.traverse(start, depth, as_of=when))


def triple_or_file(given: Mapping[str, Any]) -> dict[str, Any]:
    """`graph add`'s FROM TYPE TO (with its window and source), or its --file's body."""
    triple, file = given["triple"], given["file"]
    fields = {name: given[name] for name in ("valid_at", "invalid_at", "source")}
    if file is not None:
        if triple or any(fields.values()):
            raise InvalidInput("give either FROM TYPE TO (with its options) or --file, not both")
        return _body_of(file)
    if len(triple) != 3:
        raise InvalidInput(f"give FROM TYPE TO (three words), got {len(triple)}: {list(triple)}")
    edge = dict(zip(("from", "type", "to"), triple, strict=True))
    return {"relationships": [edge | {k: v for k, v in fields.items() if v is not None}]}


def _body_of(file: IO[bytes]) -> dict[str, Any]:
    import orjson

    try:
        body = orjson.loads(file.read())
    except orjson.JSONDecodeError as exc:
        raise InvalidInput(f"--file {file.name}: not JSON: {exc}") from None
    if not isinstance(body, dict) or not set(body) <= {"entities", "relationships"}:
        raise InvalidInput(
            f"--file {file.name}: not a body for POST /ingest: give an object with"
            " `entities` and `relationships`"
        )
    return body


def _edge_option(name: str, help: str) -> Arg:
    return Arg(name, only=Face.CLI, cli=Option((f"--{name.replace('_', '-')}",), help))


INGEST = Operation(
    "ingest",
    ingest,
    (
        Arg("triple", Kind.TEXTS, only=Face.CLI, cli=Positional(many=True)),
        _edge_option("valid_at", "ISO-8601: when the fact began to hold."),
        _edge_option("invalid_at", "ISO-8601: when it stopped holding."),
        _edge_option("source", "Where the fact came from (a document, a request...)."),
        Arg(
            "file",
            Kind.FILE,
            only=Face.CLI,
            cli=Option(("--file",), "A JSON body as for POST /ingest ('-': stdin)."),
        ),
        Arg("entities", Kind.ITEMS, default=(), items="EntityIn", max_length=MAX_ITEMS),
        Arg("relationships", Kind.ITEMS, default=(), items="RelationshipIn", max_length=MAX_ITEMS),
        Arg(
            "dry_run",
            Kind.BOOL,
            default=False,
            query=True,
            help="report what would change; change nothing",
            cli=Option(("--dry-run",), "Report what would change; change nothing."),
        ),
    ),
    http=Http(
        "POST",
        "/ingest",
        "graph",
        "GraphIngestOut",
        body="GraphIngestIn",
        errors=(409,),
        writes=True,
        doc="Entities and relationships. Each relationship answers `created` or `duplicate`;\n"
        "a changed window or a contradicted functional fact retires the old version.",
    ),
    mcp=Tool(
        "graph_add",
        "Add graph facts",
        "Record facts as (from, type, to) triples with the time they held. A changed window, or "
        "a new value of a functional type such as works_at, retires the old version; nothing "
        "is deleted.",
        read_only=False,
    ),
    cli=Command(
        "graph add",
        """Add a relationship FROM TYPE TO, or entities and relationships from a JSON file.

        Each relationship is `created` or a `duplicate` (nothing written). A changed window, or a
        new value of a functional type such as works_at, retires the old version.

        \b
        Example:
          nexusbrain graph add alice manages bob --valid-at 2020-01-01 --invalid-at 2023-01-01
          nexusbrain graph add alice works_at Globex --valid-at 2024-03-01 --dry-run
          nexusbrain graph add --file facts.json
        """,
        adapt=triple_or_file,
    ),
    stores=True,
)


def _end(name: str, wire: str, help: str) -> Arg:
    """An end of the relationships asked for, by its entity's name (MCP's tool names one
    entity and which end it is instead: entity_of)."""
    flag = Option((f"--{wire}",), f"{help[0].upper()}{help[1:]}.")
    return ENTITY.replace(name=name, wire=wire, help=help, mcp=False, cli=flag)


def entity_of(given: Mapping[str, Any]) -> dict[str, Any]:
    """MCP's graph_relations names one entity and which end of the relationship it is."""
    outgoing = given.get("direction", "outgoing") == "outgoing"
    entity = given["entity"]
    return {"from_name": entity if outgoing else None, "to_name": None if outgoing else entity}


RELATIONS = Operation(
    "relations",
    relations,
    (
        _end("from_name", "from", "the subject entity"),
        _end("to_name", "to", "the object entity"),
        ENTITY.replace(
            required=True, only=Face.MCP, help="the entity's name", example=None, schema=None
        ),
        Arg(
            "direction",
            default="outgoing",
            choices=("outgoing", "incoming"),
            only=Face.MCP,
            help="outgoing: the entity is the subject; incoming: the object",
        ),
        Arg(
            "type",
            min_length=1,
            max_length=100,
            schema=HAS_WORDS,
            help="only this relationship type",
            cli=Option(("--type",), "Only this relationship type."),
        ),
        AS_OF_VALID,
        AS_OF_KNOWN,
    ),
    http=Http(
        "GET",
        "/graph/relations",
        "graph",
        "RelationsOut",
        errors=(404,),
        doc="Current relationships of an entity (or those of the as-of times).",
    ),
    mcp=Tool(
        "graph_relations",
        "Entity relations",
        "An entity's relationships in the knowledge graph: the current ones, or those that held "
        "at as_of_valid as known at as_of_known.",
        adapt=entity_of,
    ),
    cli=Command(
        "graph relations",
        """An entity's current relationships (or those held at the --as-of times).

        \b
        Example:
          nexusbrain graph relations --from alice --type works_at
          nexusbrain graph relations --from alice --as-of-valid 2021-06-01 --as-of-known 2026-01-01
        """,
    ),
)

HISTORY = Operation(
    "history",
    history,
    (
        Arg(
            "relationship_id",
            Kind.ID,
            required=True,
            help="the id of any version of the relationship",
            cli=Positional(),
        ),
    ),
    http=Http(
        "GET",
        "/graph/relationships/{relationship_id}/history",
        "graph",
        "HistoryOut",
        errors=(404,),
        doc="Every version of the lineage, oldest first, and the current one (or null).",
    ),
    mcp=Tool(
        "graph_history",
        "Relationship history",
        "Every version of one relationship, oldest first: when it held, when the brain learned "
        "it, and why each old version was retired.",
    ),
    cli=Command(
        "graph history",
        """Every version of a relationship, oldest first, from any version's id.

        \b
        Example:
          nexusbrain graph history 7
        """,
    ),
)

TRAVERSE = Operation(
    "traverse",
    traverse,
    (
        ENTITY.replace(
            name="start", wire="from", required=True, help="where to start", cli=Positional()
        ),
        Arg(
            "depth",
            Kind.INT,
            default=1,
            most=Most.DEPTH,
            schema={"minimum": 1},
            help="how many edges to follow",
            cli=Option(("--depth",), "How many edges to follow.", show_default=True),
        ),
        AS_OF_VALID,
        AS_OF_KNOWN,
    ),
    http=Http(
        "GET",
        "/graph/traverse",
        "graph",
        "TraversalOut",
        errors=(404,),
        doc="Paths along current edges (or those of the as-of times) whose edges hold at once.",
    ),
    cli=Command(
        "graph traverse",
        """Follow current edges out of an entity; a path is kept only while all its edges hold
        at one time.

        \b
        Example:
          nexusbrain graph traverse alice --depth 2
        """,
    ),
)

OPERATIONS = (RELATIONS, HISTORY, INGEST, TRAVERSE)
