"""The MCP interface: nexusbrain as the memory of any MCP agent, over stdio (`nexusbrain mcp`)
or streamable HTTP at /mcp beside the REST API (`nexusbrain serve --mcp`).

`nexusbrain mcp` relays to a server already running for the brain (relay.py, the standard
library alone), so the MCP SDK and the brain load only where they serve."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nexusbrain.mcp_server.server import build_server, serve_stdio

__all__ = ["build_server", "serve_stdio"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from nexusbrain.mcp_server import server

        return getattr(server, name)
    raise AttributeError(f"module 'nexusbrain.mcp_server' has no attribute {name!r}")
