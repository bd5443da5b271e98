"""Answer generation (optional): an OpenAI-compatible chat endpoint answers each question from
the passages the search returned, citing the ones it used; the answers are scored. Retrieval
metrics never need any of this.

Configuration, from the environment through `config.answer_settings` (no key is ever written
to a log or a report):
``BRAIN_ANSWER_BASE_URL`` (e.g. ``https://api.openai.com/v1`` or a local server's ``/v1``),
``BRAIN_ANSWER_MODEL``, ``BRAIN_ANSWER_API_KEY`` (else ``OPENAI_API_KEY``; none for a local
server), ``BRAIN_ANSWER_JUDGE_MODEL`` (an LLM judge, optional) and
``BRAIN_ANSWER_PRICE_IN`` / ``BRAIN_ANSWER_PRICE_OUT`` (USD per million tokens, for a model the
price table below does not list).

Scoring, per question (gold answer and gold evidence from the suite):

* exact match and token F1 after SQuAD's normalisation (lower case, no punctuation, no
  articles); with a judge, also its yes/no. An answer is correct when the judge says yes, or,
  without a judge, when F1 >= 0.5.
* A wrong answer is a retrieval failure when no passage the answerer saw is gold evidence, and
  an answerer failure otherwise.
* Citation accuracy: the share of cited passages (path and line span) that are gold evidence.
* Grounding: the share of answers (other than "unknown") that cite at least one passage whose
  words hold at least half of the answer's words.
* Cost: the endpoint's reported token usage times the price; without usage, our own count.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import orjson

from nexusbrain.config import AnswerSettings
from nexusbrain.errors import ConfigError, InvalidInput, MissingExtra
from nexusbrain.evals.targets import Retrieved
from nexusbrain.retrieval.tokens import count_tokens

PROMPT_TOKENS = 160  # instructions, labels and the question, beyond the passages
JUDGE_TOKENS = 120  # a judge prompt, beyond the question and the two answers
CORRECT_F1 = 0.5
SUPPORTED = 0.5  # share of an answer's words a cited passage must hold
UNKNOWN = "unknown"
MAX_TOKENS = 200  # an answer's length at most
TIMEOUT = 60.0  # seconds an endpoint may take to answer


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens."""

    input_per_million: float
    output_per_million: float

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.input_per_million + tokens_out * self.output_per_million) / 1e6


PRICES: Mapping[str, Price] = MappingProxyType(
    {  # public list prices per million tokens (input, output), as published in 2025
        "gpt-4o-mini": Price(0.15, 0.60),
        "gpt-4o": Price(2.50, 10.00),
        "gpt-4.1": Price(2.00, 8.00),
        "gpt-4.1-mini": Price(0.40, 1.60),
        "gpt-4.1-nano": Price(0.10, 0.40),
        "gpt-3.5-turbo": Price(0.50, 1.50),
    }
)


def unit_price(endpoint: AnswerSettings, model: str | None = None) -> Price:
    """The price of `model` (default: the endpoint's): the one BRAIN_ANSWER_PRICE_IN / _OUT
    set, else the table's."""
    name = model or endpoint.model
    if endpoint.price_in is not None and endpoint.price_out is not None:
        return Price(endpoint.price_in, endpoint.price_out)
    if name in PRICES:
        return PRICES[name]
    raise ConfigError(
        f"no price for model {name!r}: set BRAIN_ANSWER_PRICE_IN and BRAIN_ANSWER_PRICE_OUT "
        f"(USD per million tokens); the table knows {', '.join(sorted(PRICES))}"
    )


@dataclass(frozen=True, slots=True)
class Passage(Retrieved):
    """A search result that also knows its line span, so an answer can cite it."""

    line_start: int | None = None
    line_end: int | None = None


def label(result: Retrieved) -> str:
    """How a citation names a passage: its path and line span."""
    if isinstance(result, Passage) and result.line_start is not None:
        return f"{result.uri}:{result.line_start}-{result.line_end}"
    return result.uri + (f"#{result.unit}" if result.unit else "")


# the endpoint


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    tokens_in: int
    tokens_out: int


class ChatClient:
    """POST {base_url}/chat/completions, the OpenAI wire format, over httpx."""

    def __init__(self, config: AnswerSettings) -> None:
        try:
            import httpx
        except ImportError:  # pragma: no cover - httpx comes with the mcp dependency
            raise MissingExtra("answer", "httpx") from None
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self.config = config
        self.http = httpx.Client(base_url=config.base_url, headers=headers, timeout=TIMEOUT)
        self.error = httpx.HTTPError

    def complete(
        self, messages: Sequence[Mapping[str, str]], *, model: str, max_tokens: int, seed: int
    ) -> Completion:
        body = {
            "model": model,
            "messages": list(messages),
            "temperature": 0,
            "max_tokens": max_tokens,
            "seed": seed,
        }
        try:
            response = self.http.post(
                "/chat/completions",
                content=orjson.dumps(body),
                headers={"Content-Type": "application/json"},
            )
            response.raise_for_status()
            value = orjson.loads(response.content)
            text = str(value["choices"][0]["message"]["content"] or "")
        except self.error as exc:
            raise InvalidInput(f"answer endpoint {self.config.base_url}: {exc}") from None
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError) as exc:
            raise InvalidInput(
                f"answer endpoint {self.config.base_url}: bad reply ({exc})"
            ) from None
        usage = value.get("usage") or {}
        prompt = sum(count_tokens(m["content"]) for m in messages)
        return Completion(
            text,
            int(usage.get("prompt_tokens", prompt)),
            int(usage.get("completion_tokens", count_tokens(text))),
        )

    def close(self) -> None:
        self.http.close()


# prompts

SYSTEM = (
    "You answer questions about a person's memories using only the numbered passages given. "
    'Reply with JSON only: {"answer": "<a short answer>", "citations": [<numbers of the '
    'passages you used>]}. If the passages do not hold the answer, reply {"answer": "unknown", '
    '"citations": []}.'
)


def answer_messages(question: str, passages: Sequence[Retrieved]) -> list[dict[str, str]]:
    shown = "\n\n".join(f"[{i}] {label(p)}\n{p.text}" for i, p in enumerate(passages, start=1))
    user = f"Passages:\n\n{shown or '(none)'}\n\nQuestion: {question}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def judge_messages(question: str, gold: str, answer: str) -> list[dict[str, str]]:
    return [
        {
            "role": "system",
            "content": "You grade answers. Reply with one word: yes if the answer means the "
            "same as the gold answer, no otherwise.",
        },
        {
            "role": "user",
            "content": f"Question: {question}\nGold answer: {gold}\nAnswer: {answer}\nCorrect?",
        },
    ]


_CITED = re.compile(r"\[(\d+)\]")


def parse_reply(text: str, passages: int) -> tuple[str, tuple[int, ...]]:
    """The answer and the valid passage numbers it cites, from JSON or from [n] markers."""
    body = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        value = None
    if isinstance(value, dict) and "answer" in value:
        answer = str(value["answer"]).strip()
        raw = value.get("citations") or []
        numbers = [int(n) for n in raw if isinstance(n, int | str) and str(n).isdigit()]
    else:
        answer = _CITED.sub("", text).strip()
        numbers = [int(n) for n in _CITED.findall(text)]
    return answer, tuple(dict.fromkeys(n for n in numbers if 1 <= n <= passages))


# scoring (pure)

_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalise(text: str) -> str:
    """SQuAD's answer normalisation."""
    lowered = text.lower()
    no_punctuation = "".join(ch for ch in lowered if ch not in set(string.punctuation))
    return " ".join(_ARTICLES.sub(" ", no_punctuation).split())


def exact_match(answer: str, gold: str) -> float:
    return float(normalise(answer) == normalise(gold))


def token_f1(answer: str, gold: str) -> float:
    ours, theirs = normalise(answer).split(), normalise(gold).split()
    if not ours or not theirs:
        return float(ours == theirs)
    common = sum((Counter(ours) & Counter(theirs)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(ours), common / len(theirs)
    return 2 * precision * recall / (precision + recall)


def supported(answer: str, texts: Sequence[str]) -> bool:
    """Whether one of `texts` holds at least half of the answer's (normalised) words."""
    words = set(normalise(answer).split())
    if not words:
        return False
    return any(len(words & set(normalise(t).split())) / len(words) >= SUPPORTED for t in texts)


@dataclass(frozen=True, slots=True)
class Question:
    """What the answerer needs: the question, its gold answer and evidence, and its context."""

    id: str
    text: str
    gold: str
    evidence: frozenset[str]  # units (turn ids) of the gold evidence
    passages: tuple[Retrieved, ...]


@dataclass(frozen=True, slots=True)
class Answer:
    question_id: str
    answer: str
    cited: tuple[str, ...]  # path:line span of each cited passage
    cited_evidence: int  # how many cited passages are gold evidence
    exact_match: float
    f1: float
    judged: float | None
    correct: bool
    failure: str | None  # "retrieval" or "answerer" for a wrong answer
    grounded: bool | None  # None for an "unknown" answer
    cost_usd: float


def score(question: Question, reply: str, judged: float | None, cost: float) -> Answer:
    answer, numbers = parse_reply(reply, len(question.passages))
    cited = [question.passages[n - 1] for n in numbers]
    f1 = token_f1(answer, question.gold)
    correct = bool(judged) if judged is not None else f1 >= CORRECT_F1
    seen_evidence = any(p.unit in question.evidence for p in question.passages)
    failure = None if correct else ("answerer" if seen_evidence else "retrieval")
    abstained = normalise(answer) in ("", UNKNOWN)
    return Answer(
        question_id=question.id,
        answer=answer,
        cited=tuple(label(p) for p in cited),
        cited_evidence=sum(1 for p in cited if p.unit in question.evidence),
        exact_match=exact_match(answer, question.gold),
        f1=f1,
        judged=judged,
        correct=correct,
        failure=failure,
        grounded=None if abstained else bool(cited) and supported(answer, [p.text for p in cited]),
        cost_usd=cost,
    )


def answer_all(
    questions: Sequence[Question], client: ChatClient, config: AnswerSettings, *, seed: int
) -> list[Answer]:
    """Answer each question from its passages (and judge it, with a judge configured)."""
    price = unit_price(config)
    out = []
    for question in questions:
        done = client.complete(
            answer_messages(question.text, question.passages),
            model=config.model,
            max_tokens=MAX_TOKENS,
            seed=seed,
        )
        cost = price.cost(done.tokens_in, done.tokens_out)
        judged = None
        if config.judge_model:
            answer, _ = parse_reply(done.text, len(question.passages))
            verdict = client.complete(
                judge_messages(question.text, question.gold, answer),
                model=config.judge_model,
                max_tokens=5,
                seed=seed,
            )
            judged = float(verdict.text.strip().lower().startswith("yes"))
            cost += unit_price(config, config.judge_model).cost(
                verdict.tokens_in, verdict.tokens_out
            )
        out.append(score(question, done.text, judged, cost))
    return out


def summary(answers: Sequence[Answer]) -> dict[str, float]:
    """Means over the answered questions, beside the retrieval metrics."""
    if not answers:
        return {}
    n = len(answers)
    cited = sum(len(a.cited) for a in answers)
    claims = [a for a in answers if a.grounded is not None]
    out = {
        "answer_accuracy": sum(a.correct for a in answers) / n,
        "answer_em": sum(a.exact_match for a in answers) / n,
        "answer_f1": sum(a.f1 for a in answers) / n,
        "citation_accuracy": sum(a.cited_evidence for a in answers) / cited if cited else 0.0,
        "grounding": sum(bool(a.grounded) for a in claims) / len(claims) if claims else 0.0,
        "failures_retrieval": sum(a.failure == "retrieval" for a in answers) / n,
        "failures_answerer": sum(a.failure == "answerer" for a in answers) / n,
    }
    judged = [a.judged for a in answers if a.judged is not None]
    if judged:
        out["answer_judge"] = sum(judged) / len(judged)
    return out


def per_question(answer: Answer) -> dict[str, float]:
    """The answer scores a question carries in the results log (for paired comparisons)."""
    out = {"answer_em": answer.exact_match, "answer_f1": answer.f1}
    if answer.judged is not None:
        out["answer_judge"] = answer.judged
    return out


def answer_view(answer: Answer) -> dict[str, Any]:
    return {
        "question_id": answer.question_id,
        "answer": answer.answer,
        "cited": list(answer.cited),
        "correct": answer.correct,
        "failure": answer.failure,
        "grounded": answer.grounded,
    }


@dataclass(frozen=True, slots=True)
class Estimate:
    tokens_in: int
    tokens_out: int
    usd: float


def estimate(questions: int, context_budget: int, config: AnswerSettings) -> Estimate:
    """An upper estimate: each question's prompt holds a full context budget and the answer
    runs to MAX_TOKENS (plus a judge call when one is configured)."""
    tokens_in = questions * (PROMPT_TOKENS + context_budget)
    tokens_out = questions * MAX_TOKENS
    usd = unit_price(config).cost(tokens_in, tokens_out)
    if config.judge_model:
        judge_in, judge_out = questions * (JUDGE_TOKENS + 2 * MAX_TOKENS), questions * 5
        usd += unit_price(config, config.judge_model).cost(judge_in, judge_out)
        tokens_in, tokens_out = tokens_in + judge_in, tokens_out + judge_out
    return Estimate(tokens_in, tokens_out, usd)
