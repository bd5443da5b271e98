"""Conformance: BM25 with FTS5's formula, escaping, filters and the common-terms cut-off."""

from __future__ import annotations

import math

import pytest

from nexusbrain.config import LexicalConfig
from nexusbrain.records import Chunk, SearchFilters
from nexusbrain.storage.base import Backend

from .conftest import OpenBackend, chunk, draft, write

K1, B = 1.2, 0.75
WEIGHTS = (1.0, 0.5, 0.3)  # LexicalConfig's text, heading and context weights
# (text, heading path, context): words that stemming leaves alone or maps one to one
ROWS = [
    ("apple apple pie", ("fruit",), ""),
    ("apple tart", ("apple",), "pie"),
    ("cherry pie with cream", ("dessert",), ""),
    ("bread", (), ""),
    ("stone river", ("map",), ""),
    ("river stone stone", (), "map"),
    ("lantern", ("light",), ""),
    ("harbor lantern orbit", (), ""),
]


def reference_bm25(query: list[str]) -> dict[int, float]:
    """FTS5's bm25() by hand: weighted term frequencies over the columns, the row size in
    tokens over all columns, idf clamped to 1e-6 (fts5_aux.c)."""
    columns = [(text.split(), list(heading), context.split()) for text, heading, context in ROWS]
    sizes = [sum(len(c) for c in row) for row in columns]
    average = sum(sizes) / len(sizes)
    scores: dict[int, float] = {}
    for term in query:
        holding = [i for i, row in enumerate(columns) if any(term in c for c in row)]
        idf = math.log((len(ROWS) - len(holding) + 0.5) / (len(holding) + 0.5))
        idf = idf if idf > 0 else 1e-6
        for i in holding:
            f = sum(w * col.count(term) for w, col in zip(WEIGHTS, columns[i], strict=True))
            norm = f + K1 * (1 - B + B * sizes[i] / average)
            scores[i] = scores.get(i, 0.0) + idf * f * (K1 + 1) / norm
    return scores


def _load(backend: Backend) -> list[Chunk]:
    chunks = [
        chunk(text, i, heading=heading, context=context)
        for i, (text, heading, context) in enumerate(ROWS)
    ]
    document = write(backend, draft(text=" ".join(r[0] for r in ROWS)), chunks).document_id
    return backend.documents.chunks_of(document)


@pytest.mark.parametrize(
    "query", [["apple"], ["pie"], ["apple", "pie"], ["stone", "map", "lantern"], ["cream"]]
)
def test_scores_are_fts5_s_bm25(backend: Backend, query: list[str]) -> None:
    chunks = _load(backend)
    expected = reference_bm25(query)
    found = backend.lexical.search(query, 10, SearchFilters()).scored
    got = {next(i for i, c in enumerate(chunks) if c.id == s.chunk_id): s.score for s in found}
    assert got == pytest.approx(expected, rel=1e-9)
    scores = [s.score for s in found]
    assert scores == sorted(scores, reverse=True)  # best first


def test_ties_break_by_the_lower_chunk_id(backend: Backend) -> None:
    ids = [write(backend, draft(f"{n}.md"), [chunk("same words")]).document_id for n in range(4)]
    write(backend, draft("other.md"), [chunk("something else entirely")])
    found = backend.lexical.search(["same"], 10, SearchFilters()).scored
    assert len(found) == 4 and len({s.score for s in found}) == 1
    assert [s.chunk_id for s in found] == sorted(s.chunk_id for s in found)
    assert len(ids) == 4


HOSTILE = [
    '"',
    'a"b',
    "NEAR(a b)",
    "*",
    "col:val",
    "text:apple",
    "^apple",
    "(",
    ")",
    "AND",
    "OR",
    "NOT",
    "-",
    "+",
    "'",
    "\\",
    "{text heading}:apple",
    "apple*",
    "x" * 3000,
    "",
    "   ",
    "\x00",
    "ß",
    "ﬁ",
]


def test_no_term_is_ever_read_as_query_syntax(backend: Backend) -> None:
    _load(backend)
    for term in HOSTILE:
        found = backend.lexical.search([term], 10, SearchFilters()).scored
        assert isinstance(found, list), term
    both = backend.lexical.search([*HOSTILE, "apple"], 10, SearchFilters()).scored
    assert both and all(s.score > 0 for s in both)


def test_filters_and_best_per_document(backend: Backend) -> None:
    one = write(backend, draft("notes/one.md"), [chunk("apple pie", 0), chunk("apple tart", 1)])
    two = write(backend, draft("work/two.md", domain="work"), [chunk("apple")])
    lexical = backend.lexical
    assert len(lexical.search(["apple"], 10, SearchFilters()).scored) == 3
    best = lexical.search(["apple"], 10, SearchFilters(), best_per_document=True).scored
    assert sorted(s.document_id or 0 for s in best) == [one.document_id, two.document_id]
    work = lexical.search(["apple"], 10, SearchFilters(domain="work")).scored
    chunks_of = backend.documents.chunks_of
    assert [s.chunk_id for s in work] == [c.id for c in chunks_of(two.document_id)]
    prefix = lexical.search(["apple"], 10, SearchFilters(path_prefix="notes/")).scored
    assert {s.chunk_id for s in prefix} == {c.id for c in chunks_of(one.document_id)}
    only = lexical.search(["apple"], 1, SearchFilters(document_id=two.document_id)).scored
    assert len(only) == 1
    assert lexical.search(["apple"], 0, SearchFilters()).scored == []


def _zebras(backend: Backend) -> list[Chunk]:
    """40 chunks over 4 documents: 'zebra' in all, 'lion' in 12, 'okapi' in one."""
    ids = []
    for d in range(4):
        texts = [
            " ".join(["zebra"] * (1 + i % 3) + (["lion"] if i % 4 == 0 else []) + ["grass"] * i)
            + (" okapi" if (d, i) == (2, 5) else "")
            for i in range(10)
        ]
        chunks = [chunk(t, i) for i, t in enumerate(texts)]
        ids.append(write(backend, draft(f"d{d}.md"), chunks).document_id)
    return [c for document in ids for c in backend.documents.chunks_of(document)]


@pytest.mark.parametrize(
    ("share", "min_rows", "common"),
    [(0.5, 1, ("zebra",)), (0.2, 1, ("zebra", "lion")), (0.2, 13, ("zebra",)), (0.2, 41, ())],
)
def test_common_terms_are_those_past_the_share_and_the_row_floor(
    open_backend: OpenBackend, share: float, min_rows: int, common: tuple[str, ...]
) -> None:
    _zebras(open_backend())
    lexical = open_backend(LexicalConfig(common_share=share, common_min_rows=min_rows)).lexical
    assert lexical.search(["zebra", "lion", "okapi"], 5, SearchFilters()).common_terms == common


def test_common_terms_score_but_do_not_bring_chunks_in(open_backend: OpenBackend) -> None:
    chunks = _zebras(open_backend())
    terms = ["zebra", "lion", "okapi"]
    full = open_backend(LexicalConfig(common_share=0.0)).lexical.search(terms, 100, SearchFilters())
    assert len(full.scored) == 40 and full.common_terms == ()
    cut = open_backend(LexicalConfig(common_share=0.5, common_min_rows=1)).lexical
    split = cut.search(terms, 100, SearchFilters())
    assert split.common_terms == ("zebra",)
    rarer = {c.id for c in chunks if "lion" in c.text or "okapi" in c.text}
    assert len(rarer) == 13
    scores = {s.chunk_id: s.score for s in full.scored}
    assert [s.chunk_id for s in split.scored] == [
        s.chunk_id for s in full.scored if s.chunk_id in rarer
    ]
    assert [s.score for s in split.scored] == pytest.approx(
        [scores[s.chunk_id] for s in split.scored], rel=1e-12
    )
    assert cut.search(terms, 3, SearchFilters()).scored == split.scored[:3]
    # every term common: the plain OR query
    alone = cut.search(["zebra"], 100, SearchFilters()).scored
    assert len(alone) == 40
    best = cut.search(terms, 100, SearchFilters(), best_per_document=True).scored
    assert len(best) == 4 and len({s.document_id for s in best}) == 4
