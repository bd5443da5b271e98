"""A judged-set skeleton from a brain's export, for a person to judge.

It draws up to `n` live documents with a seeded generator and writes, for each, a query block
whose query is a ``TODO`` placeholder and whose `Relevant:` line names the document. The
parser refuses placeholders, so the file cannot be scored until someone has written each
question (and added any other relevant documents) or deleted the block.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nexusbrain.errors import InvalidInput
from nexusbrain.evals.judged import SetLabel


@dataclass(frozen=True, slots=True)
class StoredDocument:
    uri: str
    title: str
    opening: str  # the first words of its content, to remind the judge what it says


def live_documents(records: Iterable[Mapping[str, Any]]) -> list[StoredDocument]:
    return [
        StoredDocument(str(r["uri"]), str(r.get("title") or ""), _opening(str(r.get("content"))))
        for r in records
        if r.get("type") == "document" and not r.get("deleted_at")
    ]


def _clean(text: str) -> str:
    return " ".join(text.replace("#", " ").replace("-->", "").split())


def _opening(content: str, words: int = 30) -> str:
    flat = _clean(content)
    cut = flat.split(" ")[:words]
    return " ".join(cut) + (" ..." if len(flat.split(" ")) > words else "")


def scaffold(
    documents: list[StoredDocument], *, n: int, seed: int, split: SetLabel = SetLabel.DEV
) -> str:
    """The markdown skeleton (see nexusbrain.evals.judged for the format)."""
    if not documents:
        raise InvalidInput("the brain holds no document to write queries about: ingest first")
    if n < 1:
        raise InvalidInput(f"--n {n}: ask for at least one query")
    chosen = random.Random(seed).sample(documents, min(n, len(documents)))
    lines = [
        "# Judged queries",
        "",
        "> For each block: replace the TODO line with a question a person would ask that the",
        "> named document answers, add any other relevant document ids to its Relevant: line",
        "> (comma-separated), or delete the block. Label sets with a heading: dev, validation",
        f"> or final (final sets are never used for tuning). Drawn with seed {seed}.",
        "",
        f"## {split.value}",
        "",
    ]
    for document in chosen:
        lines += [
            f"<!-- {_clean(document.title)}: {document.opening} -->",
            f"TODO: a question that {document.title or document.uri!r} answers",
            f"Relevant: {document.uri}",
            "",
        ]
    return "\n".join(lines)
