"""nexusbrain: a local-first memory and knowledge server for AI agents.

from nexusbrain import Brain, SearchFilters, SearchMode, Settings

with Brain.open("notes.db") as brain:
    brain.ingest_dir("docs")
    hits = brain.search("how are chunks cut", mode=SearchMode.BALANCED)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nexusbrain.environment import pin_blas_threads

pin_blas_threads()

# The one place the version is written (pyproject.toml reads it): asking importlib.metadata
# would cost every command line ~25 ms of imports.
__version__ = "0.1.0"

if TYPE_CHECKING:
    from nexusbrain.brain import Brain
    from nexusbrain.config import Settings
    from nexusbrain.records import SearchFilters, SearchMode

__all__ = ["Brain", "SearchFilters", "SearchMode", "Settings", "__version__"]


def __getattr__(name: str) -> Any:
    """The package's face, imported on first use: `import nexusbrain` stays cheap."""
    if name == "Brain":
        from nexusbrain.brain import Brain

        return Brain
    if name == "Settings":
        from nexusbrain.config import Settings

        return Settings
    if name in ("SearchFilters", "SearchMode"):
        from nexusbrain import records

        return getattr(records, name)
    raise AttributeError(f"module 'nexusbrain' has no attribute {name!r}")
