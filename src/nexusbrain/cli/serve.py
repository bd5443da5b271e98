"""The servers: `serve` (HTTP, the web UI, the API docs, and MCP at /mcp) and `mcp` (MCP over
stdio). Loaded only when one runs (cli/main.py's LAZY)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from nexusbrain import __version__
from nexusbrain.cli import render
from nexusbrain.cli.answers import brain_of


@click.command()
@click.option("--host", help="Address to listen on. Default: $BRAIN_BIND_HOST, else 127.0.0.1.")
@click.option("--port", type=int, help="Port (0: any free one). Default: $BIND_PORT, else 8765.")
@click.option("--log-level", default="info", show_default=True)
@click.option("--mcp", is_flag=True, help="Also serve MCP (streamable HTTP) at /mcp.")
@click.option(
    "--watch",
    "folders",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Add this folder as a source (if it is not one) and keep it in sync, as every"
    " source is; repeat for more.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Processes answering requests, so that concurrent searches use every core. "
    "Default: one per core, at most 4.",
)
@click.pass_context
def serve(
    ctx: click.Context,
    host: str | None,
    port: int | None,
    log_level: str,
    mcp: bool,
    folders: tuple[Path, ...],
    workers: int | None,
) -> None:
    """Start the HTTP API, the web UI (/app) and the API docs (/docs). Binding beyond
    loopback needs BRAIN_API_TOKEN.

    While it runs, search, recall, get, explain, add, stats and graph on this brain send it
    one request each instead of loading the brain themselves. With --mcp, agents also reach
    the brain over MCP at /mcp, behind the same token.

    \b
    Example:
      nexusbrain serve --port 8765
      curl 'http://127.0.0.1:8765/search?q=deploy+failure'
      nexusbrain serve --mcp --watch ~/notes
      nexusbrain serve --workers 2
    """
    import threading

    from nexusbrain.api.server import run

    brain = brain_of(ctx, create=True)
    for folder in folders:  # each becomes a source, if it is not one already
        brain.sources.keep(folder)
    stop = threading.Event()
    watcher = threading.Thread(  # every source, and those added while it runs
        target=brain.sources.watch,
        kwargs={"on_sync": render.file_changes, "stop": stop},
        name="nexusbrain-sources",
        daemon=True,
    )

    def say_where(url: str) -> None:
        click.echo(f"nexusbrain {__version__}: serving {brain.stats().db_path} at {url}")
        click.echo(f"  web UI    {url}/app")
        click.echo(f"  API docs  {url}/docs")
        if mcp:
            click.echo(f"  MCP       {url}/mcp")
        for source in brain.sources.all():
            click.echo(f"  watching  {source.source.root}")
        watcher.start()

    try:
        run(
            brain,
            host=host,
            port=port,
            log_level=log_level,
            mcp=mcp,
            on_listen=say_where,
            workers=workers,
        )
    finally:
        stop.set()
        if watcher.is_alive():
            watcher.join(timeout=10)


@click.command()
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="warning",
    show_default=True,
    help="Logs go to stderr.",
)
@click.pass_context
def mcp(ctx: click.Context, log_level: str) -> None:
    """Serve MCP over stdio, for an agent that starts nexusbrain as its memory server.

    stdout carries only the protocol; logs go to stderr. Stops when the client closes stdin.
    When a server started with --mcp is running for the brain, this relays to it (one warm
    brain for every agent) instead of loading the brain; --local loads it all the same.

    \b
    Example:
      nexusbrain --db ~/brain.db mcp
    """
    import logging

    logging.basicConfig(stream=sys.stderr, level=log_level.upper(), force=True)
    if not ctx.obj["local"] and ctx.obj.get("brain") is None:
        from nexusbrain.discovery import locate

        found = locate(ctx.obj["db"])
        if found is not None and found.mcp is not False:
            from nexusbrain.mcp_server.relay import relay

            relay(found.url, found.token, sys.stdin.buffer, sys.stdout.buffer)
            return
    from nexusbrain.mcp_server import serve_stdio

    with contextlib.redirect_stdout(sys.stderr):  # nothing but protocol may reach stdout
        brain = brain_of(ctx, create=True)
        brain.admin.embed_missing(wait=False)  # as `serve` does: after a model change or an import
    serve_stdio(brain)
