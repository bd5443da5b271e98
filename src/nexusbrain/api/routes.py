"""The operations' HTTP routes, made from their declarations (operations/): each route takes
the parameters and body its operation declares (checked as declared, and so documented in
OpenAPI), asks its Brain call and sends the view."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Annotated, Any

import orjson
from fastapi import FastAPI, Path, Query
from fastapi.responses import JSONResponse as FrameworkJSONResponse

from nexusbrain.api import responses
from nexusbrain.api.openapi import BODY, PARAMETERS, WRITES, answers
from nexusbrain.brain import Brain
from nexusbrain.config import Limits
from nexusbrain.operations import OPERATIONS
from nexusbrain.operations.args import Arg, Face, Group
from nexusbrain.operations.models import annotation, body_model, checks, values_of
from nexusbrain.operations.spec import Http, Operation, View, in_body, in_path

Addition = Callable[[View], View]


class JSONResponse(FrameworkJSONResponse):
    """JSON by orjson (a JSON response to the framework, so OpenAPI declares JSON bodies).

    A route that returns a dict has it walked by the framework's jsonable_encoder first, on
    the event loop, holding the GIL: for a search's answer that was ~17% of the server's GIL
    time under 8 clients. The views already build plain JSON values, so the routes return
    this response, made in their worker thread."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def operation_routes(app: FastAPI, brain: Brain, additions: Mapping[str, Addition]) -> None:
    """A route for each operation that HTTP offers. `additions` adds the server's own state
    to an operation's view (Http.adds), by operation."""
    for operation in OPERATIONS:
        if operation.http is not None:
            _route(app, brain, operation, operation.http, additions.get(operation.name))


def _route(
    app: FastAPI, brain: Brain, operation: Operation, http: Http, addition: Addition | None
) -> None:
    parameters = list(_parameters(operation, http, brain.settings.limits))
    endpoint = _endpoint(brain, operation, addition)
    endpoint.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    errors = _errors(http, parameters=bool(parameters))
    app.add_api_route(
        http.path,
        endpoint,
        methods=[http.method],
        name=operation.name,
        tags=[http.tag],
        description=http.doc,
        **answers(getattr(responses, http.answer), *errors, token=not http.open),
    )


def _endpoint(
    brain: Brain, operation: Operation, addition: Addition | None
) -> Callable[..., JSONResponse]:
    """The route's function: its parameters (and body) by argument name, the call, the view."""

    def endpoint(**values: Any) -> JSONResponse:
        body = values.pop("body", None)
        given = values | (values_of(body) if body is not None else {})
        view = operation.call(brain, **operation.arguments(Face.HTTP, given))
        return JSONResponse(addition(view) if addition is not None else view)

    return endpoint


def _errors(http: Http, *, parameters: bool) -> tuple[int, ...]:
    """The statuses the route may answer beyond every route's: its own, a write's, and those
    of a bad body or parameter."""
    own = (*http.errors, *(WRITES if http.writes else ()))
    if http.body is not None:
        return (*own, *BODY)
    return (*own, *PARAMETERS) if parameters else own


def _parameters(operation: Operation, http: Http, limits: Limits) -> Iterator[inspect.Parameter]:
    """The route's path and query parameters (the call's arguments its body does not hold,
    each group's members one by one), then its body (checked against the brain's `limits`
    first: a conversation's turns)."""
    for arg in operation.call_args():
        if in_body(arg, http):
            continue
        for member in arg.members if isinstance(arg, Group) else (arg,):
            yield _parameter(member, path=in_path(member, http))
    if http.body is not None:
        model = body_model(http.body, limits)
        yield inspect.Parameter("body", inspect.Parameter.KEYWORD_ONLY, annotation=model)


def _parameter(arg: Arg, *, path: bool) -> inspect.Parameter:
    found = checks(arg, nullable=False)
    if arg.http_name != arg.name:
        found["alias"] = arg.http_name
    where = Path(**found) if path else Query(**found)
    default = inspect.Parameter.empty if arg.required else arg.default
    return inspect.Parameter(
        arg.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[annotation(arg, strict=False), where],
    )
