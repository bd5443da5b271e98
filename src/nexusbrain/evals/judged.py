"""Judged query sets: the hand-written markdown format, and set hygiene.

The markdown format, one query per block (blocks are separated by blank lines)::

    # Ops runbooks: judged queries          <- headings are free text ...

    ## dev                                  <- ... except a heading that is a set label
                                               (dev, validation or final): it labels the
                                               queries below it, up to the next label
    How do I rotate the signing keys?       <- the query (may wrap over several lines;
    Relevant: keys.md, vault.md                a leading "Q:" is dropped), then one line of
                                               comma-separated relevant document ids
    Id: rotate-keys                         <- optional; queries are q1, q2 ... in file order

    > a note for the judges                 <- quote lines and <!-- comments --> are ignored

A relevant id matches a document whose uri is the id, or ends with "/" followed by the id, so
ids can be paths relative to the ingested folder. Queries above the first label are
"unlabeled". A block without a `Relevant:` line, a query still starting with "TODO" (as
`eval scaffold` writes them), an empty `Relevant:` line or a repeated id is an error naming its
line: a judged set never drops a query silently.

Set hygiene: a set labelled final can be scored, but `require_tunable` refuses it, and every
command that tunes settings calls it first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from enum import StrEnum
from pathlib import Path

from nexusbrain.errors import InvalidInput
from nexusbrain.evals.runner import IdOf, JudgedQuery
from nexusbrain.evals.targets import Retrieved

UNLABELED = "unlabeled"

_HEADING = re.compile(r"#{1,6}\s+(.*?)\s*#*\s*$")
_FIELD = re.compile(r"(relevant|id)\s*:\s*(.*)$", re.IGNORECASE)
_QUERY_PREFIX = re.compile(r"(?:q|query)\s*:\s*", re.IGNORECASE)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


class SetLabel(StrEnum):
    DEV = "dev"
    VALIDATION = "validation"
    FINAL = "final"


_LABELS = frozenset(label.value for label in SetLabel)


def require_tunable(split: str, *, command: str = "this command") -> None:
    """Refuse a final set for tuning. Call it from every command that chooses settings by their
    scores; scoring a final set is fine."""
    if split.strip().lower() == SetLabel.FINAL:
        raise InvalidInput(
            f"{command} tunes settings, and split {split!r} is marked final: final sets are for "
            "reporting only. Tune on dev or validation, then score final once."
        )


def tunable(queries: Iterable[JudgedQuery], *, command: str = "this command") -> list[JudgedQuery]:
    """`queries`, after checking that none belongs to a final set."""
    chosen = list(queries)
    for split in sorted({q.split for q in chosen}):
        require_tunable(split, command=command)
    return chosen


def read_judged_markdown(path: Path) -> list[JudgedQuery]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read judged set {str(path)!r}: {exc}") from None
    return parse_judged_markdown(text, source=str(path))


def parse_judged_markdown(text: str, *, source: str = "judged set") -> list[JudgedQuery]:
    """Queries of a judged markdown set, in file order (see the module docstring)."""
    lines = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text).splitlines()
    queries: list[JudgedQuery] = []
    split = UNLABELED
    block: list[tuple[int, str]] = []
    for number, raw in enumerate([*lines, ""], start=1):
        line = raw.strip()
        heading = _HEADING.fullmatch(line)
        if line and not heading and not line.startswith(">"):
            block.append((number, line))
            continue
        if block:
            queries.append(_query(block, split, len(queries) + 1, source))
            block = []
        if heading and heading.group(1).lower() in _LABELS:
            split = heading.group(1).lower()
    _check_unique(queries, source)
    if not queries:
        raise InvalidInput(f"{source}: holds no query (a query line, then 'Relevant: ids')")
    return queries


def _query(block: list[tuple[int, str]], split: str, ordinal: int, source: str) -> JudgedQuery:
    first = block[0][0]
    words: list[str] = []
    fields: dict[str, str] = {}
    for number, line in block:
        found = _FIELD.match(line)
        if found and words:
            fields[found.group(1).lower()] = found.group(2).strip()
        elif fields:
            raise InvalidInput(f"{source}:{number}: text after the Relevant:/Id: lines: {line!r}")
        else:
            words.append(_QUERY_PREFIX.sub("", line, count=1) if not words else line)
    query = " ".join(words).strip()
    if "relevant" not in fields:
        raise InvalidInput(
            f"{source}:{first}: the block {query[:60]!r} has no 'Relevant: id, id' line"
        )
    if query.upper().startswith("TODO"):
        raise InvalidInput(
            f"{source}:{first}: query is still a placeholder ({query[:60]!r}): write the "
            "question, check its Relevant: line, or delete the block"
        )
    relevant = [doc.strip() for doc in fields["relevant"].split(",") if doc.strip()]
    if not relevant:
        raise InvalidInput(f"{source}:{first}: 'Relevant:' names no document for {query[:60]!r}")
    return JudgedQuery(
        id=fields.get("id") or f"q{ordinal}",
        text=query,
        judgments=dict.fromkeys(relevant, 1),
        split=split,
    )


def _check_unique(queries: Sequence[JudgedQuery], source: str) -> None:
    seen: set[str] = set()
    for query in queries:
        if query.id in seen:
            raise InvalidInput(f"{source}: query id {query.id!r} is used twice")
        seen.add(query.id)


def select_splits(queries: Sequence[JudgedQuery], splits: Collection[str]) -> list[JudgedQuery]:
    """The queries of the named splits (all of them when `splits` is empty)."""
    if not splits:
        return list(queries)
    present = {q.split for q in queries}
    missing = sorted(set(splits) - present)
    if missing:
        raise InvalidInput(
            f"split {', '.join(missing)} is not in this set; it has: {', '.join(sorted(present))}"
        )
    return [q for q in queries if q.split in splits]


def uri_matcher(queries: Iterable[JudgedQuery]) -> IdOf:
    """Maps a result to the relevant id its uri matches (the uri itself, or a "/"-suffix of it),
    else to the uri. The longest matching suffix wins."""
    known = {doc for q in queries for doc in q.judgments}
    by_suffix: Callable[[str], str | None] = _suffix_lookup(known)

    def id_of(result: Retrieved) -> str:
        return by_suffix(result.uri) or result.uri

    return id_of


def _suffix_lookup(known: set[str]) -> Callable[[str], str | None]:
    normalised = {doc.removeprefix("./"): doc for doc in known}

    def lookup(uri: str) -> str | None:
        if uri in known:
            return uri
        parts = uri.split("/")
        for start in range(1, len(parts)):
            found = normalised.get("/".join(parts[start:]))
            if found is not None:
                return found
        return None

    return lookup
