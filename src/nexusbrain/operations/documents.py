"""Reading and retiring documents: by id, by uri, by a reference (an id, uri or path), their
history."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nexusbrain.errors import InvalidInput
from nexusbrain.operations.args import Arg, Face, Kind, Option, Positional
from nexusbrain.operations.spec import ByReference, Command, Http, Operation, Tool, View

if TYPE_CHECKING:
    from nexusbrain.brain import Brain
    from nexusbrain.records import Document

DOCUMENT_ID = Arg("document_id", Kind.ID, required=True, help="the document's id")
CHUNKS = Arg("chunks", Kind.BOOL, default=False, help="also list its chunks with their spans")


def _view(brain: Brain, document: Document, chunks: bool) -> View:
    from nexusbrain import views

    return views.document(document, brain.document_chunks(document.id) if chunks else None)


def document(
    brain: Brain, *, ref: int | str, line_start: int | None, line_end: int | None, chunks: bool
) -> View:
    from nexusbrain import views

    found = brain.document(ref)
    view = _view(brain, found, chunks)
    if line_start is None and line_end is None:
        return view
    start, end = _lines(found, line_start or 1, line_end)
    return view | views.document_lines(found, start, end, _pages(brain, found, start, end))


def _pages(brain: Brain, document: Document, start: int, end: int) -> list[int]:
    """The pages lines `start` to `end` of a paged document (a PDF) are on; none for others."""
    from nexusbrain import views
    from nexusbrain.summaries import pages_of_lines

    if "pages" not in document.metadata:
        return []
    return pages_of_lines([views.chunk(c) for c in brain.document_chunks(document.id)], start, end)


def chunks_for_lines(given: Mapping[str, Any]) -> dict[str, Any]:
    """`get --lines` asks for the chunks too: the printer names the pages of the lines from
    them (a PDF's), and lists them only with --chunks."""
    return {"chunks": bool(given.get("chunks")) or given.get("lines") is not None}


def _lines(document: Document, start: int, end: int | None) -> tuple[int, int]:
    """The lines asked for, within the document's; InvalidInput when there are none."""
    total = len(document.content.splitlines())
    if end is not None and end < start:
        raise InvalidInput(f"line_end={end} is before line_start={start}")
    if start > total:
        raise InvalidInput(
            f"line_start={start} is past the end of document {document.id}, which has {total} lines"
        )
    return start, total if end is None else min(end, total)


def get_document(brain: Brain, *, document_id: int, chunks: bool) -> View:
    return _view(brain, brain.get_document(document_id), chunks)


def find_document(brain: Brain, *, uri: str, chunks: bool) -> View:
    return _view(brain, brain.find_document(uri), chunks)


def document_history(brain: Brain, *, document_id: int) -> View:
    from nexusbrain import views

    return views.document_history(document_id, brain.document_history(document_id))


def _retire(brain: Brain, document: Document) -> View:
    from nexusbrain import views

    return views.deletion(document, brain.delete_document(document.id))


def delete(brain: Brain, *, ref: str) -> View:
    return _retire(brain, brain.document(ref))


def delete_document(brain: Brain, *, document_id: int) -> View:
    return _retire(brain, brain.get_document(document_id))


def ls(brain: Brain, *, prefix: str, limit: int) -> View:
    from nexusbrain import views

    total, found = brain.list_documents(prefix, limit=limit)
    return views.listing(prefix, total, found)


def id_or_path(given: Mapping[str, Any]) -> dict[str, Any]:
    """The reference of MCP's get_document: its id or its path, exactly one of them."""
    document_id, path = given.get("id"), given.get("path")
    if (document_id is None) == (path is None):
        raise InvalidInput("give the document's id or its path, not both and not neither")
    return {"ref": document_id if document_id is not None else path}


def line_range(text: str) -> tuple[int, int]:
    """`--lines 10-20` (or `7`) as (first, last), from 1."""
    start, _, end = text.partition("-")
    if not (start.isdigit() and (end or start).isdigit()):
        raise InvalidInput(f"--lines {text!r} must look like 10-20 or 7")
    return int(start), int(end or start)


DOCUMENT = Operation(
    "document",
    document,
    (
        Arg("ref", Kind.REF, required=True, mcp=False, cli=Positional()),
        Arg("id", Kind.ID, only=Face.MCP, help="document id (from a hit's document_id)"),
        Arg("path", only=Face.MCP, min_length=1, help="or its path/uri (a hit's uri)"),
        Arg("line_start", Kind.INT, ge=1, help="first line to return (from 1)"),
        Arg("line_end", Kind.INT, ge=1, help="last line to return (inclusive)"),
        CHUNKS.replace(cli=Option(("--chunks",), "Also list the document's chunks and spans.")),
        Arg(
            "lines",
            only=Face.CLI,
            cli=Option(
                ("--lines",), "Only these lines of the content, e.g. 10-20.", parse=line_range
            ),
        ),
    ),
    mcp=Tool(
        "get_document",
        "Get a document",
        "A whole document by id or path, or only some of its lines (line_start, line_end).",
        adapt=id_or_path,
    ),
    cli=Command(
        "get",
        """Show a document, by id or by path/uri.

        \b
        Example:
          nexusbrain get 12 --lines 10-20
          nexusbrain get ~/notes/deploy.md --chunks
        """,
        adapt=chunks_for_lines,
    ),
    remote=ByReference("get_document", "find_document"),
)

GET_DOCUMENT = Operation(
    "get_document",
    get_document,
    (DOCUMENT_ID, CHUNKS),
    http=Http("GET", "/documents/{document_id}", "documents", "DocumentOut", errors=(404,)),
)

FIND_DOCUMENT = Operation(
    "find_document",
    find_document,
    (Arg("uri", required=True, help="the uri the document is stored under"), CHUNKS),
    http=Http("GET", "/documents", "documents", "DocumentOut", errors=(404,)),
)

DOCUMENT_HISTORY = Operation(
    "document_history",
    document_history,
    (DOCUMENT_ID,),
    http=Http(
        "GET", "/documents/{document_id}/history", "documents", "DocumentHistoryOut", errors=(404,)
    ),
)

DELETE = Operation(
    "delete",
    delete,
    (Arg("ref", Kind.REF, required=True, cli=Positional()),),
    cli=Command(
        "delete",
        """Retire a document from search, by id or by path/uri (its history is kept).

        \b
        Example:
          nexusbrain delete 12
          nexusbrain delete ~/notes/old-plan.md
        """,
    ),
)

DELETE_DOCUMENT = Operation(
    "delete_document",
    delete_document,
    (DOCUMENT_ID,),
    http=Http(
        "DELETE",
        "/documents/{document_id}",
        "documents",
        "DeletedOut",
        errors=(404, 415),
        writes=True,
    ),
)

LS = Operation(
    "ls",
    ls,
    (
        Arg(
            "prefix",
            default="",
            help="only documents whose uri starts with this (a folder's path; memory:)",
            cli=Positional(),
        ),
        Arg(
            "limit",
            Kind.INT,
            default=1000,
            schema={"minimum": 1},
            help="list at most this many, by uri",
            cli=Option(("--limit",), "List at most this many, by uri.", show_default=True),
        ),
    ),
    http=Http("GET", "/ls", "documents", "ListingOut"),
    mcp=Tool(
        "list_documents",
        "List documents",
        "The documents stored, or those whose uri starts with a prefix (a folder's path;"
        " memory: for memories): each one's uri, title, kind, chunks and last update.",
    ),
    cli=Command(
        "ls",
        """List the documents stored, or those whose uri starts with PREFIX: when each was
        last updated, its kind, its chunks, its uri and its title.

        \b
        Example:
          nexusbrain ls ~/notes/projects
          nexusbrain ls memory: --json
        """,
    ),
)

OPERATIONS = (
    DOCUMENT,
    LS,
    FIND_DOCUMENT,
    GET_DOCUMENT,
    DOCUMENT_HISTORY,
    DELETE_DOCUMENT,
    DELETE,
)
