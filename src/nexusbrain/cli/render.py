"""Human-readable output for the CLI, from the JSON views (views.py) that --json prints: the
same view from the brain in this process or from a running server prints the same text.
RENDER names the printer of each answering command's operation (operations/); one without
prints its JSON."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

import click

from nexusbrain.errors import InvalidInput
from nexusbrain.summaries import (
    also_in,
    origin,
    pages_of_lines,
    pages_text,
    recall_summary,
    relationship_line,
)
from nexusbrain.summaries import count as _count

if TYPE_CHECKING:
    from nexusbrain.ingest.directory import DirectoryReport

View = Mapping[str, Any]  # a JSON view (views.py), from this process or from a server


class _Bar:
    """A progress bar on stderr, only when stderr is a terminal and output is for people."""

    def __init__(self, label: str, *, enabled: bool = True) -> None:
        self.label = label
        self.enabled = enabled and sys.stderr.isatty()
        self._bar: Any = None
        self._done = 0

    def update(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            self._bar = click.progressbar(length=total, label=self.label, file=sys.stderr)
            self._bar.__enter__()
        self._bar.update(done - self._done)
        self._done = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


class Bars:
    """A `Progress`: one bar per phase (ingesting, embedding, searching...) on stderr, only
    when stderr is a terminal and output is for people."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.phase: str | None = None
        self.bar: _Bar | None = None

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase != self.phase:
            self.close()
            self.phase, self.bar = phase, _Bar(phase, enabled=self.enabled)
        assert self.bar is not None
        self.bar.update(done, total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> Bars:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def directory_report(report: DirectoryReport, brain: str) -> None:
    """An ingest's summary: what changed, into which brain, and what was left out."""
    click.echo(
        f"{report.root}: {report.added} added, {report.updated} updated, "
        f"{report.unchanged} unchanged, {report.deleted} deleted,"
        f" {_count(report.chunks, 'chunk')} written in {report.seconds:.2f}s"
    )
    hidden = (
        f"; {_count(report.hidden, 'hidden file or folder', 'hidden files and folders')}"
        " skipped (names that begin with '.')"
        if report.hidden
        else ""
    )
    click.echo(f"into the brain at {brain}{hidden}")
    if report.errors:
        click.echo(f"{len(report.errors):,} skipped:", err=True)
    for problem in report.errors:
        click.echo(f"  {problem.path}: {problem.reason}", err=True)


def file_changes(report: DirectoryReport) -> None:
    """One line per file a sync changed (and per file it could not read), as it happens."""
    for change in report.changes:
        chunks = f" ({change.chunks} chunk{'s' if change.chunks != 1 else ''})"
        click.echo(f"{change.status.value} {change.path}{chunks if change.chunks else ''}")
    for problem in report.errors:
        click.echo(f"error: {problem.path}: {problem.reason}", err=True)


def _snippet(text: str, width: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def hits(
    found: Sequence[View],
    *,
    explain: bool = False,
    match: str | None = None,
    lists: Mapping[str, str] | None = None,
) -> None:
    """A search's hits (views.hit), one heading line and a snippet each, after how good a
    match they are (the view's `match`). `lists` names each list in words (the view's)."""
    if match:
        click.echo(match)
    elif not found:
        click.echo("no hits")
    trace = found[0]["trace"] if found else {}
    for note in trace.get("notes", ()):
        click.echo(f"note: {note}")
    coverage = trace.get("dense_coverage")
    if coverage is not None:
        click.echo(
            f"note: {coverage['embedded']:,} of {coverage['chunks']:,} chunks have their vectors"
            " so far; until the rest do, BM25 alone ranks them"
        )
    for hit in found:
        heading = " > ".join(hit["heading_path"])
        click.echo(f"{hit['rank']:>3}. {origin(hit)}" + (f"  [{heading}]" if heading else ""))
        click.echo(f"     {_ranked_in(hit['trace'], lists or {})}")
        click.echo(f"     {_snippet(hit['text'])}")
        if hit["also_in"]:
            click.echo(f"     {also_in(hit)}")
        if explain:
            click.echo(f"     fused score {hit['score']:.4f} ({hit['trace']['fusion_method']})")
            click.echo(_trace(hit["trace"]))


def _ranked_in(trace: View, names: Mapping[str, str]) -> str:
    """Where the hit ranked in each list ("keywords #1, meaning #4"): the fused score is a sum
    of z-scores or an RRF sum, meaningful only against the other hits of this search, so it is
    shown with --explain (and is in --json), and how good a match the hits are is the line
    above them."""
    lists = [
        f"{names.get(r['retriever'], r['retriever'])} #{r['rank']}"
        for r in trace["retrievers"]
        if r["rank"]
    ]
    rerank = trace.get("rerank")
    moved = ""
    if rerank and rerank["rank_before"] != rerank["rank_after"]:
        moved = f", reranked from #{rerank['rank_before']}"
    said = f"; said on {trace['day']}, as asked" if trace.get("day") else ""
    return ("found by " + ", ".join(lists) if lists else "found by no list's top") + moved + said


def _trace(trace: View) -> str:
    lines = [
        f"     {r['retriever']}: rank {r['rank']}, score {r['score']:.4f}"
        for r in trace["retrievers"]
    ]
    lines += [_fusion_line(f, trace["fusion_method"]) for f in trace.get("fusion", ())]
    if trace.get("prf_terms"):
        lines.append(f"     prf terms: {', '.join(trace['prf_terms'])}")
    coverage = trace.get("dense_coverage")
    if coverage and not coverage["has_vector"]:
        lines.append("     dense: no vector yet, ranked by BM25 alone")
    if trace.get("rerank"):
        r = trace["rerank"]
        lines.append(
            f"     rerank ({r['model']}): {r['rank_before']} -> {r['rank_after']}, {r['score']:.4f}"
        )
    return "\n".join(lines)


def _fusion_line(f: View, method: str) -> str:
    weight, rank, contribution = f["weight"], f["rank"], f["contribution"]
    if method == "rrf" and rank is not None:
        k = round(weight / contribution) - rank
        return f"     rrf {f['retriever']}: {weight:g}/({k}+{rank}) = {contribution:.5f}"
    where = f"rank {rank}" if rank is not None else "not in its list, scored"
    return (
        f"     z {f['retriever']}: {weight:g} × z {f['z'] or 0.0:+.3f} ({where})"
        f" = {contribution:+.5f}"
    )


def recall(result: View) -> None:
    """A recall (views.recall): what it holds, then the hits, each with its citation."""
    click.echo(f"{recall_summary(result)}.")
    if result.get("match"):
        click.echo(result["match"])
    for hit in result["hits"]:
        cut = ", cut to fit" if hit["truncated"] else ""
        click.echo(f"\n[{hit['rank']}] {origin(hit)} (revision {hit['revision'][:12]}{cut})")
        if hit["also_in"]:
            click.echo(f"({also_in(hit)})")
        click.echo(hit["text"])


def import_summary(result: View) -> None:
    """An import's counts (views.import_result) in words."""
    new = f"{_count(result['documents'], 'new document')} and {_count(result['chunks'], 'chunk')}"
    parts = [f"imported {new}"]
    if result["updated"]:
        parts.append(f"{_count(result['updated'], 'document')} updated to the imported version")
    if result["kept"]:
        kept = _count(result["kept"], "document")
        parts.append(f"{kept} newer here kept (imported versions kept as history)")
    if result["unchanged"]:
        parts.append(f"{_count(result['unchanged'], 'document')} already present")
    if result["entities"] or result["relationships"]:
        entities = _count(result["entities"], "entity", "entities")
        parts.append(f"{entities} and {_count(result['relationships'], 'fact version')} added")
    if result["duplicates"]:
        parts.append(f"{_count(result['duplicates'], 'fact')} already held")
    if result["retired"]:
        parts.append(f"{_count(result['retired'], 'fact')} of updated notes retired")
    if result["kept_facts"]:
        parts.append(f"{_count(result['kept_facts'], 'fact')} left to the newer notes here")
    click.echo("; ".join(parts))


def document(doc: View, lines: tuple[int, int] | None, chunks: bool) -> None:
    """A document (views.document), whole or only some lines (with the pages they are on, for
    a PDF), and its chunks if asked for."""
    content = doc["content"]
    if lines is not None:
        every = content.splitlines()
        if lines[0] > len(every):  # else an empty answer looks like an empty document
            raise InvalidInput(
                f"--lines {lines[0]}-{lines[1]} is past the end of {doc['uri']}, which has"
                f" {_count(len(every), 'line')}: ask for lines 1-{len(every)} or fewer"
            )
        content = "\n".join(every[lines[0] - 1 : lines[1]])
    state = f" (retired {doc['deleted_at'][:10]})" if doc["deleted_at"] else ""
    pages = pages_of_lines(doc.get("chunks", ()), *lines) if lines is not None else []
    on = f"  {pages_text(pages)}" if pages else ""
    click.echo(
        f"# {doc['title']}{state}\n{doc['uri']}  id {doc['id']}  revision {doc['revision'][:12]}"
        + on
    )
    click.echo(f"\n{content}")
    for chunk in doc.get("chunks", ()) if chunks else ():
        span, page = chunk["span"], chunk["meta"].get("page")
        click.echo(
            f"  chunk {chunk['ordinal']}: {f'page {page}, ' if page is not None else ''}"
            f"lines {span['line_start']}-{span['line_end']}, "
            f"chars {span['char_start']}-{span['char_end']}  {' > '.join(chunk['heading_path'])}"
        )


def listing(value: View) -> None:
    """Documents (views.listing): a line each, then how many there are under the prefix."""
    documents, prefix = value["documents"], value["prefix"]
    if documents:
        wide = min(80, max(len(d["uri"]) for d in documents))
        click.echo(f"{'updated (UTC)':<16}  {'kind':<12}  chunks  {'uri':<{wide}}  title")
    for d in documents:
        when = f"{d['updated_at'][:10]} {d['updated_at'][11:16]}"
        click.echo(f"{when}  {d['kind']:<12}  {d['chunks']:>6}  {d['uri']:<{wide}}  {d['title']}")
    under = f" under {prefix}" if prefix else ""
    shown = (
        f", the first {len(documents):,} shown (--limit)" if value["total"] > len(documents) else ""
    )
    click.echo(f"{_count(value['total'], 'document')}{under}{shown}")


def sources(value: View) -> None:
    """Sources (views.sources): a line each, then the files each could not read last time."""
    found = value["sources"]
    if not found:
        click.echo("no sources: add one with `nexusbrain sources add FOLDER`")
        return
    wide = max(4, *(len(s["name"]) for s in found))
    click.echo(
        f"{'name':<{wide}}  {'files':>6}  {'chunks':>7}  {'last sync (UTC)':<16}  errors  root"
    )
    for s in found:
        when = _minute(s["synced_at"])
        click.echo(
            f"{s['name']:<{wide}}  {s['files']:>6,}  {s['chunks']:>7,}  {when:<16}  "
            f"{len(s['errors']):>6}  {s['root']}{_globs(s)}"
        )
    for s in found:
        for error in s["errors"]:
            click.echo(f"  {s['name']}: {error['path']}: {error['reason']}", err=True)


def _minute(time: str | None) -> str:
    """A time of a view (ISO 8601, UTC) to the minute, or "never"."""
    return f"{time[:10]} {time[11:16]}" if time else "never"


def _globs(source: View) -> str:
    globs = [f"+{g}" for g in source["include"]] + [f"-{g}" for g in source["exclude"]]
    return f"  ({' '.join(globs)})" if globs else ""


def source(value: View) -> None:
    """One source (views.source): its settings, counts and syncs, then the files its last
    sync could not read."""
    click.echo(f"{value['name']} ({value['root']}){_globs(value)}")
    if value["domain"] is not None:
        click.echo(f"  domain: {value['domain']}")
    click.echo(f"  {_count(value['files'], 'file')}, {_count(value['chunks'], 'chunk')}")
    added, synced = _minute(value["created_at"]), _minute(value["synced_at"])
    click.echo(f"  added {added}, last synced {synced} (UTC)")
    click.echo(f"  {_count(len(value['errors']), 'file')} not read")
    for error in value["errors"]:
        click.echo(f"  {error['path']}: {error['reason']}", err=True)


def source_sync(value: View) -> None:
    """A source after a sync (views.source_sync): what the sync did, and what it skipped."""
    source, sync = value["source"], value["sync"]
    click.echo(
        f"{source['name']} ({source['root']}): {sync['added']} added, {sync['updated']} updated,"
        f" {sync['unchanged']} unchanged, {sync['deleted']} deleted, now"
        f" {_count(source['files'], 'file')} and {_count(source['chunks'], 'chunk')},"
        f" synced in {sync['seconds']:.2f}s"
    )
    for error in sync["errors"]:
        click.echo(f"  skipped {error['path']}: {error['reason']}", err=True)


def source_syncs(value: View) -> None:
    for each in value["synced"]:
        source_sync(each)
    if not value["synced"]:
        click.echo("no sources: add one with `nexusbrain sources add FOLDER`")


def stats(value: Mapping[str, Any]) -> None:
    for key, item in value.items():
        click.echo(f"{key:>18}: {item}")


_VERDICTS = {
    "retired": "the document is retired: it is no longer searched",
    "filtered": "a filter excludes it",
    "not_a_candidate": "no retriever ranked it within the search's depth",
    "below_floor": "its fused score is under the mode's share of the best one",
    "withheld": "the mode returns nothing when nothing matches well, and this search did not",
    "below_k": "it ranked below the top k",
    "copy": "its text is a hit's, shown once",
}


def explanation(value: Mapping[str, Any]) -> None:
    head = f"{value['uri']} (document {value['document_id']})"
    if value["returned"]:
        click.echo(f"{head}: hit {value['rank']} of the top {value['k']} ({value['mode']})")
    else:
        why = _VERDICTS[value["verdict"]]
        if value.get("copy_of") is not None:
            why += f" (chunk {value['copy_of']}, whose hit lists this one under also in)"
        click.echo(f"{head}: not in the top {value['k']} ({value['mode']}): {why}")
    for name in value["excluded_by"]:
        click.echo(f"  excluded by the filter {name}")
    if value["chunk_id"] is not None:
        click.echo(f"  chunk: {value['chunk_id']}")
    fused = value["fused_rank"]
    click.echo(f"  fused rank: {fused if fused else 'not in the first ' + str(value['depth'])}")
    for item in value["lists"]:
        where = f"rank {item['rank']}, score {item['score']:.4f}" if item["rank"] else "absent"
        click.echo(f"  {item['label']:>18}: {where}")


def describe(r: View, *, cite: bool = True) -> str:
    """graph.model.describe, from a relationship's view: 'alice manages bob (valid
    2020-01-01..2023-01-01) [relationship 7]' (the id if cite)."""
    start, end = _short(r["valid_at"]), _short(r["invalid_at"])
    return relationship_line(r["from"], r["type"], r["to"], start, end, r["id"], cite=cite)


def _short(value: str | None) -> str:
    """A view's time (UTC, to the microsecond) as its date when it is midnight."""
    if value is None:
        return ""
    return value[:10] if value.endswith("T00:00:00.000000+00:00") else value


def _said(value: str) -> str:
    """A view's time as Python prints the datetime: 2026-01-02 03:04:05+00:00."""
    return str(datetime.fromisoformat(value))


def graph_ingest(result: View) -> None:
    for o in result["relationships"]:
        created = result["dry_run"] and o["id"] is None
        label = "would be created" if created else f"relationship {o['id']}"
        click.echo(f"{o['status']}: {describe(o, cite=False)} [{label}]")
        for r in o["retired"]:
            after = f", replaced by {r['replaced_by']}" if r["replaced_by"] else ""
            click.echo(f"  retires {r['id'] or 'the version above'} ({r['reason']}{after})")
    for e in result["entities"]:
        click.echo(f"{e['status']}: entity {e['name']!r}")
    if result["dry_run"]:
        click.echo("dry run: nothing was changed")


def relations(value: View) -> None:
    if not value["relationships"]:
        click.echo("no relations")
    for r in value["relationships"]:
        click.echo(describe(r))


def history(value: View) -> None:
    for v in value["versions"]:
        state = (
            "current" if v["current"] else f"retired {_said(v['superseded_at'])} ({v['reason']})"
        )
        click.echo(
            f"{v['id']}: {describe(v, cite=False)}, known from {_said(v['created_at'])}, {state}"
        )


def traversal(value: View) -> None:
    """Each path in full: its edges are the hops of the paths it extends (paths are found
    breadth first, so every shorter path is listed before the paths that extend it)."""
    hops = value["hops"]
    if not hops:
        click.echo(f"no current edges from {value['from']['name']!r}")
    edges = {hop["relationship"]["id"]: hop["relationship"] for hop in hops}
    for hop in hops:
        steps = " -> ".join(describe(edges[i], cite=False) for i in hop["path"])
        ids = ", ".join(str(i) for i in hop["path"])
        click.echo(f"{steps} [relationship{'s' if len(hop['path']) > 1 else ''} {ids}]")
    if value["truncated"]:
        click.echo(f"(stopped after {len(hops)} paths)")


def models(value: View) -> None:
    """`nexusbrain models`: the models in use, then the vectors per model."""
    embedder, reranker = value["embedder"], value["reranker"]
    if embedder is None:
        click.echo("embedder: none (lexical only)")
    else:
        click.echo(
            f"embedder: {embedder['profile']} {embedder['model_id']} ({embedder['dim']} dimensions,"
            f" {embedder['where']}, embeds {embedder['embedding']})"
        )
    if reranker is None:
        click.echo("reranker: none")
    else:
        click.echo(f"reranker: {reranker['kind']} {reranker['model_id']} ({reranker['where']})")
    if value["search_model"] is not None:
        covered, chunks = value["covered"], value["chunks"]
        share = f" ({covered / chunks:.0%})" if chunks else ""
        click.echo(
            f"search uses {value['search_model']}: {covered:,} of {chunks:,} chunks have its"
            f" vector{share}"
        )
    switch = value["switch"]
    if switch is not None:
        click.echo(
            f"switching to {switch['to']}: {switch['embedded_chunks']:,} of"
            f" {switch['chunks']:,} chunks embedded; search keeps {switch['from']} until then"
        )
    for item in value["vectors"]:
        click.echo(
            f"  {item['model']}: {_count(item['vectors'], 'vector')}, {item['chunks']:,} chunks"
        )


def model_checks(value: View) -> None:
    """`nexusbrain models check`: one line a model."""
    if not value["checks"]:
        click.echo("no model to check: the brain is lexical only and has no reranker")
    for check in value["checks"]:
        took = f"{check['seconds'] * 1000:.0f} ms"
        if check["ok"]:
            dim = f", {check['dim']} dimensions" if check["dim"] is not None else ""
            click.echo(f"ok    {check['role']} {check['model_id']}: {took}{dim}")
        else:
            click.echo(f"FAIL  {check['role']} {check['model_id']} ({took}): {check['error']}")


Printer = Callable[[View, Mapping[str, Any]], None]  # a view, and the command's own options

RENDER: dict[str, Printer] = {
    "search": lambda view, options: hits(
        view["hits"], explain=options["explain"], match=view.get("match"), lists=view["lists"]
    ),
    "recall": lambda view, _: recall(view),
    "explain": lambda view, _: explanation(view),
    "document": lambda view, options: document(view, options["lines"], options["chunks"]),
    "ls": lambda view, _: listing(view),
    "add": lambda view, _: click.echo(f"{view['status']}: document {view['id']}"),
    "delete": lambda view, _: click.echo(
        f"{view['status']}: document {view['id']} ({view['uri']})"
    ),
    "stats": lambda view, _: stats(view),
    "sources_list": lambda view, _: sources(view),
    "sources_show": lambda view, _: source(view),
    "sources_add": lambda view, _: source_sync(view),
    "sources_update": lambda view, _: source_syncs(view),
    "sources_remove": lambda view, _: click.echo(
        f"removed {view['name']} ({view['root']}): {_count(view['retired'], 'document')} retired"
    ),
    "ingest": lambda view, _: graph_ingest(view),
    "relations": lambda view, _: relations(view),
    "history": lambda view, _: history(view),
    "traverse": lambda view, _: traversal(view),
    "models": lambda view, _: models(view),
    "models_check": lambda view, _: model_checks(view),
}
