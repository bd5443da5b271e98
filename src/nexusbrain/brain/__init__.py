"""The core: `Brain`, the one object the CLI, the HTTP API and the MCP server call (facade.py),
and the parts it composes: writes (writes.py), the vectors' upkeep (embedding.py),
administration (admin.py) and the capture log (capture.py)."""

from nexusbrain.brain.facade import Brain, BrainStats, EmbedderInfo, Recall, parse_mode

__all__ = ["Brain", "BrainStats", "EmbedderInfo", "Recall", "parse_mode"]
