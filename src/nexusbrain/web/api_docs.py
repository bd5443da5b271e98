"""The API's reference page at /docs, drawn on the server from the app's own OpenAPI schema.

FastAPI's Swagger UI and ReDoc pages load their scripts from a CDN, so offline they are blank.
This page needs no script at all: every route with its parameters, body and answers, then
every schema the bodies use, as plain HTML on the UI's stylesheet. `/openapi.json` stays the
machine-readable source.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from nexusbrain.web import markdown

METHODS = ("get", "post", "put", "patch", "delete")
REF = "#/components/schemas/"
# FastAPI describes its own validation errors; this server answers every error in one shape.
HIDDEN_SCHEMAS = frozenset({"HTTPValidationError", "ValidationError"})
PLACEHOLDERS = {"string": "…", "integer": 1, "number": 1.0, "boolean": True}

Json = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Field:
    """A parameter of a route, or a property of a schema."""

    name: str
    where: str  # query, path, header; "" for a schema's property
    type: Markup
    required: bool
    default: str | None
    description: str


@dataclass(frozen=True, slots=True)
class Operation:
    method: str
    path: str
    anchor: str
    summary: str
    description: Markup | None
    parameters: tuple[Field, ...]
    body: Markup | None
    responses: tuple[tuple[str, str], ...]  # the 2xx answers: status, description
    example: str


@dataclass(frozen=True, slots=True)
class Schema:
    name: str
    anchor: str
    description: Markup | None
    fields: tuple[Field, ...]
    choices: tuple[str, ...]  # an enum's values


@dataclass(frozen=True, slots=True)
class ApiDocs:
    title: str
    version: str
    description: Markup | None
    groups: tuple[tuple[str, tuple[Operation, ...]], ...]  # by tag, in first-seen order
    schemas: tuple[Schema, ...]


def api_docs(spec: Json, base_url: str, token_set: bool) -> ApiDocs:
    """The page's content from an OpenAPI document; examples call `base_url`."""
    schemas = spec.get("components", {}).get("schemas", {})
    groups: dict[str, list[Operation]] = {}
    for path, item in spec.get("paths", {}).items():
        for method in METHODS:
            if method in item:
                op = _operation(method, path, item[method], schemas, base_url, token_set)
                groups.setdefault((item[method].get("tags") or ["other"])[0], []).append(op)
    info = spec.get("info", {})
    return ApiDocs(
        title=str(info.get("title", "API")),
        version=str(info.get("version", "")),
        description=_prose(info.get("description")),
        groups=tuple((tag, tuple(ops)) for tag, ops in groups.items()),
        schemas=tuple(
            _schema(name, value) for name, value in schemas.items() if name not in HIDDEN_SCHEMAS
        ),
    )


def _operation(
    method: str, path: str, op: Json, schemas: Json, base_url: str, token_set: bool
) -> Operation:
    parameters = tuple(_parameter(p) for p in op.get("parameters", ()))
    body_schema = _body_schema(op)
    responses = tuple(
        (code, str(answer.get("description", "")))
        for code, answer in op.get("responses", {}).items()
        if code.startswith("2")
    )
    return Operation(
        method=method.upper(),
        path=path,
        anchor=anchor(method, path),
        summary=str(op.get("summary", "")),
        description=_prose(op.get("description")),
        parameters=parameters,
        body=None if body_schema is None else type_of(body_schema),
        responses=responses,
        example=curl(method, path, parameters, _resolve(body_schema, schemas), base_url, token_set),
    )


def _parameter(p: Json) -> Field:
    schema = p.get("schema", {})
    return Field(
        name=str(p["name"]),
        where=str(p.get("in", "")),
        type=type_of(schema),
        required=bool(p.get("required")),
        default=_default(schema),
        description=str(p.get("description") or schema.get("description") or ""),
    )


def _schema(name: str, value: Json) -> Schema:
    required = set(value.get("required", ()))
    fields = tuple(
        Field(
            name=prop,
            where="",
            type=type_of(schema),
            required=prop in required,
            default=_default(schema),
            description=str(schema.get("description") or ""),
        )
        for prop, schema in value.get("properties", {}).items()
    )
    choices = tuple(str(v) for v in value.get("enum", ()))
    return Schema(name, f"schema-{name}", _prose(value.get("description")), fields, choices)


def anchor(method: str, path: str) -> str:
    """`get-documents-document_id` for GET /documents/{document_id}."""
    words = path.replace("{", "").replace("}", "").strip("/").replace("/", "-")
    return f"{method.lower()}-{words or 'root'}"


def type_of(schema: Json) -> Markup:
    """A schema's type as a reader says it: `integer, 1 to 1000`, `array of Turn`, a link to
    a named schema; `null` dropped from a union (the field is then simply optional)."""
    if "$ref" in schema:
        name = str(schema["$ref"]).removeprefix(REF)
        return Markup('<a href="#schema-{0}">{0}</a>').format(name)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        kept = [o for o in options if o.get("type") != "null"] or options
        return Markup(" or ").join(type_of(o) for o in kept)
    if "enum" in schema:
        return Markup("one of ") + Markup(", ").join(
            Markup("<code>{}</code>").format(v) for v in schema["enum"]
        )
    kind = str(schema.get("type", "any"))
    if kind == "array":
        return Markup("array of ") + type_of(schema.get("items", {}))
    return escape(kind) + _range(schema)


def _range(schema: Json) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is None and high is None:
        return ""
    if high is None:
        return f", at least {_number(low)}"
    if low is None:
        return f", at most {_number(high)}"
    return f", {_number(low)} to {_number(high)}"


def _number(value: Any) -> str:
    return f"{int(value):,}" if float(value).is_integer() else str(value)


def _default(schema: Json) -> str | None:
    return None if "default" not in schema else json.dumps(schema["default"])


def _prose(text: Any) -> Markup | None:
    return markdown.render(str(text), heading_shift=3) if text else None


def _body_schema(op: Json) -> Json | None:
    content = op.get("requestBody", {}).get("content", {})
    body: Json | None = content.get("application/json", {}).get("schema")
    return body


def _resolve(schema: Json | None, schemas: Json) -> Json | None:
    if schema is not None and "$ref" in schema:
        found: Json | None = schemas.get(str(schema["$ref"]).removeprefix(REF))
        return found
    return schema


def curl(
    method: str,
    path: str,
    parameters: Sequence[Field],
    body: Json | None,
    base_url: str,
    token_set: bool,
) -> str:
    """A command that calls the route with its required inputs (values to fill in)."""
    url = base_url.rstrip("/") + path
    query = "&".join(f"{p.name}=…" for p in parameters if p.required and p.where == "query")
    parts = ["curl"]
    if method != "get":
        parts.append(f"-X {method.upper()}")
    if token_set:
        parts.append('-H "Authorization: Bearer $BRAIN_API_TOKEN"')
    if body is not None:
        example = json.dumps(dict(_required_values(body)), ensure_ascii=False)
        parts += ["-H 'Content-Type: application/json'", f"-d '{example}'"]
    parts.append(f"'{url}?{query}'" if query else f"'{url}'")
    return " ".join(parts)


def _required_values(schema: Json) -> Iterator[tuple[str, Any]]:
    properties = schema.get("properties", {})
    for name in schema.get("required", ()):
        kind = properties.get(name, {}).get("type")
        yield name, [] if kind == "array" else PLACEHOLDERS.get(str(kind), "…")
