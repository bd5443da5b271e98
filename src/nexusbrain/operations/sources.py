"""Sources: the named folders the brain keeps in sync (brain/sources.py). Listing them, and
showing one, is asked over every interface; adding, syncing and removing one read and watch
this machine's folders, so the command line does them in its own process (as `ingest-dir` and
`delete` do), and a running server follows the change within a second (`serve` watches every
source)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nexusbrain.operations.args import Arg, Kind, Option, Positional
from nexusbrain.operations.spec import Command, Http, Operation, Tool, View

if TYPE_CHECKING:
    from nexusbrain.brain import Brain

GROUP = """Named folders kept in sync: each one's files are ingested, re-read when they change
    (by `sources update`, and by `serve` as they change) and retired when they go.

    \b
    Example:
      nexusbrain sources add ~/notes --name notes --exclude 'drafts/*'
      nexusbrain sources list
      nexusbrain sources show notes
      nexusbrain sources remove notes
    """

NAME = Arg(
    "name", required=True, min_length=1, example="notes", help="the source's name", cli=Positional()
)


def sources_list(brain: Brain) -> View:
    from nexusbrain import views

    return views.sources(brain.sources.all())


def sources_show(brain: Brain, *, name: str) -> View:
    from nexusbrain import views

    return views.source(brain.sources.show(name))


def sources_add(
    brain: Brain,
    *,
    folder: str,
    name: str | None,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    domain: str | None,
) -> View:
    from nexusbrain import views

    status, report = brain.sources.add(
        folder, name=name, include=include, exclude=exclude, domain=domain
    )
    return views.source_sync(status, report)


def sources_update(brain: Brain, *, name: str | None) -> View:
    from nexusbrain import views

    return {"synced": [views.source_sync(*each) for each in brain.sources.update(name)]}


def sources_remove(brain: Brain, *, name: str) -> View:
    from nexusbrain import views

    return views.source_removal(*brain.sources.remove(name))


SOURCES_LIST = Operation(
    "sources_list",
    sources_list,
    http=Http("GET", "/sources", "documents", "SourcesOut"),
    mcp=Tool(
        "list_sources",
        "List sources",
        "The folders kept in sync: each one's name, root folder, globs, files and chunks, when"
        " it was last synced and the files it could not read.",
    ),
    cli=Command(
        "sources list",
        """List the sources: each one's name, files, chunks, last sync, files it could not
        read, and its folder.

        \b
        Example:
          nexusbrain sources list
          nexusbrain sources list --json
        """,
    ),
)

SOURCES_SHOW = Operation(
    "sources_show",
    sources_show,
    (NAME,),
    http=Http("GET", "/sources/{name}", "documents", "SourceOut", errors=(404,)),
    mcp=Tool(
        "get_source",
        "Get a source",
        "One folder kept in sync, by name: its root folder, globs and domain, its files and"
        " chunks now, when it was added and last synced, and the files it could not read.",
    ),
    cli=Command(
        "sources show",
        """Show one source: its folder, globs and domain, its files and chunks now, when it
        was added and last synced, and the files its last sync could not read.

        \b
        Example:
          nexusbrain sources show notes
          nexusbrain sources show notes --json
        """,
    ),
)

SOURCES_ADD = Operation(
    "sources_add",
    sources_add,
    (
        Arg("folder", required=True, cli=Positional()),
        Arg("name", cli=Option(("--name",), "Its name (default: the folder's).")),
        Arg(
            "include",
            Kind.TEXTS,
            default=(),
            cli=Option(
                ("--include",),
                "Only files this glob matches ('*.md': by name at any depth; 'docs/*': by"
                " path from the folder); repeat for more.",
            ),
        ),
        Arg(
            "exclude",
            Kind.TEXTS,
            default=(),
            cli=Option(("--exclude",), "Not the files this glob matches; repeat for more."),
        ),
        Arg("domain", cli=Option(("--domain",), "Domain to file its documents under.")),
    ),
    cli=Command(
        "sources add",
        """Add FOLDER as a source and ingest it: markdown, text, reStructuredText, AsciiDoc,
        HTML, PDF and source code. `sources update` and `serve` keep it in sync.

        \b
        Example:
          nexusbrain sources add ~/notes
          nexusbrain sources add ~/work/docs --name docs --include '*.md' --include '*.pdf'
        """,
    ),
    stores=True,
)

SOURCES_UPDATE = Operation(
    "sources_update",
    sources_update,
    (NAME.replace(required=False, default=None, help="only this source (default: all)"),),
    cli=Command(
        "sources update",
        """Sync a source with its folder, or every source: new and changed files are
        ingested, files gone are retired.

        \b
        Example:
          nexusbrain sources update
          nexusbrain sources update notes --json
        """,
    ),
)

SOURCES_REMOVE = Operation(
    "sources_remove",
    sources_remove,
    (NAME,),
    cli=Command(
        "sources remove",
        """Stop keeping a source: its documents leave search, `ls` and `stats` (they are
        retired: their history stays readable with `get ID`).

        \b
        Example:
          nexusbrain sources remove notes
        """,
    ),
)

OPERATIONS = (SOURCES_LIST, SOURCES_SHOW, SOURCES_ADD, SOURCES_UPDATE, SOURCES_REMOVE)
