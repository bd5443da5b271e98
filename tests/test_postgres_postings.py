"""The PostgreSQL backend's postings segments, packed for COPY: a whole write's rows laid out
at once must be byte for byte the rows `segment_row` packs one token at a time."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("psycopg")

from nexusbrain.storage.postgres.postings import (
    Segment,
    chunk_terms,
    copy_stream,
    segment_row,
)

words = st.sampled_from(["alpha", "beta", "gamma", "delta", "zeta", "été", "日本語", "x"])
texts = st.lists(words, max_size=12).map(" ".join)
chunks = st.lists(st.tuples(texts, texts, texts), min_size=1, max_size=12)


def _one_token_at_a_time(rows: list[tuple[int, tuple[str, str, str]]], segment: int) -> bytes:
    order: dict[str, list[tuple[int, list[int]]]] = {}
    for pid, (text, heading, context) in rows:
        for token, tf in chunk_terms(text, heading, context)[1].items():
            order.setdefault(token, []).append((pid, tf))
    packed = []
    for token, held in order.items():
        pids = np.array([pid for pid, _ in held], np.int64)
        packed.append(segment_row(token, segment, pids, np.array([tf for _, tf in held])))
    return copy_stream(packed)


@settings(max_examples=150)
@given(chunks, st.integers(1, 2**40), st.integers(1, 1000))
def test_a_segment_packs_the_rows_one_token_at_a_time_would(given_chunks, segment, gap) -> None:  # type: ignore[no-untyped-def]
    rows = [(1 + i * gap, c) for i, c in enumerate(given_chunks)]
    built = Segment()
    for pid, (text, heading, context) in rows:
        built.add(pid, text, heading, context)
    if not built:
        return
    assert built.copy_payload(segment) == _one_token_at_a_time(rows, segment)


def test_a_token_said_more_often_than_int16_holds_is_packed_wide() -> None:
    text = " ".join(["alpha"] * 40_000)
    built = Segment()
    built.add(7, text, "", "")
    payload = built.copy_payload(3)
    assert payload == _one_token_at_a_time([(7, (text, "", ""))], 3)
    assert payload.endswith(b"\x00\x00\x00\x01\x01\xff\xff")  # the row's wide flag, the trailer
