"""Request bodies: where untrusted input enters, pydantic checks it. (The answers' models are
in api/responses.py.)"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator
from pydantic.config import JsonDict

from nexusbrain.config import Limits
from nexusbrain.records import MAX_ID, DocumentKind, SearchMode, json_problem


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


# Python's whitespace (str.isspace), which the core strips. JSON Schema's `\s` is another set
# (it holds U+FEFF and lacks U+001C-U+001F and U+0085): `\S` allowed a query of "\x1d", a 400.
BLANK = r"\t\n\v\f\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
WORDS = rf"[^{BLANK}]"  # a pattern: not empty, not only whitespace
# A text (a memory, a note) loses a leading BOM first (ingest/documents.py): a BOM alone is
# empty, and a BOM after that is a character like any other.
TEXT_WORDS = rf"^(?:\ufeff[{BLANK}]*[^{BLANK}]|[{BLANK}]*[^{BLANK}\ufeff]|[{BLANK}]+\ufeff)"
# Rules the core enforces itself (with the same message over HTTP, MCP and the CLI) are
# declared to OpenAPI only: the schema tells the truth, the core gives the answer.
HAS_WORDS: JsonDict = {"pattern": WORDS}
HAS_TEXT: JsonDict = {"pattern": TEXT_WORDS}
TIME = "ISO-8601 (RFC 3339 date-time, or a date), in years 1 to 9999 once in UTC"
MAX_QUERY_CHARS = Limits().max_query_chars  # the defaults: a server may be set otherwise
MAX_BUDGET_TOKENS = Limits().max_budget_tokens
KINDS = [kind.value for kind in DocumentKind]
FILTER_KINDS = [*KINDS, ""]  # "" for any kind, as for the other filters


_DATE_TIME: JsonDict = {"type": "string", "format": "date-time"}
_DATE: JsonDict = {"type": "string", "format": "date"}
_NONE: JsonDict = {"type": "null"}
# An optional time: a date-time, a date, or "" for none (filters and graph times).
TIME_SCHEMA: JsonDict = {"anyOf": [_DATE_TIME, _DATE, {"type": "string", "maxLength": 0}, _NONE]}
# A conversation's timestamps, kept as given: "" is not one.
TIMESTAMP_SCHEMA: JsonDict = {"anyOf": [_DATE_TIME, _DATE, _NONE]}


def time_field(description: str = TIME, schema: JsonDict = TIME_SCHEMA) -> Any:
    return Field(default=None, description=description, json_schema_extra=schema)


class FiltersIn(Strict):
    domain: str | None = None
    path_prefix: str | None = None
    document_id: StrictInt | None = Field(default=None, ge=1, le=MAX_ID)
    kind: str | None = Field(default=None, json_schema_extra={"enum": [*FILTER_KINDS, None]})
    updated_after: str | None = time_field()
    updated_before: str | None = time_field()


class MarkdownIn(Body):
    title: str = Field(min_length=1, max_length=1000)
    content: str = Field(
        description="markdown, front matter allowed (no aliases)", json_schema_extra=HAS_TEXT
    )
    uri: str | None = Field(default=None, min_length=1, max_length=4000)
    domain: str | None = Field(default=None, min_length=1, max_length=200)
    metadata: dict[str, Any] | None = None


MAX_BATCH_DOCUMENTS = 1000


class MarkdownBatchIn(Body):
    documents: list[MarkdownIn] = Field(min_length=1, max_length=MAX_BATCH_DOCUMENTS)


class MemoryIn(Body):
    text: str = Field(json_schema_extra=HAS_TEXT)
    source: str | None = Field(default=None, max_length=4000)
    domain: str | None = Field(default=None, min_length=1, max_length=200)
    tags: list[str] = Field(default_factory=list, max_length=100)


def _one_of_two(first: str, second: str, value: JsonDict) -> JsonDict:
    return {
        "anyOf": [{"required": [name], "properties": {name: value}} for name in (first, second)]
    }


_SPEAKS: JsonDict = {
    "allOf": [
        _one_of_two("role", "speaker", {"type": "string", **HAS_WORDS}),
        _one_of_two("content", "text", {"type": "string"}),
    ]
}
_SAYS = _one_of_two("content", "text", {"type": "string", **HAS_WORDS})


class TurnIn(BaseModel):
    """A turn names its speaker (role, or speaker) and what was said (content, or text)."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_SPEAKS)
    role: str | None = Field(default=None, json_schema_extra=HAS_WORDS)
    speaker: str | None = Field(default=None, json_schema_extra=HAS_WORDS)
    content: str | None = None
    text: str | None = None
    timestamp: str | None = time_field(schema=TIMESTAMP_SCHEMA)
    id: str | None = None


class SessionIn(Strict):
    id: str = Field(min_length=1, json_schema_extra=HAS_WORDS)
    turns: list[TurnIn] = Field(
        min_length=1,
        description="at least one turn says something",
        json_schema_extra={"contains": _SAYS},
    )
    conversation: str | None = None
    timestamp: str | None = time_field(schema=TIMESTAMP_SCHEMA)


class ConversationIn(Body):
    sessions: list[SessionIn] = Field(min_length=1)
    domain: str | None = Field(default=None, min_length=1, max_length=200)
    index_roles: list[str] | None = None


class RecallIn(Body):
    query: str = Field(json_schema_extra={**HAS_WORDS, "maxLength": MAX_QUERY_CHARS})
    k: StrictInt | None = Field(default=None, ge=1, le=1000)
    budget_tokens: StrictInt | None = Field(
        default=None, ge=1, json_schema_extra={"maximum": MAX_BUDGET_TOKENS}
    )
    mode: SearchMode = SearchMode.BALANCED
    filters: FiltersIn | None = None
    graph: StrictBool | None = None  # graph context; default: on in tokenmax, off otherwise
