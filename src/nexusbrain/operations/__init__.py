"""The operations: each question the brain answers over HTTP, MCP and the command line,
declared once (docs/design/operations.md). An operation names its arguments, its Brain call
(which returns the view every interface answers with) and the form it takes on each interface
that offers it; the HTTP routes and their OpenAPI entries (api/routes.py), the MCP tools
(mcp_server/tools.py) and the answering commands, with their two paths (cli/commands.py), are
made from this table.

Standard library only at import: the command line's fast path reads it."""

from __future__ import annotations

from nexusbrain.operations import documents, graph, ingest, providers, retrieval, sources, system
from nexusbrain.operations.spec import Operation

# Each module's, in the order the OpenAPI document and the MCP tool list show them.
OPERATIONS: tuple[Operation, ...] = (
    *retrieval.OPERATIONS,
    *ingest.OPERATIONS,
    *documents.OPERATIONS,
    *sources.OPERATIONS,
    *graph.OPERATIONS,
    *system.OPERATIONS,
    *providers.OPERATIONS,
)
BY_NAME = {operation.name: operation for operation in OPERATIONS}
# The command groups, by name, with their help (a command "graph add" is in the group "graph").
GROUPS = {"graph": graph.GROUP, "sources": sources.GROUP, "models": providers.GROUP}
