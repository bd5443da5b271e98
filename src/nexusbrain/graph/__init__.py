"""The temporal knowledge graph: entities, and relationships with valid and transaction time."""

from nexusbrain.graph.model import AsOf, EntityInput, RelationshipInput
from nexusbrain.graph.service import Graph

__all__ = ["AsOf", "EntityInput", "Graph", "RelationshipInput"]
