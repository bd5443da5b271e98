"""The suites end to end on small real SQLite brains: BEIR, LoCoMo, known-item."""

from __future__ import annotations

import json
from pathlib import Path

import ir_measures
import pytest
from ir_measures import RR, R, nDCG

from nexusbrain.brain import Brain
from nexusbrain.cli.eval_targets import BrainTarget, scratch_factory
from nexusbrain.evals import beir, known_item, locomo
from nexusbrain.evals.runner import the_metrics
from nexusbrain.evals.runs import broken_floors, run_view
from nexusbrain.evals.targets import SearchRequest
from tests.conftest import DATASETS

LOCOMO_DEV = DATASETS / "locomo" / "locomo_dev.json"
LEXICAL = scratch_factory(lexical_only=True)


def write_beir(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    long_text = " ".join(["Filler sentence about nothing in particular."] * 40)
    corpus = [
        {"_id": "d1", "title": "Tidal energy", "text": "Tidal turbines convert moving water."},
        {"_id": "d2", "title": "Solar panels", "text": "Photovoltaic cells convert sunlight."},
        {"_id": "d3", "title": "Wind farms", "text": f"{long_text} Offshore wind turbines."},
        {"_id": "d4", "title": "", "text": ""},
        {"_id": "d5", "title": "Geothermal", "text": "Heat from the earth's crust."},
    ]
    queries = [
        {"_id": "1", "text": "turbines"},
        {"_id": "2", "text": "sunlight cells"},
        {"_id": "3", "text": "volcano"},
    ]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels" / "dev.tsv").write_text(
        "query-id\tcorpus-id\tscore\n1\td1\t2\n1\td3\t1\n2\td2\t1\n3\td5\t1\n"
    )
    return folder


def test_beir_suite_scores_documents_and_matches_ir_measures(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "mini")
    metrics = the_metrics(["ndcg@10", "recall@10", "recall@100", "mrr"])
    run_file = tmp_path / "mini.run"
    run = beir.run_beir(
        folder,
        "dev",
        LEXICAL,
        SearchRequest(100, best_per_document=True),
        metrics,
        trec_run=run_file,
    )
    by_id = {q.id: q for q in run.per_query}
    assert set(by_id["1"].top) == {"d1", "d3"}  # d3's two chunks count once
    assert by_id["2"].top == ("d2",) and by_id["3"].top == ()
    assert run.counts == {"documents": 4, "empty_documents_skipped": 1, "queries": 3}
    assert run.metrics["recall@10"] == pytest.approx(2 / 3)
    lines = (folder / "qrels" / "dev.tsv").read_text().splitlines()[1:]
    qrels = [ir_measures.Qrel(q, d, int(g)) for q, d, g in (line.split() for line in lines)]
    reference = ir_measures.calc_aggregate(
        [nDCG @ 10, R @ 10, R @ 100, RR], qrels, list(ir_measures.read_trec_run(str(run_file)))
    )
    assert run.metrics["ndcg@10"] == pytest.approx(reference[nDCG @ 10])
    assert run.metrics["mrr"] == pytest.approx(reference[RR])
    assert run.config["split"] == "dev" and run.config["retrieval"]["embedder"] == "none"
    view = run_view(run)
    assert set(view) >= {"metrics", "per_query", "config"}
    assert view["config"]["commit"]


def test_beir_errors_name_the_missing_piece(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "mini")
    with pytest.raises(Exception, match=r"no split 'test'.*it has: dev"):
        beir.beir_queries(folder, "test")
    with pytest.raises(Exception, match="not a BEIR folder"):
        beir.run_beir(tmp_path, "dev", LEXICAL, SearchRequest(), the_metrics(["mrr"]))


def test_floors_name_metric_value_floor_and_split() -> None:
    floors = [(m, 0.5) for m in the_metrics(["recall@5", "mrr"])]
    assert broken_floors({"recall@5": 0.4, "mrr": 0.9}, floors, "dev") == [
        "recall@5 = 0.4000 is below its floor 0.5 (dev)"
    ]
    with pytest.raises(Exception, match="reports no such metric"):
        broken_floors({"mrr": 0.9}, floors, "dev")


@pytest.mark.parametrize(
    ("raw", "ids"),
    [
        ("D1:3", ["D1:3"]),
        ("D:11:26", ["D11:26"]),
        ("D30:05", ["D30:5"]),
        ("D8:6; D9:17", ["D8:6", "D9:17"]),
        ("D", []),
    ],
)
def test_canonical_dia_ids(raw: str, ids: list[str]) -> None:
    assert locomo.canonical_dia_ids(raw) == ids


def test_normalise_evidence_counts_what_it_did() -> None:
    known = {"D1:3", "D11:26", "D8:6"}
    evidence = locomo.normalise_evidence(["D1:3", "D:11:26", "D8:6; D9:17", "D", "D1:3"], known)
    assert evidence.ids == ("D1:3", "D11:26", "D8:6")
    assert (evidence.normalised, evidence.unparseable, evidence.unknown) == (2, 1, 1)


SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a greyhound called Pixel."},
            {
                "speaker": "Ben",
                "dia_id": "D1:2",
                "text": "Lovely! Look at this.",
                "blip_caption": "a photo of a lighthouse at dusk",
            },
        ],
        "session_2_date_time": "9:00 am on 10 May, 2023",
        "session_2": [
            {"speaker": "Ana", "dia_id": "D2:1", "text": "Pixel learned to sit yesterday."},
            {"speaker": "Ben", "dia_id": "D2:2", "text": "My sister moved to Lisbon."},
        ],
    },
    "qa": [
        {
            "question": "What is the greyhound called?",
            "answer": "Pixel",
            "evidence": ["D1:1"],
            "category": 4,
        },
        {
            "question": "Where did Ben's sister move?",
            "answer": "Lisbon",
            "evidence": ["D:2:02"],
            "category": 1,
        },
        {
            "question": "What did Ben photograph at dusk?",
            "answer": "a lighthouse",
            "evidence": ["D1:2"],
            "category": 3,
        },
        {
            "question": "Did Ana adopt a cat?",
            "evidence": ["D1:1"],
            "category": 5,
            "adversarial_answer": "yes",
        },
        {"question": "Is Ben kind?", "answer": "yes", "evidence": [], "category": 3},
    ],
}


def test_locomo_suite_on_a_small_conversation(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([SAMPLE]))
    metrics = the_metrics(locomo.DEFAULT_METRICS)
    run = locomo.run_locomo(path, LEXICAL, SearchRequest(10), metrics)
    tops = {q.id: q.top[0] for q in run.per_query}
    assert tops == {
        "conv-x:q1": "D1:1",
        "conv-x:q2": "D2:2",
        "conv-x:q3": "D1:2",
        "conv-x:q4": "D1:1",
    }
    assert run.metrics["recall@5"] == 1.0  # categories 1-4 only
    assert set(run.groups) == {
        "category 1 multi-hop",
        "category 3 open-domain",
        "category 4 single-hop",
        "category 5 adversarial (adversarial: reported apart, not averaged)",
    }
    assert run.counts["skipped_no_evidence"] == 1 and run.counts["normalised_ids"] == 1
    assert run.counts["scored"] == 3 and run.counts["adversarial_reported_apart"] == 1
    sample = locomo.load_locomo(path)[0]
    shown = locomo.sessions_of(sample)[0].turns[1].content
    assert shown == "Lovely! Look at this. [shared a photo of a lighthouse at dusk]"
    assert locomo.sessions_of(sample, captions=False)[0].turns[1].content == "Lovely! Look at this."


@pytest.mark.skipif(not LOCOMO_DEV.exists(), reason="shared LoCoMo data not present")
def test_locomo_suite_on_one_dev_conversation(tmp_path: Path) -> None:
    data = json.loads(LOCOMO_DEV.read_text())
    path = tmp_path / "conv30.json"
    path.write_text(json.dumps([s for s in data if s["sample_id"] == "conv-30"]))
    run = locomo.run_locomo(path, LEXICAL, SearchRequest(10), the_metrics(locomo.DEFAULT_METRICS))
    assert run.counts["questions"] == 105
    assert run.counts["scored"] + run.counts["adversarial_reported_apart"] == 105
    # Plain BM25 over turns gets about 0.49 recall@5 on LoCoMo; far from it means a bug.
    assert 0.4 <= run.metrics["recall@5"] <= 0.8
    assert run.metrics["recall@5"] <= run.metrics["recall@10"]


def test_known_item_finds_chunks_and_their_near_duplicates(brain: Brain) -> None:
    for i, topic in enumerate(["harbour cranes", "tram timetables", "bakery ovens"]):
        body = f"Notes about {topic} number {i}, with details on schedules and upkeep."
        brain.ingest_markdown(f"# {topic}\n\n{body}\n\n## Again\n\n{body}\n", uri=f"notes/{i}.md")
    chunks = known_item.live_chunks(brain.admin.export())
    queries = known_item.build_queries(chunks, n=2, seed=3)
    assert queries == known_item.build_queries(chunks, n=2, seed=3)
    target = BrainTarget(brain, lexical_only=True)
    metrics = the_metrics(known_item.DEFAULT_METRICS)
    run = known_item.run_known_item(target, SearchRequest(10), metrics, n=50, seed=1, source="test")
    assert run.counts["queries"] == len(chunks)
    assert run.metrics["recall@10"] == 1.0
    assert run.config["seed"] == 1


def test_near_duplicates_and_excerpts() -> None:
    same = known_item.StoredChunk(1, 7, "alpha beta gamma delta")
    close = known_item.StoredChunk(2, 7, "alpha beta gamma epsilon")  # 3/5 overlap
    far = known_item.StoredChunk(3, 7, "alpha zeta eta theta")
    assert known_item.near_duplicates(same, [same, close, far]) == {"1", "2"}
    import random

    text = " ".join(f"word{i}" for i in range(200))
    piece = known_item.excerpt(text, random.Random(0))
    assert len(piece) <= known_item.EXCERPT_CHARS and piece in text
    assert piece.startswith("word")
