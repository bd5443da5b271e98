"""The MCP tools: the operations that declare one (operations/). Each checks its arguments with
the model made from the declaration, asks the operation's Brain call and answers with its
view, the JSON HTTP returns for the same question; `recall` also with text ready to paste.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nexusbrain.brain import Brain
from nexusbrain.operations import OPERATIONS
from nexusbrain.operations.args import Face
from nexusbrain.operations.models import tool_model, values_of
from nexusbrain.summaries import recall_text

TOOLS = {op.mcp.name: op for op in OPERATIONS if op.mcp is not None}
# The text a tool answers with for the model, by tool, from its view (else the JSON itself).
TEXT: dict[str, Callable[[Mapping[str, Any]], str]] = {"recall": recall_text}


@dataclass(frozen=True, slots=True)
class Answer:
    """A tool's answer: the JSON view, and the text for the model (None: the JSON itself)."""

    data: dict[str, Any]
    text: str | None = None


def answer(name: str, brain: Brain, arguments: Mapping[str, Any]) -> Answer:
    """The answer of the tool `name` to these arguments. Raises pydantic's ValidationError
    for arguments its model refuses, and what the operation raises."""
    operation = TOOLS[name]
    args = values_of(tool_model(name).model_validate(arguments))
    view = operation.call(brain, **operation.arguments(Face.MCP, args))
    text = TEXT.get(name)
    return Answer(view, text(view) if text is not None else None)
