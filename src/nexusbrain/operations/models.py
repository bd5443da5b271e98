"""The pydantic models where untrusted input enters: HTTP bodies and MCP arguments, made from
the operations' declarations (once each), and the few models of items too rich for an Arg
(graph facts, conversation turns), written by hand. HTTP's query and path parameters take the
same checks (api/routes.py).

Bodies are strict (a number is not a string of digits, true is not 1), as JSON APIs are; MCP
arguments are read as clients send them, and some send numbers as strings."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    create_model,
    model_validator,
)
from pydantic.config import JsonDict
from pydantic.fields import FieldInfo

from nexusbrain.config import MAX_SESSION_TURNS, GraphConfig, Limits
from nexusbrain.ingest.conversation import check_json_sizes
from nexusbrain.operations import OPERATIONS
from nexusbrain.operations.args import (
    HAS_WORDS,
    NAME_WORDS,
    NO_NUL,
    TIME,
    Arg,
    Face,
    Group,
    Kind,
    Most,
)
from nexusbrain.operations.spec import Operation, in_body
from nexusbrain.records import json_problem

# The largest id a request may name: the largest integer every JSON parser holds exactly.
# Stored ids may reach records.MAX_ID (2**63 - 1), but a client that reads the bound as a
# double takes 2**63 + 191 for it, and sends ids the server must refuse.
MAX_WIRE_ID = 2**53 - 1


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Body(Strict):
    """A whole request body. Before its fields are read, the body must be JSON that can be
    stored and echoed: no lone surrogates ("\\ud800") in its strings, no integers beyond 64
    bits, and at most MAX_JSON_DEPTH levels of nesting (metadata included)."""

    @model_validator(mode="before")
    @classmethod
    def _storable(cls, data: Any) -> Any:
        problem = json_problem(data)
        if problem:
            raise ValueError(problem)
        return data


_DATE_TIME: JsonDict = {"type": "string", "format": "date-time"}
_DATE: JsonDict = {"type": "string", "format": "date"}
_NONE: JsonDict = {"type": "null"}
# An optional time: a date-time, a date, or "" for none (filters and graph times).
TIME_SCHEMA: JsonDict = {"anyOf": [_DATE_TIME, _DATE, {"type": "string", "maxLength": 0}, _NONE]}
# A conversation's timestamps, kept as given: "" is not one.
TIMESTAMP_SCHEMA: JsonDict = {"anyOf": [_DATE_TIME, _DATE, _NONE]}


def time_field(description: str = TIME, schema: JsonDict = TIME_SCHEMA) -> Any:
    return Field(default=None, description=description, json_schema_extra=schema)


NAME = Field(min_length=1, max_length=500, json_schema_extra=dict(HAS_WORDS))
Name = Annotated[str, Field(min_length=1, max_length=500, json_schema_extra=dict(HAS_WORDS))]


class EntityIn(Strict):
    name: str = NAME
    type: str | None = Field(default=None, max_length=200, description="person, place...")
    aliases: list[Name] = Field(default_factory=list, max_length=100)


class RelationshipIn(Strict):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    from_: str = Field(
        alias="from",
        min_length=1,
        max_length=500,
        description="the subject",
        json_schema_extra=dict(HAS_WORDS),
    )
    type: str = Field(
        min_length=1,
        max_length=100,
        description="e.g. works_at, manages",
        json_schema_extra=dict(HAS_WORDS),
    )
    to: str = Field(
        min_length=1, max_length=500, description="the object", json_schema_extra=dict(HAS_WORDS)
    )
    valid_at: str | None = time_field(f"when the fact began; {TIME}")
    invalid_at: str | None = time_field(f"when it stopped (after valid_at); {TIME}")
    source: str | None = Field(default=None, max_length=2000, description="where it came from")


def _one_of_two(first: str, second: str, value: JsonDict) -> JsonDict:
    return {
        "anyOf": [{"required": [name], "properties": {name: value}} for name in (first, second)]
    }


_SPEAKS: JsonDict = {
    "allOf": [
        _one_of_two("role", "speaker", {"type": "string", **HAS_WORDS}),
        _one_of_two("content", "text", {"type": "string"}),
    ]
}
_SAYS = _one_of_two("content", "text", {"type": "string", **HAS_WORDS})


class TurnIn(BaseModel):
    """A turn names its speaker (role, or speaker) and what was said (content, or text)."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_SPEAKS)
    role: str | None = Field(default=None, json_schema_extra=dict(HAS_WORDS))
    speaker: str | None = Field(default=None, json_schema_extra=dict(HAS_WORDS))
    content: str | None = None
    text: str | None = None
    timestamp: str | None = time_field(schema=TIMESTAMP_SCHEMA)
    id: str | None = None


class SessionIn(Strict):
    id: str = Field(min_length=1, json_schema_extra=dict(NAME_WORDS))  # a part of its uri
    # maxItems, not max_length: over the cap is a 413 naming it (ConversationBody), not a
    # 422; declared from the default, as a maximum that is a setting is (args.Most)
    turns: list[TurnIn] = Field(
        min_length=1,
        description="at least one turn says something",
        json_schema_extra={"contains": _SAYS, "maxItems": MAX_SESSION_TURNS},
    )
    conversation: str | None = Field(default=None, json_schema_extra=dict(NO_NUL))
    timestamp: str | None = time_field(schema=TIMESTAMP_SCHEMA)


class ConversationBody(Body):
    """A conversation's body: each session's turns are counted before anything else reads
    them, against the serving brain's cap (`max_turns`, set on the model body_model makes
    for its limits). Over it, TooLarge (not a ValueError: validation lets it through, to the
    413 it is) comes in the time it takes to count, before 100,000 turns become models."""

    max_turns: ClassVar[int] = MAX_SESSION_TURNS

    @model_validator(mode="before")
    @classmethod
    def _counted(cls, data: Any) -> Any:
        if isinstance(data, dict):
            check_json_sizes(data.get("sessions"), max_turns=cls.max_turns)
        return data


DEFAULT_LIMITS = Limits()
BASES: dict[str, type[Body]] = {"ConversationIn": ConversationBody}

ITEMS: dict[str, type[BaseModel]] = {
    "EntityIn": EntityIn,
    "RelationshipIn": RelationshipIn,
    "SessionIn": SessionIn,
}


def _most(most: Most) -> JsonDict:
    """A setting's default, declared as the maximum the core enforces."""
    if most is Most.DEPTH:
        return {"maximum": GraphConfig().max_depth}
    if most is Most.QUERY_CHARS:
        return {"maxLength": Limits().max_query_chars}
    return {"maximum": Limits().max_budget_tokens}


def _integral(value: Any) -> Any:
    """A number with no fraction is an integer, as JSON Schema counts it (901.0): a generated
    client may send one where the document declares an integer."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return value


def annotation(arg: Arg, *, strict: bool) -> Any:
    """The argument's Python type as pydantic (or the web framework) reads it."""
    kind = arg.kind
    if arg.choices:
        chosen: Any = Literal[arg.choices]
    elif kind in (Kind.INT, Kind.ID):
        chosen = StrictInt if strict else int
    elif kind is Kind.BOOL:
        chosen = StrictBool if strict else bool
    elif kind is Kind.TEXTS:
        chosen = list[str]
    elif kind is Kind.TEXT_OR_TEXTS:
        chosen = str | list[str]
    elif kind is Kind.OBJECT:
        chosen = dict[str, Any]
    elif kind is Kind.ITEMS:
        assert arg.items is not None, arg.name
        chosen = list[item_model(arg.items)]  # type: ignore[misc]
    else:
        chosen = str
    if arg.default is None and not arg.required:
        chosen = chosen | None
    if strict and kind in (Kind.INT, Kind.ID):
        # around the whole type (a union too), where it leaves the bounds declared
        chosen = Annotated[chosen, BeforeValidator(_integral)]
    return chosen


def checks(arg: Arg, *, nullable: bool) -> dict[str, Any]:
    """The keyword arguments of its Field (or Query, or Path): bounds, lengths, description,
    example, and what is declared to the schema alone. A declared enum admits null in a body
    or MCP argument that may be null (`nullable`)."""
    extra: JsonDict = dict(arg.schema or {})
    if arg.kind is Kind.TIME:
        extra.update(TIME_SCHEMA)
    if arg.most is not None:
        extra.update(_most(arg.most))
    if nullable and "enum" in extra and arg.default is None and not arg.required:
        extra["enum"] = [*extra["enum"], None]  # type: ignore[misc]
    found: dict[str, Any] = {
        "ge": 1 if arg.kind is Kind.ID else arg.ge,
        "le": MAX_WIRE_ID if arg.kind is Kind.ID else arg.le,
        "min_length": arg.min_length,
        "max_length": arg.max_length,
        "description": arg.help or None,
        "examples": [arg.example] if arg.example is not None else None,
        "json_schema_extra": extra or None,
    }
    return {key: value for key, value in found.items() if value is not None}


def _field(arg: Arg, *, strict: bool) -> tuple[Any, FieldInfo]:
    kwargs = checks(arg, nullable=True)
    if arg.wire_name != arg.name:
        kwargs["alias"] = arg.wire_name
    if arg.required:
        return annotation(arg, strict=strict), Field(**kwargs)
    if isinstance(arg.default, tuple):
        return annotation(arg, strict=strict), Field(default_factory=list, **kwargs)
    return annotation(arg, strict=strict), Field(default=arg.default, **kwargs)


def _group(group: Group, *, strict: bool) -> tuple[Any, Any]:
    fields = {m.name: _field(m, strict=strict) for m in group.members}
    model = create_model(group.model, __base__=Strict, **fields)  # type: ignore[call-overload]
    return model | None, Field(default=None, description=group.help or None)


def _model(
    name: str, base: type[BaseModel], args: Sequence[Arg | Group], *, strict: bool
) -> type[BaseModel]:
    fields = {
        arg.name: _group(arg, strict=strict)
        if isinstance(arg, Group)
        else _field(arg, strict=strict)
        for arg in args
    }
    model: type[BaseModel] = create_model(name, __base__=base, **fields)  # type: ignore[call-overload]
    return model


@cache
def body_model(name: str, limits: Limits = DEFAULT_LIMITS) -> type[BaseModel]:
    """The model of the HTTP body named `name` (Http.body), made from its route's arguments,
    with the checks a body makes of the serving brain's `limits` first (BASES)."""
    operation = next(op for op in OPERATIONS if op.http is not None and op.http.body == name)
    assert operation.http is not None
    args = [arg for arg in operation.call_args() if in_body(arg, operation.http)]
    model = _model(name, BASES.get(name, Body), args, strict=True)
    if issubclass(model, ConversationBody):
        model.max_turns = limits.max_session_turns
    return model


def item_model(name: str) -> type[BaseModel]:
    return ITEMS.get(name) or body_model(name)


def _tool_args(operation: Operation) -> list[Arg | Group]:
    """An MCP tool's arguments: the call's that MCP offers, and the tool's own."""
    return [
        arg
        for arg in operation.args
        if isinstance(arg, Group) or (arg.mcp and arg.only in (None, Face.MCP))
    ]


@cache
def tool_model(name: str) -> type[BaseModel]:
    """The model of the MCP tool named `name`'s arguments."""
    operation = next(op for op in OPERATIONS if op.mcp is not None and op.mcp.name == name)
    title = "".join(word.title() for word in name.split("_")) + "Args"
    return _model(title, Strict, _tool_args(operation), strict=False)


def values_of(model: BaseModel) -> dict[str, Any]:
    """A validated model's values by argument name; what it holds of models, as JSON objects
    (under their wire names, without what was not given)."""
    return {name: _plain(getattr(model, name)) for name in type(model).model_fields}


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, exclude_none=True)
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value
