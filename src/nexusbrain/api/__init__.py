"""The HTTP API: parse, call one Brain method, format. No logic of its own."""

from nexusbrain.api.app import create_app

__all__ = ["create_app"]
