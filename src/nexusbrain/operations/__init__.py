"""The operations: each question the brain answers over HTTP, MCP and the command line,
declared once (docs/design/operations.md). An operation names its arguments, its Brain call
(which returns the view every interface answers with) and the form it takes on each interface
that offers it; the HTTP routes and their OpenAPI entries (api/routes.py), the MCP tools
(mcp_server/tools.py) and the answering commands, with their two paths (cli/commands.py), are
made from this table.

Standard library only at import: the command line's fast path reads it."""

from __future__ import annotations

from nexusbrain.operations.documents import (
    DELETE,
    DELETE_DOCUMENT,
    DOCUMENT,
    DOCUMENT_HISTORY,
    FIND_DOCUMENT,
    GET_DOCUMENT,
)
from nexusbrain.operations.graph import GROUP as GRAPH_GROUP
from nexusbrain.operations.graph import HISTORY, INGEST, RELATIONS, TRAVERSE
from nexusbrain.operations.ingest import (
    ADD,
    INGEST_CONVERSATION,
    INGEST_MARKDOWN,
    INGEST_MARKDOWN_BATCH,
)
from nexusbrain.operations.retrieval import EXPLAIN, RECALL, SEARCH
from nexusbrain.operations.spec import Operation
from nexusbrain.operations.system import HEALTH, STATS, VERSION

# In the order the OpenAPI document and the MCP tool list show them.
OPERATIONS: tuple[Operation, ...] = (
    RECALL,
    SEARCH,
    EXPLAIN,
    ADD,
    DOCUMENT,
    INGEST_MARKDOWN,
    INGEST_MARKDOWN_BATCH,
    INGEST_CONVERSATION,
    FIND_DOCUMENT,
    GET_DOCUMENT,
    DOCUMENT_HISTORY,
    DELETE_DOCUMENT,
    DELETE,
    RELATIONS,
    HISTORY,
    INGEST,
    TRAVERSE,
    STATS,
    HEALTH,
    VERSION,
)
BY_NAME = {operation.name: operation for operation in OPERATIONS}
# The command groups, by name, with their help (a command "graph add" is in the group "graph").
GROUPS = {"graph": GRAPH_GROUP}
