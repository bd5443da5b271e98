"""What the OpenAPI document declares for each route: the model of its 200 body
(api/responses.py) and each error status it can answer, every one in the one error shape.
Documentation only: a route sends its view's dict as it is.

The routes name the models by reference, and `document_answers` adds the models' JSON
schemas to the app's document, computed once per process: given the models themselves,
the framework would build validators for each route and status of every app it makes."""

from __future__ import annotations

from functools import cache
from typing import Any

import orjson
from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from nexusbrain.api import responses
from nexusbrain.api.responses import ErrorOut

DESCRIPTIONS = {
    400: "a bad value, named in the message (or a query string that is not UTF-8)",
    401: "no API token, or the wrong one (only when the server has one: BRAIN_API_TOKEN)",
    403: "a request from a page of another origin",
    404: "no such id, uri or entity",
    409: "the request contradicts what is stored",
    413: "the body is over the size limit",
    415: "a body that is not JSON (text/plain, a form...)",
    421: "a Host header that is not a name of this server",
    422: "a malformed body or parameter",
    429: "over the rate limit: retry after Retry-After seconds",
    503: "another writer held the database: nothing changed, retry after Retry-After seconds",
    507: "the disk is full: nothing changed",
}
# What the Guard may answer on any route: a query string that is not UTF-8, a page of
# another site, a Host that is not this server's, the rate limit.
EVERY_ROUTE = (400, 403, 421, 429)
PARAMETERS = (422,)  # a route that takes query or path parameters
BODY = (413, 415, 422)  # a route that reads a body
WRITES = (503, 507)  # a route that writes (search and recall too: they record captures)
NDJSON: dict[str, Any] = {
    "description": "one JSON object a line, as `GET /export` writes them",
    "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
}
_EXPORTED = [
    {"type": "header", "format": "nexusbrain-export", "version": 1},
    {
        "type": "document",
        "id": 1,
        "uri": "notes/imported.md",
        "title": "Imported",
        "domain": "default",
        "kind": "markdown",
        "revision": "1",
        "content": "A note from another brain.",
        "metadata": {},
        "created_at": "2025-01-31T09:30:00.000000+00:00",
        "updated_at": "2025-01-31T09:30:00.000000+00:00",
        "deleted_at": None,
    },
]
IMPORT_EXAMPLE = "".join(orjson.dumps(line).decode() + "\n" for line in _EXPORTED)
NDJSON_BODY = {
    "requestBody": {
        "required": True,
        "description": NDJSON["description"],
        "content": {
            "application/x-ndjson": {
                # an empty stream is refused: there is nothing to import
                "schema": {"type": "string", "minLength": 1, "pattern": r"\S"},
                "example": IMPORT_EXAMPLE,
            }
        },
    }
}


def _json(model: type[BaseModel], description: str) -> dict[str, Any]:
    schema = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def declared(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI responses for these error statuses, each in the one error shape."""
    return {s: _json(ErrorOut, DESCRIPTIONS[s]) for s in sorted(set(statuses))}


def answers(model: type[BaseModel] | None, *errors: int, token: bool = True) -> dict[str, Any]:
    """A route's keyword arguments: the model of its 200 body (None: NDJSON lines), the
    errors every route may answer, 401 unless the route is open without the token (`token`
    False), and `errors`."""
    statuses = (*EVERY_ROUTE, *((401,) if token else ()), *errors)
    kind: dict[str, Any] = {"response_model": None}
    if model is None:
        kind, ok = {**kind, "response_class": StreamingResponse}, NDJSON
    else:
        ok = _json(model, (model.__doc__ or "Successful Response").strip().splitlines()[0])
    return {**kind, "responses": {200: ok, **declared(*statuses)}}


@cache
def answer_schemas() -> dict[str, Any]:
    """The JSON schema of every model in api/responses.py (and of what they hold), by name."""
    models = [
        value
        for value in vars(responses).values()
        if isinstance(value, type) and issubclass(value, responses.Out)
    ]
    models.remove(responses.Out)
    _, top = models_json_schema(
        [(m, "serialization") for m in models], ref_template="#/components/schemas/{model}"
    )
    schemas: dict[str, Any] = top["$defs"]
    return schemas


BEARER = {
    "type": "http",
    "scheme": "bearer",
    "description": "the server's BRAIN_API_TOKEN: 'Authorization: Bearer <token>'",
}


def document_answers(app: FastAPI, token: bool = False) -> None:
    """Add the answers' models to the app's OpenAPI document, and, on a server with an API
    token (`token`), bearer auth on every operation that answers 401 without it."""
    framework = app.openapi

    def openapi() -> dict[str, Any]:
        document = app.openapi_schema or _with_answers(framework(), token)
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]


def _with_answers(document: dict[str, Any], token: bool) -> dict[str, Any]:
    components = document.setdefault("components", {})
    known = components.setdefault("schemas", {})
    for name, schema in answer_schemas().items():
        known.setdefault(name, schema)
    if token:
        components["securitySchemes"] = {"bearer": BEARER}
        for item in document["paths"].values():
            for operation in item.values():
                if "401" in operation["responses"]:
                    operation["security"] = [{"bearer": []}]
    return document
