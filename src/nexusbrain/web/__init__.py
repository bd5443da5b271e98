"""The web UI: server-rendered pages under /app whose scripts call the JSON API."""

from nexusbrain.web.routes import web_routes

__all__ = ["web_routes"]
