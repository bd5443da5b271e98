"""`nexusbrain eval`: score judged sets and run the evaluation suites.

Each command parses its flags, builds the target (a brain in process, a scratch brain, or a
server over HTTP), calls one function of `nexusbrain.evals` and prints the run: readable by
default, `{"metrics", "per_query", "config", ...}` with --json. A broken --floor prints one
line per metric on stderr and exits 1, after the output.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
import orjson

from nexusbrain.cli.eval_options import (
    EXISTING_FILE,
    EXISTING_FOLDER,
    FILE,
    Scoring,
    chosen,
    floor_option,
    json_option,
    mode_option,
    output_option,
    parse_floors,
    scored,
    scoring_options,
)
from nexusbrain.cli.eval_render import finish
from nexusbrain.cli.eval_targets import (
    BrainTarget,
    HttpTarget,
    ModelChoice,
    open_brain,
    scratch_factory,
)
from nexusbrain.cli.render import Bars
from nexusbrain.errors import InvalidInput
from nexusbrain.evals import beir, known_item, locomo, longmemeval
from nexusbrain.evals.judged import read_judged_markdown, select_splits, uri_matcher
from nexusbrain.evals.locomo_to_longmemeval import convert
from nexusbrain.evals.runner import run_queries, run_trec
from nexusbrain.evals.runs import commit
from nexusbrain.evals.scaffold import live_documents, scaffold
from nexusbrain.evals.targets import SearchRequest, SearchTarget
from nexusbrain.storage.postgres import is_postgres

F = TypeVar("F", bound=Callable[..., Any])
JUDGED_METRICS = ("recall@5", "recall@10", "mrr", "ndcg@10")
TRACK = ("recall_any", "recall_all", "ndcg_any")


class EvalGroup(click.Group):
    """`nexusbrain eval SET ...` is short for `nexusbrain eval judged SET ...`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["judged", *args]
        return super().parse_args(ctx, args)


@click.group("eval", cls=EvalGroup)
def eval_group() -> None:
    """Measure retrieval quality: judged sets, BEIR, LoCoMo, LongMemEval, known items.

    `nexusbrain eval SET` scores a judged set (a markdown file, or a BEIR folder) and is
    short for `nexusbrain eval judged SET`. Every command prints which split produced each
    number, takes --json, and with --floor exits 1 when a metric falls below its floor.

    \b
    Example:
      nexusbrain eval tests/data/smoke/judged.md --corpus tests/data/smoke/docs --floor r5=0.85
      nexusbrain eval beir ../shared/datasets/scifact --split train --lexical-only
      nexusbrain eval locomo ../shared/datasets/locomo/locomo_dev.json
    """
    commit()  # name the code as loaded now, before a long run


@contextmanager
def _target(
    ctx: click.Context, api: str | None, db: str | None, corpus: Path | None, lexical: bool
) -> Iterator[tuple[SearchTarget, dict[str, float]]]:
    """The target a judged set is scored against, and the seconds spent preparing it."""
    if sum(x is not None for x in (api, db, corpus)) > 1:
        raise InvalidInput("give at most one of --api, --db and --corpus")
    if api is not None:
        if lexical:
            raise InvalidInput("--lexical-only needs a brain in process: drop --api")
        yield HttpTarget(api), {}
    elif corpus is not None:
        started = time.perf_counter()
        with scratch_factory(lexical_only=lexical)() as workspace:
            workspace.add_folder(corpus)
            yield workspace, {"ingest": time.perf_counter() - started}
    else:
        brain = open_brain(db or (ctx.obj or {}).get("db"), lexical_only=lexical)
        try:
            yield BrainTarget(brain, lexical_only=lexical), {}
        finally:
            brain.close()


_db_option = click.option(
    "--db",
    metavar="PATH_OR_URL",
    help="Database to search (default: nexusbrain's --db, $BRAIN_DB_PATH, the default).",
)
_scratch_option = click.option(
    "--db",
    "server",
    metavar="URL",
    help="Make the scratch brains in this PostgreSQL database: postgresql://…?schema=NAME"
    " gives each a schema NAME_eval_…, dropped after. [default: SQLite files in a"
    " temporary folder]",
    callback=lambda _ctx, _param, value: _server_url(value),
)


def _server_url(value: str | None) -> str | None:
    if value is not None and not is_postgres(value):
        raise InvalidInput(f"--db {value!r} must be a postgresql:// URL for scratch brains")
    return value


def models_options(func: F) -> F:
    """--embedder and --reranker: the scratch brains' models, as BRAIN_EMBEDDER and
    BRAIN_RERANKER take them (a server's URL and model still come from BRAIN_EMBED_* and
    BRAIN_RERANK_*); the run records the model ids."""
    func = click.option(
        "--reranker",
        metavar="NAME",
        help="none, quality, http or onnx:DIR (default: $BRAIN_RERANKER, else none).",
    )(func)
    return click.option(
        "--embedder",
        metavar="NAME",
        help="edge, quality, openai or onnx:DIR (default: $BRAIN_EMBEDDER, else edge).",
    )(func)


_api_option = click.option(
    "--api", metavar="URL", help="A running server, e.g. http://127.0.0.1:8765"
)


@eval_group.command("judged")
@click.argument("judged_set", type=click.Path(exists=True, path_type=Path))
@click.option("--split", "splits", multiple=True, help="Only this split (repeatable).")
@click.option(
    "--corpus",
    type=EXISTING_FOLDER,
    help="Score against a scratch brain that ingests this folder (as ingest-dir does).",
)
@_api_option
@_db_option
@scored(10)
@click.pass_context
def judged(
    ctx: click.Context,
    judged_set: Path,
    splits: tuple[str, ...],
    corpus: Path | None,
    api: str | None,
    db: str | None,
    scoring: Scoring,
) -> None:
    """Score a judged set: a markdown file of queries and their Relevant: documents, or a
    BEIR folder. Results are documents (one per document). It runs against the brain at --db,
    a scratch brain of --corpus, or a server at --api; a BEIR folder without --api or --db
    gets a scratch brain of its own corpus.

    \b
    Example:
      nexusbrain eval judged tests/data/smoke/judged.md --corpus tests/data/smoke/docs
      nexusbrain eval notes-judged.md --db notes.db --split dev --floor mrr=0.8 --json
      nexusbrain eval notes-judged.md --api http://127.0.0.1:8765
    """
    if beir.is_beir_folder(judged_set) and api is None and db is None:
        _run_beir(ctx, judged_set, _one_split(judged_set, splits), scoring)
        return
    if beir.is_beir_folder(judged_set):
        queries = beir.beir_queries(judged_set, _one_split(judged_set, splits))
        defaults: Sequence[str] = beir.DEFAULT_METRICS
    else:
        queries = select_splits(read_judged_markdown(judged_set), splits)
        defaults = JUDGED_METRICS
    metrics = scoring.metrics(defaults)
    with (
        Bars(not scoring.as_json) as bars,
        _target(ctx, api, db, corpus, scoring.lexical_only) as (target, spent),
    ):
        run = run_queries(
            "judged",
            str(judged_set),
            target,
            queries,
            scoring.request(metrics, best_per_document=True),
            metrics,
            uri_matcher(queries),
            progress=bars,
            seconds=spent,
        )
    scoring.finish(ctx, run)


def _one_split(folder: Path, splits: Sequence[str]) -> str:
    if len(splits) == 1:
        return splits[0]
    have = beir.beir_splits(folder)
    if not splits and len(have) == 1:
        return have[0]
    raise InvalidInput(f"give one --split for a BEIR folder; {folder} has: {', '.join(have)}")


@eval_group.command("beir")
@click.argument("folder", type=EXISTING_FOLDER)
@click.option("--split", required=True, help="The qrels/<split>.tsv to score.")
@click.option(
    "--trec-run",
    type=FILE,
    help="Also write the ranking as a TREC run file (for trec_eval or `eval score`).",
)
@_scratch_option
@models_options
@scored(100)
@click.pass_context
def beir_command(
    ctx: click.Context,
    folder: Path,
    split: str,
    trec_run: Path | None,
    server: str | None,
    embedder: str | None,
    reranker: str | None,
    scoring: Scoring,
) -> None:
    """Run a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv): ingest the whole
    corpus into a scratch brain, search every judged query of the split, score documents.
    Defaults: nDCG@10 (graded where the qrels are), recall@10, recall@100, MRR.

    \b
    Example:
      nexusbrain eval beir ../shared/datasets/scifact --split train --k 100
      nexusbrain eval beir ../shared/datasets/cranfield --split test --lexical-only --json
      nexusbrain eval beir ../shared/datasets/scifact --split train --db 'postgresql:///x?schema=ev'
      nexusbrain eval beir ../shared/datasets/med --split test --embedder edge --reranker quality
    """
    models = ModelChoice(embedder, reranker)
    _run_beir(ctx, folder, split, scoring, trec_run=trec_run, server=server, models=models)


def _run_beir(
    ctx: click.Context,
    folder: Path,
    split: str,
    scoring: Scoring,
    *,
    trec_run: Path | None = None,
    server: str | None = None,
    models: ModelChoice | None = None,
) -> None:
    metrics = scoring.metrics(beir.DEFAULT_METRICS)
    with Bars(not scoring.as_json) as bars:
        run = beir.run_beir(
            folder,
            split,
            scratch_factory(lexical_only=scoring.lexical_only, server=server, models=models),
            scoring.request(metrics, best_per_document=True),
            metrics,
            progress=bars,
            trec_run=trec_run,
        )
    scoring.finish(ctx, run)


@eval_group.command("locomo")
@click.argument("file", type=EXISTING_FILE)
@click.option("--split", default="dev", show_default=True, help="The split this file is.")
@click.option("--no-captions", is_flag=True, help="Leave shared photos' captions out of turns.")
@_scratch_option
@models_options
@scored(10)
@click.pass_context
def locomo_command(
    ctx: click.Context,
    file: Path,
    split: str,
    no_captions: bool,
    server: str | None,
    embedder: str | None,
    reranker: str | None,
    scoring: Scoring,
) -> None:
    """Run LoCoMo (the locomo10.json format): each conversation in a scratch brain, one chunk
    per turn, each question searched within its own conversation. Turn-level recall@5/10 and
    nDCG@10 against the evidence dia_ids, overall and per category; category 5 (adversarial)
    is reported apart, never averaged. Malformed evidence ids are normalised and counted.

    \b
    Example:
      nexusbrain eval locomo ../shared/datasets/locomo/locomo_dev.json --lexical-only
      nexusbrain eval locomo locomo_dev.json --db 'postgresql:///brains?schema=evals'
    """
    metrics = scoring.metrics(locomo.DEFAULT_METRICS)
    with Bars(not scoring.as_json) as bars:
        run = locomo.run_locomo(
            file,
            scratch_factory(
                lexical_only=scoring.lexical_only,
                server=server,
                models=ModelChoice(embedder, reranker),
            ),
            scoring.request(metrics),
            metrics,
            split=split,
            captions=not no_captions,
            progress=bars,
        )
    scoring.finish(ctx, run)


@eval_group.command("longmemeval")
@click.argument("file", type=EXISTING_FILE)
@output_option("Write the official retrieval log (JSON lines) here.", required=True)
@click.option(
    "--granularity",
    type=click.Choice([g.value for g in longmemeval.Granularity]),
    default="turn",
    show_default=True,
    help="Rank user turns, or sessions.",
)
@click.option("--split", default="dev", show_default=True, help="The split this file is.")
@mode_option("Search mode.")
@click.option("--lexical-only", is_flag=True, help="BM25 alone: the lexical baseline.")
@models_options
@floor_option("Exit 1 if METRIC (e.g. recall_any@5) falls below VALUE.")
@json_option()
@click.pass_context
def longmemeval_command(
    ctx: click.Context,
    file: Path,
    output: Path,
    granularity: str,
    split: str,
    mode: str,
    lexical_only: bool,
    embedder: str | None,
    reranker: str | None,
    floors: tuple[str, ...],
    as_json: bool,
) -> None:
    """Run LongMemEval retrieval on the official JSON, as its official code does: user turns
    only, abstention (_abs) questions skipped, recall_any/recall_all/ndcg_any at k = 1, 3, 5,
    10, 30, 50. A turn run also reports session metrics. OUT gets one official retrieval-log
    line per question.

    \b
    Example:
      nexusbrain eval longmemeval longmemeval_s.json --mode balanced --output s.jsonl
      nexusbrain eval longmemeval lme.json --output lme.jsonl --granularity session --json
    """
    known = {f"{name}@{k}" for name in TRACK for k in longmemeval.KS}
    for metric, _ in parse_floors(floors):
        if metric.key not in known:
            raise InvalidInput(f"--floor {metric.key}: LongMemEval reports {', '.join(TRACK)}")
    with Bars(not as_json) as bars, output.open("wb") as handle:
        run = longmemeval.run_longmemeval(
            file,
            scratch_factory(lexical_only=lexical_only, models=ModelChoice(embedder, reranker)),
            SearchRequest(10, mode),
            handle,
            granularity=longmemeval.Granularity(granularity),
            split=split,
            progress=bars,
        )
    finish(ctx, run, parse_floors(floors), as_json)


@eval_group.command("convert-locomo")
@click.argument("file", type=EXISTING_FILE)
@output_option(required=True)
@click.option("--no-captions", is_flag=True, help="Leave shared photos' captions out of turns.")
@json_option("Print a JSON summary.")
def convert_locomo(file: Path, output: Path, no_captions: bool, as_json: bool) -> None:
    """Convert LoCoMo conversations (locomo10.json format) into LongMemEval JSON, one question
    per LoCoMo question with evidence; adversarial ones become _abs questions.

    \b
    Example:
      nexusbrain eval convert-locomo locomo_dev.json -o locomo_lme.json
      nexusbrain eval longmemeval locomo_lme.json --output locomo_lme.jsonl
    """
    questions = convert(locomo.load_locomo(file), captions=not no_captions)
    output.write_bytes(orjson.dumps(questions))
    abstention = sum(1 for q in questions if q["question_id"].endswith("_abs"))
    summary = {"output": str(output), "questions": len(questions), "abstention": abstention}
    if as_json:
        click.echo(orjson.dumps(summary).decode())
    else:
        click.echo(f"wrote {len(questions)} questions ({abstention} _abs) to {output}")


@eval_group.command("known-item")
@_db_option
@_api_option
@click.option("--n", "n", default=120, show_default=True, help="How many queries.")
@click.option("--seed", default=0, show_default=True, help="Seed for choosing chunks.")
@scored(10)
@click.pass_context
def known_item_command(
    ctx: click.Context,
    db: str | None,
    api: str | None,
    n: int,
    seed: int,
    scoring: Scoring,
) -> None:
    """Known-item regression on a brain's own chunks: each query is a 200-character excerpt
    of a stored chunk, and its relevant set is the chunk and its near-duplicates (word overlap
    >= 0.5 in the same document). Results are chunks.

    \b
    Example:
      nexusbrain eval known-item --db notes.db --n 120 --seed 7 --floor r10=0.9
    """
    metrics = scoring.metrics(known_item.DEFAULT_METRICS)
    with (
        Bars(not scoring.as_json) as bars,
        _target(ctx, api, db, None, scoring.lexical_only) as (target, _),
    ):
        run = known_item.run_known_item(
            target,
            scoring.request(metrics),
            metrics,
            n=n,
            seed=seed,
            source=api or str(db or "default brain"),
            progress=bars,
        )
    scoring.finish(ctx, run)


@eval_group.command("scaffold")
@_db_option
@_api_option
@output_option("Write the skeleton here (default: stdout).")
@click.option("--n", "n", default=30, show_default=True, help="How many documents to draw.")
@click.option("--seed", default=0, show_default=True, help="Seed for drawing them.")
@click.option(
    "--split",
    type=click.Choice(["dev", "validation", "final"]),
    default="dev",
    show_default=True,
    help="The label of the set.",
)
@click.pass_context
def scaffold_command(
    ctx: click.Context,
    db: str | None,
    api: str | None,
    output: Path | None,
    n: int,
    seed: int,
    split: str,
) -> None:
    """Write a judged-set skeleton from a brain's export, for a person to judge: one TODO
    query per drawn document, with its Relevant: line filled in.

    \b
    Example:
      nexusbrain eval scaffold --db notes.db --n 40 -o notes-judged.md
      nexusbrain eval scaffold --api http://127.0.0.1:8765 --split validation
    """
    from nexusbrain.evals.judged import SetLabel

    with _target(ctx, api, db, None, False) as (target, _):
        text = scaffold(
            live_documents(target.export_records()), n=n, seed=seed, split=SetLabel(split)
        )
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {text.count('TODO: ')} query blocks to {output}", err=True)


@eval_group.command("score")
@click.option(
    "--run",
    "run_file",
    required=True,
    type=EXISTING_FILE,
    help="TREC run file.",
)
@click.option(
    "--qrels",
    required=True,
    type=EXISTING_FILE,
    help="TREC qrels, or BEIR qrels tsv.",
)
@scoring_options
@click.pass_context
def score_command(
    ctx: click.Context,
    run_file: Path,
    qrels: Path,
    metric_names: tuple[str, ...],
    floors: tuple[str, ...],
    as_json: bool,
) -> None:
    """Score a TREC run file against qrels, the way trec_eval (via ir-measures) does.

    \b
    Example:
      nexusbrain eval score --run bm25.run --qrels qrels.test.txt --metrics ndcg@10,recall@100
    """
    metrics = chosen(beir.DEFAULT_METRICS, metric_names, floors)
    finish(ctx, run_trec(run_file, qrels, metrics), parse_floors(floors), as_json)
