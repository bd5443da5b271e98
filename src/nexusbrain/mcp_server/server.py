"""The MCP server around one Brain, on the SDK's low-level `Server`: the tools of `tools.py`,
documents as `nexusbrain://doc/{id}` resources, and instructions for the agent.

Errors are tool errors carrying exactly the message HTTP puts in `{"error": {"message"}}` (and
that shape as structured content), so the server stays up and the agent can read what to fix.
"""

from __future__ import annotations

import contextlib
import logging
import re
from typing import Any

import anyio
import anyio.to_thread
import orjson
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from mcp_types import Tool as ToolInfo
from pydantic import ValidationError

from nexusbrain import __version__
from nexusbrain.brain import Brain
from nexusbrain.errors import BrainError, Conflict, InvalidInput, NotFound
from nexusbrain.mcp_server.tools import TOOLS, Answer, answer
from nexusbrain.operations.models import tool_model
from nexusbrain.records import Document, DocumentKind

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
nexusbrain is the user's long-term memory: their notes, documents, conversations and the \
memories agents stored, kept locally and searched by meaning and by words.
- Before answering from what the user wrote or told you earlier, call `recall` with the \
question. It returns passages within a token budget, each headed [n] path:lines (revision), \
ready to paste; cite the [n] of each passage you use.
- `search` returns ranked hits with a trace of why each ranked; open one with `get_document` \
(by id or path, optionally only line_start..line_end).
- When the user states something worth keeping (a decision, preference or fact), call \
`remember` with it in one or two sentences. Storing the same text twice stores it once.
- The knowledge graph holds facts (from, type, to) with the time they held: `graph_relations` \
lists an entity's relations (now, or as of a time), `graph_history` shows how one changed, \
`graph_add` records new ones.
- A failed call returns a tool error whose message names the bad value and the fix.
Documents are also resources: nexusbrain://doc/{id}."""

DOC_URI = "nexusbrain://doc/{id}"
_DOC_URI = re.compile(r"nexusbrain://doc/(\d+)")
_CALLER_ERRORS = (NotFound, InvalidInput, Conflict)  # the caller's to fix; HTTP 4xx


def build_server(brain: Brain) -> Server[Any]:
    """An MCP server whose tools and resources call `brain`."""
    handlers = Handlers(brain)
    return Server(
        "nexusbrain",
        version=__version__,
        title="nexusbrain memory",
        description="Local-first memory and search whose answers cite their sources.",
        instructions=INSTRUCTIONS,
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources,
        on_list_resource_templates=handlers.list_resource_templates,
        on_read_resource=handlers.read_resource,
    )


def serve_stdio(brain: Brain) -> None:
    """Serve MCP over stdin/stdout until the client closes stdin. Only protocol goes to stdout."""
    anyio.run(_serve_stdio, build_server(brain))


async def _serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def tool_info(name: str) -> ToolInfo:
    tool = TOOLS[name].mcp
    assert tool is not None
    return ToolInfo(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=_inline_refs(tool_model(tool.name).model_json_schema(by_alias=True)),
        annotations=ToolAnnotations(
            read_only_hint=tool.read_only,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )


Context = ServerRequestContext[Any]


class Handlers:
    """The MCP request handlers over one brain. Brain calls run on worker threads."""

    def __init__(self, brain: Brain) -> None:
        self.brain = brain
        self.tools = {name: tool_info(name) for name in TOOLS}

    async def list_tools(
        self, ctx: Context, params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=list(self.tools.values()))

    async def call_tool(self, ctx: Context, params: CallToolRequestParams) -> CallToolResult:
        if params.name not in TOOLS:
            names = ", ".join(TOOLS)
            return tool_error("not_found", f"no tool named {params.name!r}; the tools are {names}")
        arguments = decode_json_text(params.arguments or {}, self.tools[params.name].input_schema)
        try:
            found = await anyio.to_thread.run_sync(answer, params.name, self.brain, arguments)
        except ValidationError as exc:
            return tool_error("invalid_input", validation_message(exc))
        except BrainError as exc:
            if not isinstance(exc, _CALLER_ERRORS):
                log.error("%s: %s", exc.code, exc.message)
            return tool_error(exc.code, exc.message)
        except Exception as exc:
            log.exception("tool %s failed", params.name)
            return tool_error("internal_error", f"internal error: {type(exc).__name__}")
        return tool_result(found)

    async def list_resources(
        self, ctx: Context, params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        return ListResourcesResult(resources=[])  # documents are reached through the template

    async def list_resource_templates(
        self, ctx: Context, params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        template = ResourceTemplate(
            name="document",
            title="A stored document",
            uri_template=DOC_URI,
            description="The content of a document by id (a hit's document_id).",
        )
        return ListResourceTemplatesResult(resource_templates=[template])

    async def read_resource(
        self, ctx: Context, params: ReadResourceRequestParams
    ) -> ReadResourceResult:
        match = _DOC_URI.fullmatch(str(params.uri))
        if match is None:
            raise MCPError(INVALID_PARAMS, f"{params.uri!s} is not a {DOC_URI} uri")
        try:
            document = await anyio.to_thread.run_sync(self.brain.get_document, int(match[1]))
        except BrainError as exc:
            code = INVALID_PARAMS if isinstance(exc, _CALLER_ERRORS) else INTERNAL_ERROR
            raise MCPError(code, exc.message) from None
        return ReadResourceResult(contents=[_resource(str(params.uri), document)])


# What a document's content is, by kind: markdown notes and memories are markdown; the rest is
# plain text (a conversation's turns; the text taken out of an HTML page or a PDF; a text, rst,
# AsciiDoc or source file as it is), whatever the file it came from was.
_MARKDOWN = frozenset({DocumentKind.MARKDOWN, DocumentKind.MEMORY})


def _resource(uri: str, document: Document) -> TextResourceContents:
    markdown = document.kind in _MARKDOWN
    meta = {"title": document.title, "revision": document.revision, "path": document.uri}
    return TextResourceContents(
        uri=uri,
        text=document.content,
        mime_type="text/markdown" if markdown else "text/plain",
        _meta=meta | {"kind": document.kind.value},
    )


def tool_result(answer: Answer) -> CallToolResult:
    text = answer.text if answer.text is not None else orjson.dumps(answer.data).decode()
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=answer.data
    )


def tool_error(code: str, message: str) -> CallToolResult:
    """A tool error: HTTP's message as text, HTTP's error shape as structured content."""
    return CallToolResult(
        content=[TextContent(type="text", text=message)],
        structured_content={"error": {"code": code, "message": message}},
        is_error=True,
    )


def validation_message(exc: ValidationError) -> str:
    """The same form as HTTP's 422 message: `field: problem; ...` (up to five)."""
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def decode_json_text(arguments: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Some clients send list and object arguments as JSON text: decode those, leave the rest."""
    properties = schema.get("properties", {})
    decoded = dict(arguments)
    for name, value in arguments.items():
        if isinstance(value, str) and _structured(properties.get(name, {})):
            with contextlib.suppress(orjson.JSONDecodeError):
                decoded[name] = orjson.loads(value)
    return decoded


def _structured(prop: dict[str, Any]) -> bool:
    kinds = {prop.get("type")} | {option.get("type") for option in prop.get("anyOf", [])}
    return "string" not in kinds and bool(kinds & {"array", "object"})


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with `$ref`s to `$defs` replaced by the definitions: some MCP clients do not
    follow references."""
    defs = schema.pop("$defs", {})

    def expand(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            inlined = {key: expand(value) for key, value in node.items() if key != "$ref"}
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return expand(defs[ref.removeprefix("#/$defs/")]) | inlined
            return inlined
        if isinstance(node, list):
            return [expand(item) for item in node]
        return node

    expanded: dict[str, Any] = expand(schema)
    return expanded
