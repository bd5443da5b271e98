"""BEIR folders (`corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`) and the BEIR suite.

The suite stores each corpus document through the normal markdown ingest path, as
``# title`` followed by the text, with the document id as its uri, so a result maps back to
its id directly. Results are one per document (`best_per_document`), since a long document can
be cut into several chunks. Judgments keep their grades: nDCG is graded where the qrels are
(Cranfield), binary where every grade is 1 (SciFact).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from nexusbrain.errors import InvalidInput
from nexusbrain.evals.metrics import Metric
from nexusbrain.evals.runner import JudgedQuery, calibrated, score_queries
from nexusbrain.evals.runs import EvalRun, means, run_config
from nexusbrain.evals.targets import Retrieved, SearchRequest, WorkspaceFactory
from nexusbrain.evals.trec import QrelsFormat, read_qrels
from nexusbrain.records import Progress

BATCH = 256  # documents per ingest call
AddMarkdown = Callable[[Sequence[tuple[str, str, str]]], None]
DEFAULT_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr")


@dataclass(frozen=True, slots=True)
class BeirDocument:
    id: str
    title: str
    text: str

    def markdown(self) -> str:
        title = " ".join(self.title.split())
        return f"# {title}\n\n{self.text.strip()}\n" if title else f"{self.text.strip()}\n"


def is_beir_folder(path: Path) -> bool:
    return path.is_dir() and (path / "corpus.jsonl").is_file()


def beir_splits(folder: Path) -> list[str]:
    return sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise InvalidInput(f"{str(path)!r} does not exist: a BEIR folder needs it")
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise InvalidInput(f"{path}:{number}: not JSON: {exc}") from None
            if not isinstance(value, dict) or "_id" not in value:
                raise InvalidInput(f"{path}:{number}: expected an object with an '_id'")
            yield number, value


def read_corpus(folder: Path) -> Iterator[BeirDocument]:
    for _, row in _jsonl(folder / "corpus.jsonl"):
        yield BeirDocument(str(row["_id"]), str(row.get("title") or ""), str(row.get("text", "")))


def corpus_size(folder: Path) -> int:
    with (folder / "corpus.jsonl").open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def read_queries(folder: Path) -> dict[str, str]:
    return {
        str(row["_id"]): str(row.get("text", "")) for _, row in _jsonl(folder / "queries.jsonl")
    }


def beir_queries(folder: Path, split: str) -> list[JudgedQuery]:
    """The queries judged in `qrels/<split>.tsv`, with their graded judgments."""
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        have = ", ".join(beir_splits(folder)) or "none"
        raise InvalidInput(f"{folder} has no split {split!r} (qrels/{split}.tsv); it has: {have}")
    qrels = read_qrels(qrels_path, QrelsFormat.BEIR)
    texts = read_queries(folder)
    missing = sorted(set(qrels) - set(texts))
    if missing:
        raise InvalidInput(f"{qrels_path}: queries {missing[:5]} are not in queries.jsonl")
    return [
        JudgedQuery(id=qid, text=texts[qid], judgments=qrels[qid], split=split)
        for qid in sorted(qrels, key=_natural)
    ]


def _natural(qid: str) -> tuple[int, str]:
    return (int(qid), "") if qid.isdigit() else (1 << 62, qid)


def _doc_id(result: Retrieved) -> str:
    return result.uri


def run_beir(
    folder: Path,
    split: str,
    factory: WorkspaceFactory,
    request: SearchRequest,
    metrics: Sequence[Metric],
    *,
    progress: Progress | None = None,
    trec_run: Path | None = None,
) -> EvalRun:
    """Ingest the whole corpus into a scratch workspace, then score the split's queries."""
    if not is_beir_folder(folder):
        raise InvalidInput(f"{str(folder)!r} is not a BEIR folder: it needs corpus.jsonl")
    queries = beir_queries(folder, split)
    started = time.perf_counter()
    with factory() as workspace:
        documents, empty = _ingest(folder, workspace.add_markdown, progress)
        ingested = time.perf_counter()
        lines: list[str] = []
        scores, searching = score_queries(
            workspace,
            queries,
            request,
            metrics,
            _doc_id,
            progress,
            keep=(lambda q, ranked: lines.extend(trec_lines(q.id, ranked))) if trec_run else None,
        )
        described = workspace.describe()
    if trec_run is not None:
        trec_run.write_text("".join(lines), encoding="utf-8")
    config = run_config(
        suite="beir",
        dataset=str(folder),
        split=split,
        request=request,
        target=described,
        metrics=metrics,
    )
    return EvalRun(
        suite="beir",
        split=split,
        metrics=means(scores, metrics),
        per_query=tuple(scores),
        config=config,
        counts={"documents": documents, "empty_documents_skipped": empty, "queries": len(scores)},
        seconds={
            "ingest": ingested - started,
            "search": searching,
            "total": time.perf_counter() - started,
        },
        calibration=calibrated(scores),
    )


def _ingest(folder: Path, add: AddMarkdown, progress: Progress | None) -> tuple[int, int]:
    """Store every document with text; returns (stored, skipped as empty)."""
    total = corpus_size(folder)
    batch: list[tuple[str, str, str]] = []
    done = empty = 0
    for document in read_corpus(folder):
        if not document.markdown().strip():
            empty += 1  # nothing to index: no search could ever return it
            continue
        batch.append((document.id, document.title, document.markdown()))
        if len(batch) == BATCH:
            add(batch)
            done += len(batch)
            batch = []
            if progress is not None:
                progress("ingesting", done, total - empty)
    if batch:
        add(batch)
        done += len(batch)
    if progress is not None:
        progress("ingesting", done, total - empty)
    return done, empty


def trec_lines(qid: str, ranked: Sequence[str], tag: str = "nexusbrain") -> list[str]:
    """A query's ranking as TREC run lines. The score column is `len - rank + 1`, so trec_eval
    (which sorts by score) keeps exactly our order."""
    n = len(ranked)
    return [f"{qid} Q0 {doc} {rank} {n - rank + 1} {tag}\n" for rank, doc in enumerate(ranked, 1)]
