"""Request bodies: where untrusted input enters, pydantic checks it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from nexusbrain.records import MAX_ID, SearchMode, json_problem


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Body(Strict):
    """A whole request body. Before its fields are read, the body must be JSON that can be
    stored and echoed: no lone surrogates ("\\ud800") in its strings, no integers beyond 64
    bits, and at most MAX_JSON_DEPTH levels of nesting (metadata included)."""

    @model_validator(mode="before")
    @classmethod
    def _storable(cls, data: Any) -> Any:
        problem = json_problem(data)
        if problem:
            raise ValueError(problem)
        return data


class FiltersIn(Strict):
    domain: str | None = None
    path_prefix: str | None = None
    document_id: int | None = Field(default=None, ge=1, le=MAX_ID)
    kind: str | None = None
    updated_after: str | None = None
    updated_before: str | None = None


class MarkdownIn(Body):
    title: str = Field(min_length=1, max_length=1000)
    content: str
    uri: str | None = Field(default=None, min_length=1, max_length=4000)
    domain: str | None = Field(default=None, min_length=1, max_length=200)
    metadata: dict[str, Any] | None = None


MAX_BATCH_DOCUMENTS = 1000


class MarkdownBatchIn(Body):
    documents: list[MarkdownIn] = Field(min_length=1, max_length=MAX_BATCH_DOCUMENTS)


class MemoryIn(Body):
    text: str
    source: str | None = Field(default=None, max_length=4000)
    domain: str | None = Field(default=None, min_length=1, max_length=200)
    tags: list[str] = Field(default_factory=list, max_length=100)


class TurnIn(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str | None = None
    speaker: str | None = None
    content: str | None = None
    text: str | None = None
    timestamp: str | None = None
    id: str | None = None


class SessionIn(Strict):
    id: str = Field(min_length=1)
    turns: list[TurnIn] = Field(min_length=1)
    conversation: str | None = None
    timestamp: str | None = None


class ConversationIn(Body):
    sessions: list[SessionIn] = Field(min_length=1)
    domain: str | None = Field(default=None, min_length=1, max_length=200)
    index_roles: list[str] | None = None


class RecallIn(Body):
    query: str
    k: int | None = Field(default=None, ge=1, le=1000)
    budget_tokens: int | None = Field(default=None, ge=1)
    mode: SearchMode = SearchMode.BALANCED
    filters: FiltersIn | None = None
    graph: bool | None = None  # graph context; default: on in tokenmax, off otherwise
