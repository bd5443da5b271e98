"""Answer generation against a small OpenAI-compatible server on loopback (no network): the
prompt and citations, scoring (EM, F1, judge), failure attribution, citation accuracy,
grounding, and cost accounting from the reported usage."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from click.testing import CliRunner
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from nexusbrain.cli.main import cli
from nexusbrain.config import AnswerSettings, answer_settings
from nexusbrain.errors import ConfigError
from nexusbrain.evals import answer, locomo
from nexusbrain.evals.answer import Passage, Price, Question
from nexusbrain.evals.locomo_to_longmemeval import convert
from nexusbrain.evals.results_log import RunStatus, latest, read_log
from tests.conftest import free_port
from tests.test_eval_suites import SAMPLE

ANSWER_USAGE = (100, 10)  # prompt and completion tokens the fake answerer reports
JUDGE_USAGE = (50, 1)
_PASSAGE = re.compile(r"^\[(\d+)\] (.*)\n(.*)$", re.MULTILINE)


class FakeLLM:
    """Answers with the last word of the first passage, citing it; the judge says yes when the
    answer equals the gold answer (after normalisation)."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []

    async def chat(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append((dict(request.headers), body))
        user = body["messages"][-1]["content"]
        if body["model"] == "judge":
            gold = re.search(r"Gold answer: (.*)", user)
            said = re.search(r"\nAnswer: (.*)", user)
            same = bool(gold and said) and answer.normalise(gold[1]) == answer.normalise(said[1])
            return self._reply("yes" if same else "no", JUDGE_USAGE)
        passages = _PASSAGE.findall(user)
        if not passages:
            return self._reply('{"answer": "unknown", "citations": []}', ANSWER_USAGE)
        last = passages[0][2].strip().rstrip(".]!?").split()[-1]
        return self._reply(json.dumps({"answer": last, "citations": [1]}), ANSWER_USAGE)

    def _reply(self, text: str, usage: tuple[int, int]) -> JSONResponse:
        return JSONResponse(
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
            }
        )


@pytest.fixture
def llm() -> Iterator[tuple[str, FakeLLM]]:
    fake = FakeLLM()
    app = Starlette(routes=[Route("/v1/chat/completions", fake.chat, methods=["POST"])])
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "fake LLM server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/v1", fake
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_a_sweep_answers_scores_and_accounts_for_cost(
    llm: tuple[str, FakeLLM], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, fake = llm
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "locomo.json").write_text(json.dumps([SAMPLE]))
    (tmp_path / "lme.json").write_text(
        json.dumps(convert(locomo.load_locomo(tmp_path / "locomo.json")))
    )
    env = {
        "BRAIN_EMBEDDER": "hashing",
        "BRAIN_ANSWER_BASE_URL": url,
        "BRAIN_ANSWER_MODEL": "fake-model",
        "BRAIN_ANSWER_JUDGE_MODEL": "judge",
        "BRAIN_ANSWER_API_KEY": "sk-test",
        "BRAIN_ANSWER_PRICE_IN": "1.0",
        "BRAIN_ANSWER_PRICE_OUT": "2.0",
    }
    result = CliRunner().invoke(
        cli,
        [
            *("eval", "run-all", "--suites", "longmemeval,locomo", "--modes", "balanced"),
            *("--data", "locomo=locomo.json", "--data", "longmemeval=lme.json", "--answer"),
            *("--budget-usd-retrieval", "1", "--budget-usd-answer", "1"),
        ],
        env=env,
    )
    assert result.exit_code == 0, result.output
    assert "locomo/balanced: retrieval $0.00 (local compute), answer generation $0.0" in (
        result.output
    )
    assert "(3 questions" in result.output and "fake-model)" in result.output
    records = latest(read_log(tmp_path / ".nexusbrain-evals" / "eval-results.jsonl").records)
    for suite in ("locomo", "longmemeval"):
        record = records[(suite, "balanced")]
        assert record.status is RunStatus.COMPLETED, record.reason
        metrics = record.metrics
        assert {"answer_accuracy", "answer_em", "answer_f1", "answer_judge"} <= set(metrics)
        assert {"citation_accuracy", "grounding", "failures_retrieval", "failures_answerer"} <= (
            set(metrics)
        )
        # one answer and one judge call per question, at $1 / $2 per million tokens
        per_question = (100 * 1.0 + 10 * 2.0 + 50 * 1.0 + 1 * 2.0) / 1e6
        assert record.cost_per_query_usd == pytest.approx(per_question)
        assert metrics["answer_accuracy"] == metrics["answer_judge"]
        assert metrics["answer_accuracy"] + metrics["failures_retrieval"] + metrics[
            "failures_answerer"
        ] == pytest.approx(1.0)
        assert all("answer_f1" in q.metrics for q in record.per_question)
        examples = record.details["answers"]["examples"]
        assert examples and all(
            re.fullmatch(r"conversation://\S+:\d+-\d+", cited)
            for e in examples
            for cited in e["cited"]
        )
    pixel = next(
        e for e in records[("locomo", "balanced")].details["answers"]["examples"]
        if e["question_id"] == "conv-x:q1"
    )  # fmt: skip
    assert pixel["answer"] == "Pixel" and pixel["correct"] and pixel["grounded"]
    headers, body = fake.requests[0]
    assert headers["authorization"] == "Bearer sk-test"
    assert body["temperature"] == 0 and body["seed"] == 42 and body["model"] == "fake-model"
    assert body["messages"][1]["content"].startswith("Passages:\n\n[1] conversation://")


def test_answer_scoring_is_squad_style() -> None:
    assert answer.normalise("The Lighthouse, at dusk!") == "lighthouse at dusk"
    assert answer.exact_match("a lighthouse", "Lighthouse") == 1.0
    # ours: 7 may 2023 (3 tokens); gold: on 7 may (3 tokens); common 2 -> P = R = 2/3
    assert answer.token_f1("7 May 2023", "on 7 May") == pytest.approx(2 / 3)
    assert answer.token_f1("Lisbon", "Porto") == 0.0 and answer.token_f1("", "") == 1.0
    assert answer.supported("Pixel", ["I adopted a greyhound called Pixel."])
    assert not answer.supported("Porto", ["My sister moved to Lisbon."])


def test_replies_are_parsed_from_json_or_markers() -> None:
    assert answer.parse_reply('{"answer": "Pixel", "citations": [2, 9, 2]}', 3) == ("Pixel", (2,))
    assert answer.parse_reply('```json\n{"answer": "x", "citations": ["1"]}\n```', 1) == (
        "x",
        (1,),
    )
    assert answer.parse_reply("Lisbon [1][3]", 2) == ("Lisbon", (1,))


def _question(evidence_in_context: bool) -> Question:
    passages = (
        Passage(
            1, "conversation://c/session_1", "D1:1", "I adopted a greyhound called Pixel.", 3, 3
        ),
        Passage(2, "conversation://c/session_2", "D2:2", "My sister moved to Lisbon.", 4, 4),
    )
    evidence = frozenset({"D2:2"} if evidence_in_context else {"D9:9"})
    return Question("q", "Where did the sister move?", "Lisbon", evidence, passages)


def test_failures_are_attributed_and_citations_scored() -> None:
    wrong = answer.score(_question(True), '{"answer": "Porto", "citations": [1]}', None, 0.1)
    assert wrong.failure == "answerer" and wrong.cited == ("conversation://c/session_1:3-3",)
    assert wrong.cited_evidence == 0 and wrong.grounded is False
    missed = answer.score(_question(False), '{"answer": "Porto", "citations": []}', None, 0.1)
    assert missed.failure == "retrieval" and missed.grounded is False
    right = answer.score(_question(True), '{"answer": "Lisbon", "citations": [2]}', None, 0.1)
    assert right.correct and right.failure is None and right.cited_evidence == 1 and right.grounded
    unknown = answer.score(_question(True), '{"answer": "unknown", "citations": []}', None, 0.0)
    assert unknown.grounded is None and unknown.failure == "answerer"
    judged = answer.score(_question(True), '{"answer": "Porto", "citations": [2]}', 1.0, 0.0)
    assert judged.correct  # the judge decides when there is one
    summary = answer.summary([wrong, missed, right, unknown])
    assert summary["answer_accuracy"] == 0.25
    assert summary["citation_accuracy"] == 0.5  # 2 citations, 1 on gold evidence
    assert summary["grounding"] == pytest.approx(1 / 3)  # unknown is not a claim
    assert (summary["failures_retrieval"], summary["failures_answerer"]) == (0.25, 0.5)


def test_configuration_prices_and_estimate() -> None:
    with pytest.raises(ConfigError, match="BRAIN_ANSWER_BASE_URL and BRAIN_ANSWER_MODEL"):
        answer_settings({})
    config = answer_settings(
        {"BRAIN_ANSWER_BASE_URL": "http://127.0.0.1:1/v1/", "BRAIN_ANSWER_MODEL": "gpt-4o-mini"}
    )
    assert config.base_url == "http://127.0.0.1:1/v1" and config.api_key is None
    assert answer.unit_price(config) == Price(0.15, 0.60)
    assert "sk-" not in repr(AnswerSettings("u", "m", api_key="sk-secret"))
    # 10 questions x (160 + 2000) in, 10 x 200 out, at $0.15 and $0.60 per million tokens
    guess = answer.estimate(10, 2000, config)
    assert (guess.tokens_in, guess.tokens_out) == (21_600, 2_000)
    assert guess.usd == pytest.approx((21_600 * 0.15 + 2_000 * 0.60) / 1e6)
    with pytest.raises(ConfigError, match="no price for model 'local-llama'"):
        answer.unit_price(AnswerSettings("u", "local-llama"))
