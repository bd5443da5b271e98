"""Conformance: BM25 by the formula of storage/bm25.py over the analyzer's tokens, for the
top chunks and for any chunk asked about, escaping, filters, repeated query words and text in
Chinese, Japanese and Korean."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from nexusbrain.records import Chunk, SearchFilters
from nexusbrain.storage.analyzer import tokens
from nexusbrain.storage.base import Backend

from .conftest import NOW, OpenBackend, chunk, draft, write

K1, B = 1.2, 0.75
WEIGHTS = (1.0, 0.5, 0.3)  # LexicalConfig's text, heading and context weights
# (text, heading path, context)
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
    """BM25 by hand, word by word: Lucene's idf, weighted term frequencies over the columns,
    the row size in tokens over all columns, and 1 + ln(q) for a token said q times."""
    columns = [
        (tokens(text), tokens(" ".join(heading)), tokens(context))
        for text, heading, context in ROWS
    ]
    sizes = [sum(len(c) for c in row) for row in columns]
    average = sum(sizes) / len(sizes)
    scores: dict[int, float] = {}
    said = Counter(t for word in query for t in tokens(word))
    for term, times in said.items():
        holding = [i for i, row in enumerate(columns) if any(term in c for c in row)]
        idf = math.log(1 + (len(ROWS) - len(holding) + 0.5) / (len(holding) + 0.5))
        for i in holding:
            f = sum(w * col.count(term) for w, col in zip(WEIGHTS, columns[i], strict=True))
            norm = f + K1 * (1 - B + B * sizes[i] / average)
            scores[i] = scores.get(i, 0.0) + (1 + math.log(times)) * idf * f * (K1 + 1) / norm
    return scores


def _load(backend: Backend) -> list[Chunk]:
    chunks = [
        chunk(text, i, heading=heading, context=context)
        for i, (text, heading, context) in enumerate(ROWS)
    ]
    document = write(backend, draft(text=" ".join(r[0] for r in ROWS)), chunks).document_id
    return backend.documents.chunks_of(document)


@pytest.mark.parametrize(
    "query",
    [
        ["apple"],
        ["pie"],
        ["apple", "pie"],
        ["stone", "map", "lantern"],
        ["cream"],
        ["apples", "pie", "pie", "pies"],  # stems meet; a repeated word weighs 1 + ln 3
        ["rivers", "map", "stone", "stones"],
    ],
)
def test_scores_are_fts5_s_bm25(backend: Backend, query: list[str]) -> None:
    chunks = _load(backend)
    expected = reference_bm25(query)
    found = backend.lexical.search(query, 10, SearchFilters()).scored
    got = {next(i for i, c in enumerate(chunks) if c.id == s.chunk_id): s.score for s in found}
    assert got == pytest.approx(expected, rel=1e-9)
    scores = [s.score for s in found]
    assert scores == sorted(scores, reverse=True)  # best first


@pytest.mark.parametrize("query", [["apple", "pie"], ["stone", "map", "lantern"], ["absent"]])
def test_any_chunk_is_scored_as_search_would_score_it(backend: Backend, query: list[str]) -> None:
    chunks = _load(backend)
    expected = reference_bm25(query)
    ids = [c.id for c in chunks]
    got = backend.lexical.scores(query, [*reversed(ids), ids[0]])
    assert got == pytest.approx({c.id: expected.get(i, 0.0) for i, c in enumerate(chunks)})
    listed = {s.chunk_id: s.score for s in backend.lexical.search(query, 3, SearchFilters()).scored}
    assert all(got[i] == score for i, score in listed.items())  # the same doubles
    assert backend.lexical.scores(query, []) == {}


def test_a_search_s_scores_come_from_its_snapshot_and_the_next_search_sees_writes(
    open_backend: OpenBackend,
) -> None:
    """After a search, scores of its words answer from the postings it cached (no second
    snapshot): a write committed since, by another backend, shows up at the next search,
    in its list and its scores alike."""
    backend, other = open_backend(), open_backend()
    chunks = _load(backend)
    ids = [c.id for c in chunks]
    query = ["apple", "pie"]
    before = backend.lexical.scores(query, ids)
    listed = backend.lexical.search(query, 10, SearchFilters()).scored
    assert backend.lexical.scores(["stone"], ids) == pytest.approx(  # words it had not cached
        {c.id: reference_bm25(["stone"]).get(i, 0.0) for i, c in enumerate(chunks)}
    )
    other.documents.retire_documents([chunks[0].document_id], NOW)
    write(other, draft("new.md"), [chunk("apple pie apple pie")])
    assert backend.lexical.scores(query, ids) == before  # the search's view, not a new read
    assert {s.chunk_id: s.score for s in listed} == {i: before[i] for i in ids if before[i]}
    assert backend.lexical.search(query, 10, SearchFilters()).scored != listed
    fresh = [c.id for c in other.documents.chunks_of(listed_document(other, "new.md"))]
    after = backend.lexical.scores(query, [*ids, *fresh])
    assert after[fresh[0]] > 0  # (SQLite may give it a retired chunk's id)
    assert all(after[i] == 0.0 for i in ids if i not in fresh)  # the retired chunks


def listed_document(backend: Backend, uri: str) -> int:
    found = backend.documents.find_document(uri)
    assert found is not None
    return found.id


def test_a_document_is_scored_by_its_best_chunk(backend: Backend) -> None:
    one = write(backend, draft("one.md"), [chunk("apple pie", 0), chunk("apple apple tart", 1)])
    two = write(backend, draft("two.md"), [chunk("bread", 0), chunk("stone", 1)])
    lexical = backend.lexical
    best = lexical.search(["apple"], 10, SearchFilters(), best_per_document=True).scored
    first = backend.documents.chunks_of(one.document_id)[0].id
    second = backend.documents.chunks_of(two.document_id)[0].id
    got = lexical.scores(["apple"], [first, second], per_document=True)
    assert got == {one.document_id: best[0].score, two.document_id: 0.0}


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


def test_a_repeated_word_weighs_more_but_not_twice_as_much(backend: Backend) -> None:
    _load(backend)
    once = backend.lexical.search(["pie", "stone"], 10, SearchFilters()).scored
    twice = backend.lexical.search(["pie", "pie", "stone"], 10, SearchFilters()).scored
    by_chunk = {s.chunk_id: s.score for s in once}
    pie = [s for s in twice if s.chunk_id in by_chunk and by_chunk[s.chunk_id] != s.score]
    assert pie  # the pie chunks gained
    alone = {
        s.chunk_id: s.score for s in backend.lexical.search(["pie"], 10, SearchFilters()).scored
    }
    for scored in pie:
        gain = scored.score - by_chunk[scored.chunk_id]
        assert gain == pytest.approx(math.log(2) * alone[scored.chunk_id], rel=1e-9)


def test_chinese_japanese_and_korean_are_found_by_their_words(backend: Backend) -> None:
    texts = [
        "東京都の人口は約千四百万人です。",  # Tokyo's population
        "北京是中华人民共和国的首都。",  # Beijing is the capital
        "서울특별시는 대한민국의 수도이다.",  # Seoul is the capital
        "The capital of France is Paris.",
    ]
    ids = [write(backend, draft(f"{i}.md"), [chunk(t)]).document_id for i, t in enumerate(texts)]
    chunk_of = {backend.documents.chunks_of(d)[0].id: d for d in ids}

    def found(word: str) -> list[int]:
        hits = backend.lexical.search([word], 5, SearchFilters()).scored
        return [chunk_of[s.chunk_id] for s in hits]

    assert found("東京") == [ids[0]]  # a word inside a longer run
    assert found("人口") == [ids[0]]
    assert found("首都") == [ids[1]]
    assert found("서울") == [ids[2]]
    assert found("수도") == [ids[2]]
    assert found("paris") == [ids[3]]
    assert found("京") == []  # a lone character is not a word of those runs
