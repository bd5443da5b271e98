"""`nexusbrain eval run-all` and `eval compare`: the sweep on tiny data with the hashing
embedder, its audit lines and budget rules, the results log and its tolerant reader, and the
report: byte-identical, Bonferroni's threshold, verdicts, mismatches stated."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

from nexusbrain.cli.main import cli
from nexusbrain.evals import locomo
from nexusbrain.evals.compare import compare
from nexusbrain.evals.locomo_to_longmemeval import convert
from nexusbrain.evals.results_log import (
    QuestionScores,
    RunRecord,
    RunStatus,
    append_records,
    latest,
    parse_lines,
    read_log,
    record_view,
    results_path,
)
from nexusbrain.evals.runs import commit
from tests.test_eval_suites import SAMPLE, write_beir

HASHING = {"BRAIN_EMBEDDER": "hashing"}
ANSWER_ENV = {
    **HASHING,
    "BRAIN_ANSWER_BASE_URL": "http://127.0.0.1:9/v1",
    "BRAIN_ANSWER_MODEL": "gpt-4o-mini",
}


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env={**HASHING, **(env or {})})


@pytest.fixture
def git_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git checkout to run in, with tiny LoCoMo, LongMemEval and BEIR data beside it."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "locomo.json").write_text(json.dumps([SAMPLE]))
    samples = locomo.load_locomo(tmp_path / "locomo.json")
    (tmp_path / "lme.json").write_text(json.dumps(convert(samples)))
    write_beir(tmp_path / "beir")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    return tmp_path


def data_args(root: Path) -> list[str]:
    return [
        *("--data", f"locomo={root / 'locomo.json'}"),
        *("--data", f"longmemeval={root / 'lme.json'}"),
        *("--data", f"beir={root / 'beir'}"),
        *("--beir-split", "dev"),
    ]


def test_run_all_runs_every_suite_and_mode_and_logs_them(git_root: Path, tmp_path: Path) -> None:
    result = run(
        "--db",
        str(tmp_path / "absent.db"),
        "eval",
        "run-all",
        "--suites",
        "longmemeval,locomo,beir,replay,brainbench",
        "--seed",
        "42",
        *data_args(git_root),
        "--data",
        f"replay={git_root / 'captured.ndjson'}",
        "--budget-usd-retrieval",
        "5",
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("[eval run-all] cost estimate:\n")
    assert "locomo/balanced: retrieval $0.00 (local compute)" in out
    assert "budget caps: retrieval $5.00, answer generation $20.00" in out
    log = git_root / ".nexusbrain-evals" / "eval-results.jsonl"
    assert out.rstrip().endswith(f"Audit trail:\n  {log}")
    reading = read_log(log)
    assert reading.problems == ()
    assert len(reading.records) == 3 * 4 + 1
    by_key = latest(reading.records)
    for suite in ("longmemeval", "locomo", "beir"):
        for mode in ("conservative", "balanced", "tokenmax"):
            record = by_key[(suite, mode)]
            assert record.status is RunStatus.COMPLETED, record.reason
            assert record.run_id.endswith(f"-{suite}-{mode}-42") and record.seed == 42
            figures = ", ".join(f"{name} {value:.4f}" for name, value in record.metrics.items())
            assert f"[eval run-all] {record.run_id}: completed, {figures}\n" in out
            assert record.per_question and record.metrics and record.data_fingerprint
            assert record.avg_tokens is not None and record.p99_latency_ms is not None
            assert record.cost_per_query_usd == 0.0
    assert set(by_key[("locomo", "balanced")].metrics) == {
        "recall@5",
        "recall@10",
        "ndcg@10",
        "mrr",
    }
    assert "session_recall_any@10" in by_key[("longmemeval", "tokenmax")].metrics
    for suite in ("locomo", "beir"):  # the confidence's calibration, in the log and the report
        for mode in ("conservative", "balanced", "tokenmax"):
            found = by_key[(suite, mode)].details["calibration"]
            assert 0.0 <= found["ece"] <= 1.0 and found["bins"] == 10
            counted = sum(band["results"] for band in found["bands"].values())
            assert counted == found["results"] and found["results"] + found["empty"] > 0
    report = compare(reading.records, resamples=200).markdown
    section = report.split("## beir", 1)[1].split("### Calibration of the confidence", 1)[1]
    beir = by_key[("beir", "balanced")].details["calibration"]
    assert f"| balanced | {beir['ece']:.4f} | {beir['mean_confidence']:.4f} |" in section
    bench = by_key[("brainbench", "n/a")]
    assert bench.status is RunStatus.COMPLETED and bench.metrics["graph_checks_passed"] == 1.0
    replayed = by_key[("replay", "balanced")]
    assert replayed.status is RunStatus.SKIPPED and "no brain to replay against" in str(
        replayed.reason
    )
    assert f"{replayed.run_id}: skipped (no brain to replay against" in out


def test_missing_data_is_skipped_with_its_reason(git_root: Path) -> None:
    result = run(
        "eval",
        "run-all",
        "--suites",
        "longmemeval,locomo",
        "--modes",
        "balanced",
        "--data",
        f"locomo={git_root / 'nope.json'}",
        "--budget-usd-retrieval",
        "5",
    )
    assert result.exit_code == 0, result.output
    assert (
        "-longmemeval-balanced-42: skipped (no data: give --data longmemeval=PATH)" in result.output
    )
    assert f"-locomo-balanced-42: skipped (data missing: {git_root / 'nope.json'}" in result.output


def test_without_a_terminal_the_budget_flags_are_required(git_root: Path) -> None:
    result = run("eval", "run-all", "--suites", "brainbench")
    assert result.exit_code == 1
    assert "no terminal to confirm the budget" in result.output
    assert "[eval run-all] cost estimate:" in result.output  # the estimate still comes first
    answered = run(
        "eval", "run-all", "--suites", "locomo", "--answer", "--budget-usd-retrieval", "5",
        env=ANSWER_ENV,
    )  # fmt: skip
    assert answered.exit_code == 1 and "--answer needs an explicit --budget-usd-answer" in (
        answered.output
    )
    assert not (git_root / ".nexusbrain-evals").exists()


def test_a_sweep_over_a_cap_is_refused_unless_yes(git_root: Path) -> None:
    result = run(
        "eval",
        "run-all",
        "--suites",
        "locomo",
        *data_args(git_root),
        "--answer",
        "--budget-usd-retrieval",
        "5",
        "--budget-usd-answer",
        "0.0001",
        env=ANSWER_ENV,
    )
    assert result.exit_code == 1
    # 3 questions x (160 prompt + 6000 context) in, 3 x 200 out, at $0.15 / $0.60 per million
    assert (
        "locomo/tokenmax: retrieval $0.00 (local compute), answer generation $0.0031 (3 questions"
        in (result.output)
    )
    assert "refusing the sweep: answer generation estimate $0.0053 exceeds the cap $0.0001" in (
        result.output
    )
    assert not (git_root / ".nexusbrain-evals").exists()


def test_bad_modes_suites_and_data_are_named() -> None:
    assert "--modes 'fast'" in run("eval", "run-all", "--modes", "fast").output
    assert "--suites 'mteb'" in run("eval", "run-all", "--suites", "mteb").output
    assert "--data 'locomo'" in run("eval", "run-all", "--data", "locomo").output


# the results log


def test_results_path_is_at_the_git_root_else_here(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    (tmp_path / "repo" / "a" / "b").mkdir(parents=True)
    expected = (tmp_path / "repo").resolve() / ".nexusbrain-evals" / "eval-results.jsonl"
    assert results_path(tmp_path / "repo" / "a" / "b") == expected
    (tmp_path / "plain").mkdir()
    plain = (tmp_path / "plain").resolve() / ".nexusbrain-evals" / "eval-results.jsonl"
    assert results_path(tmp_path / "plain") == plain


def test_the_commit_names_head_and_marks_changed_tracked_files(tmp_path: Path) -> None:
    name = commit.__wrapped__  # uncached: the test changes the checkout between calls
    assert name(tmp_path) == "unknown"
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.txt").write_text("one\n")
    author = ["-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "-C", str(tmp_path), "add", "a.txt"], check=True)
    subprocess.run(["git", "-C", str(tmp_path), *author, "commit", "-qm", "a"], check=True)
    head = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "--short=12", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (tmp_path / "new.txt").write_text("untracked files do not count\n")
    assert name(tmp_path) == head
    (tmp_path / "a.txt").write_text("two\n")
    assert name(tmp_path) == head + "+dirty"


def test_the_reader_takes_hand_written_lines_and_skips_malformed_ones() -> None:
    lines = [
        b'{"run_id": "x-locomo-balanced-1", "suite": "locomo", "mode": "balanced",'
        b' "ran_at": "2026-01-01T00:00:00Z", "status": "completed", "metrics": {"mrr": 0.5}}',
        b"{not json",
        b'{"run_id": "r", "suite": "locomo", "mode": "balanced", "status": "completed",'
        b' "metrics": {}}',
        b"",
        b'{"run_id": "r", "suite": "s", "mode": "m", "ran_at": "2026-01-01", "status": "done",'
        b' "metrics": {}}',
        b'{"run_id": "r", "suite": "s", "mode": "m", "ran_at": "2026-01-01",'
        b' "status": "failed", "metrics": {"mrr": "high"}}',
        b"[1, 2]",
        b'{"run_id": "y-locomo-balanced-1", "suite": "locomo", "mode": "balanced",'
        b' "ran_at": "2026-02-01T00:00:00+00:00", "status": "skipped", "metrics": {}}',
    ]
    reading = parse_lines(lines)
    assert [p.split(":")[0] for p in reading.problems] == [
        "line 2",
        "line 3",
        "line 5",
        "line 6",
        "line 7",
    ]
    assert "missing field 'ran_at'" in reading.problems[1]
    assert "'done' is not a valid RunStatus" in reading.problems[2]
    assert "metrics.mrr" in reading.problems[3]
    first = reading.records[0]
    assert first.metrics == {"mrr": 0.5} and first.per_question == () and first.commit == "unknown"
    assert first.ran_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert latest(reading.records)[("locomo", "balanced")].run_id == "y-locomo-balanced-1"


def test_log_lines_round_trip(tmp_path: Path) -> None:
    record = _record("balanced", [0.5, 1.0], ran_at=datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC))
    log = tmp_path / "deep" / "log.jsonl"
    append_records(log, [record, record])
    reading = read_log(log)
    assert reading.problems == ()
    assert [record_view(r) for r in reading.records] == [record_view(record)] * 2


# the report


def _record(
    mode: str,
    scores: list[float],
    *,
    commit: str = "abc",
    suite: str = "locomo",
    data: str = "locomo.json",
    ran_at: datetime = datetime(2026, 1, 2, tzinfo=UTC),
    tokens: float = 100.0,
) -> RunRecord:
    """A run whose four metrics per question are derived from one score per question."""
    questions = tuple(
        QuestionScores(
            f"q{i}",
            {"recall@5": s, "recall@10": min(1.0, s + 0.2), "ndcg@10": s * 0.9, "mrr": s * 0.8},
        )
        for i, s in enumerate(scores)
    )
    keys = ("recall@5", "recall@10", "ndcg@10", "mrr")
    return RunRecord(
        run_id=f"{commit}-{suite}-{mode}-42",
        ran_at=ran_at,
        suite=suite,
        mode=mode,
        status=RunStatus.COMPLETED,
        metrics={k: float(np.mean([q.metrics[k] for q in questions])) for k in keys},
        commit=commit,
        seed=42,
        per_question=questions,
        avg_tokens=tokens,
        cost_per_query_usd=0.0,
        p99_latency_ms=12.5,
        data=data,
        data_fingerprint="f" * 64,
    )


def _three_modes(commit_of_tokenmax: str = "abc") -> list[RunRecord]:
    rng = np.random.default_rng(1)
    base = rng.random(120).round(3)
    noise = rng.normal(0, 0.02, 120)
    return [
        _record("conservative", list(base), tokens=300),
        _record("balanced", list(np.clip(base + noise, 0, 1)), tokens=600),
        _record(
            "tokenmax",
            list(np.clip(base + 0.15, 0, 1)),
            commit=commit_of_tokenmax,
            tokens=1500,
        ),
    ]


def test_the_report_has_the_sections_the_threshold_and_verdicts() -> None:
    report = compare(_three_modes(), seed=42, resamples=2_000, source="log.jsonl")
    text = report.markdown
    assert text.startswith("# Search Mode Comparison\n")
    assert (
        "Bonferroni: 12 comparisons in this report; corrected threshold 0.05/12 = 0.0042." in text
    )
    assert "## locomo" in text and "| mode | status | run id | ran at |" in text
    assert (
        "| conservative | completed | abc-locomo-conservative-42 | 2026-01-02 00:00:00 UTC |"
        in (text)
    )
    assert "| recall@5 | 0.5093 | 0.5067 | 0.6501 |" in text  # 4 decimals
    assert (
        "- recall@5. Plain English: balanced puts 0.3 fewer in 100 of each question's evidence "
        "turns in the top 5 than conservative; tokenmax puts 14.1 more in 100" in text
    )
    verdicts = {(c.first, c.second, c.metric): report.verdict(c).value for c in report.comparisons}
    assert verdicts[("conservative", "tokenmax", "recall@5")] == "significant"
    assert verdicts[("conservative", "balanced", "recall@5")] in (
        "tie",
        "not significant after correction",
    )
    assert "| recall@5 | tokenmax − conservative | 120 | +0.1" in text
    assert "| mode | avg_tokens | cost_per_query_usd | p99_latency_ms |" in text
    assert "| tokenmax | 1500.0 | 0.000000 | 12.5 |" in text
    assert (
        "Trade-off: tokenmax scores +0.1408 recall@5 over conservative (significant) for 1500 "
        "context tokens and $0.000000 per query, against 300 context tokens" in text
    )


def test_the_same_log_and_seed_give_a_byte_identical_report(git_root: Path, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    append_records(log, _three_modes())
    first = run("eval", "compare", "--results", str(log), "--resamples", "500")
    second = run("eval", "compare", "--results", str(log), "--resamples", "500")
    assert first.exit_code == 0, first.output
    assert first.stdout_bytes == second.stdout_bytes
    other = run("eval", "compare", "--results", str(log), "--resamples", "500", "--seed", "7")
    assert other.stdout_bytes != first.stdout_bytes
    out = tmp_path / "report.md"
    written = run("eval", "compare", "--results", str(log), "-o", str(out), "--resamples", "500")
    assert written.exit_code == 0 and out.read_bytes() == first.stdout_bytes


def test_runs_on_another_commit_are_not_paired_and_say_so() -> None:
    text = compare(_three_modes(commit_of_tokenmax="def"), resamples=500).markdown
    assert "- conservative and tokenmax are not paired: commit abc vs def." in text
    assert "- balanced and tokenmax are not paired: commit abc vs def." in text
    assert "Bonferroni: 4 comparisons in this report" in text
    assert "tokenmax − " not in text


def test_other_data_is_not_paired_and_skipped_runs_are_listed() -> None:
    records = _three_modes()[:2]
    records[1] = _record("balanced", [0.5] * 10, data="other.json")
    object.__setattr__(records[1], "data_fingerprint", "0" * 64)
    skipped = RunRecord(
        "abc-locomo-tokenmax-42",
        datetime(2026, 1, 2, tzinfo=UTC),
        "locomo",
        "tokenmax",
        RunStatus.SKIPPED,
        {},
        reason="no data",
    )
    text = compare([*records, skipped], resamples=500).markdown
    assert "not paired: data locomo.json (sha256 ffffffffffff) vs other.json (sha256 0000" in text
    assert "| tokenmax | skipped (no data) | abc-locomo-tokenmax-42 |" in text
    assert "No comparisons: no pair of runs with per-question scores." in text


def test_malformed_log_lines_are_reported_not_fatal(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    append_records(log, _three_modes())
    with log.open("ab") as handle:
        handle.write(b"garbage\n")
    result = run("eval", "compare", "--results", str(log), "--resamples", "200")
    assert result.exit_code == 0
    assert f"{log}: line 4: not JSON" in result.stderr
    assert "Skipped log lines:\n\n- line 4: not JSON" in result.stdout


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_compare_draws_the_intervals(tmp_path: Path, suffix: str) -> None:
    pytest.importorskip("matplotlib")
    log = tmp_path / "log.jsonl"
    append_records(log, _three_modes())
    plot = tmp_path / f"intervals{suffix}"
    result = run(
        "eval", "compare", "--results", str(log), "--plot", str(plot), "--resamples", "200"
    )
    assert result.exit_code == 0, result.output
    assert "(12 intervals)" in result.stderr and plot.stat().st_size > 1000
    assert (
        run("eval", "compare", "--results", str(log), "--plot", str(tmp_path / "x.pdf")).exit_code
        == 1
    )


LOCOMO_DEV = (
    Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo" / "locomo_dev.json"
)


@pytest.mark.slow
@pytest.mark.skipif(not LOCOMO_DEV.exists(), reason="shared LoCoMo data not present")
def test_the_documented_sweep_on_locomo_dev(git_root: Path) -> None:
    """docs/evaluation.md's sweep and report, on the LoCoMo dev data only (about a minute)."""
    result = run(
        "eval",
        "run-all",
        "--suites",
        "locomo",
        "--seed",
        "42",
        "--data",
        f"locomo={LOCOMO_DEV}",
        "--budget-usd-retrieval",
        "5",
        env={"BRAIN_EMBEDDER": "edge"},
    )
    assert result.exit_code == 0, result.output
    assert result.output.count(": completed") == 3
    report = run("eval", "compare", "--suite", "locomo").stdout
    assert "Bonferroni: 12 comparisons in this report; corrected threshold 0.05/12 = 0.0042." in (
        report
    )
    assert "| recall@10 | balanced − conservative | 760 |" in report


# models


def test_runs_with_other_models_are_logged_and_compared_by_model(git_root: Path) -> None:
    """`--embedder`/`--reranker` choose the scratch brains' models; the log records their ids,
    and the report names each run by mode and models and pairs them as it pairs modes."""
    sweep = ("eval", "run-all", "--suites", "beir", "--modes", "balanced", *data_args(git_root))
    plain = run(*sweep, "--budget-usd-retrieval", "5")
    reranked = run(*sweep, "--reranker", "hashing", "--budget-usd-retrieval", "5")
    assert plain.exit_code == 0 and reranked.exit_code == 0, plain.output + reranked.output
    log = git_root / ".nexusbrain-evals" / "eval-results.jsonl"
    first, second = read_log(log).records
    assert first.models == {"embedder": "hashing-256"}
    assert second.models == {"embedder": "hashing-256", "reranker": "cosine:hashing-256"}
    assert first.run_id.endswith("-beir-balanced-42")
    assert second.run_id == f"{first.run_id}-env+hashing"
    assert json.loads(log.read_text().splitlines()[1])["models"] == second.models
    assert len(latest(read_log(log).records)) == 1  # by mode alone, the later run
    report = run("eval", "compare", "--suite", "beir").stdout
    named = ["balanced · hashing-256 + none", "balanced · hashing-256 + cosine:hashing-256"]
    assert all(f"| {name} | completed |" in report for name in named)
    paired = [line for line in report.splitlines() if line.startswith("| ndcg@10 | balanced ·")]
    assert len(paired) == 1 and all(name in paired[0] for name in named)  # the bootstrap's row


def test_an_eval_records_the_models_it_searched_with(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "beir")
    args = ["eval", "beir", str(folder), "--split", "dev", "--json"]
    chosen = run(
        *args, "--embedder", "hashing", "--reranker", "hashing", env={"BRAIN_EMBEDDER": "edge"}
    )
    assert chosen.exit_code == 0, chosen.output
    retrieval = json.loads(chosen.stdout)["config"]["retrieval"]
    assert retrieval["embedder"] == "hashing"
    assert retrieval["models"] == {"embedder": "hashing-256", "reranker": "cosine:hashing-256"}
    lexical = run(*args, "--lexical-only", env={"BRAIN_RERANKER": "hashing"})
    assert json.loads(lexical.stdout)["config"]["retrieval"]["models"] == {}
    refused = run(*args, "--embedder", "bert")
    assert refused.exit_code != 0 and "embedding profile 'bert' is not one of" in refused.output
