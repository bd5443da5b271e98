"""The MCP interface: nexusbrain as the memory of any MCP agent, over stdio (`nexusbrain mcp`)
or streamable HTTP at /mcp beside the REST API (`nexusbrain serve --mcp`)."""

from nexusbrain.mcp_server.server import build_server, serve_stdio

__all__ = ["build_server", "serve_stdio"]
