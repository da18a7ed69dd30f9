"""``--rubric-judge-samples K``: K independent samples per judged criterion, combined by
majority (boolean) or mean (score kind), with the agreement kept and disagreement flagged."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rubric._llm.base import SAMPLE_TEMPERATURE, SEED
from pytest_rubric._results import Outcome, Verdict
from pytest_rubric.judge.runner import combine
from tests.fake_llm import Action, FakeLLM, Recorded, score, status, verdict

Write = Callable[[str, str], Path]

MET, UNMET, ERROR = Verdict.MET, Verdict.UNMET, Verdict.ERROR


def _criterion(*, weight: float = 1.0, kind: str = "boolean") -> Any:
    return SimpleNamespace(id="c", kind=kind, effective_weight=weight)


def _o(verdict_: Verdict, credit: float | None = None, reason: str = "r") -> Outcome:
    if credit is None:
        credit = 1.0 if verdict_ is MET else 0.0
    return Outcome(verdict_, credit, reason)


# --- combining samples (pure logic) ---------------------------------------------------------


def test_the_majority_verdict_wins_and_the_agreement_is_kept() -> None:
    out = combine(_criterion(), [_o(MET, reason="a"), _o(UNMET, reason="b"), _o(MET)], mean=False)
    assert (out.verdict, out.credit, out.agreement) == (MET, 1.0, pytest.approx(2 / 3))
    assert out.reason == "a (2 of 3 votes MET)"
    assert out.votes == ((MET, 1.0), (UNMET, 0.0), (MET, 1.0))


def test_samples_that_agree_have_agreement_one() -> None:
    out = combine(_criterion(), [_o(UNMET)] * 4, mean=False)
    assert (out.verdict, out.agreement) == (UNMET, 1.0)


@pytest.mark.parametrize(("weight", "expected"), [(1.0, UNMET), (-2.0, MET)])
def test_a_tie_goes_against_the_answer(weight: float, expected: Verdict) -> None:
    """A split judge never earns credit: UNMET for a positive criterion, MET for an error one."""
    out = combine(_criterion(weight=weight), [_o(MET), _o(UNMET)], mean=False)
    assert (out.verdict, out.agreement) == (expected, 0.5)


def test_score_kind_takes_the_mean_credit() -> None:
    out = combine(
        _criterion(kind="score"), [_o(MET, 0.75), _o(MET, 0.75), _o(UNMET, 0.0)], mean=True
    )
    assert out.credit == pytest.approx(0.5)
    assert out.verdict is MET  # a mean credit of 0.5 is MET, like a single score would be
    assert out.agreement == pytest.approx(2 / 3)


def test_one_failed_sample_makes_the_criterion_error() -> None:
    out = combine(_criterion(), [_o(MET), _o(ERROR, 0.0, "HTTP 500"), _o(MET)], mean=False)
    assert out.verdict is ERROR and out.credit == 0.0
    assert out.reason == "1 of 3 judge votes failed; vote 2: HTTP 500"


@given(
    st.lists(st.sampled_from([MET, UNMET]), min_size=1, max_size=9),
    st.sampled_from([1.0, -1.0]),
)
def test_boolean_combination_properties(verdicts: list[Verdict], weight: float) -> None:
    out = combine(_criterion(weight=weight), [_o(v) for v in verdicts], mean=False)
    met = verdicts.count(MET)
    assert out.agreement == max(met, len(verdicts) - met) / len(verdicts)
    if met * 2 > len(verdicts):
        assert out.verdict is MET
    elif met * 2 < len(verdicts):
        assert out.verdict is UNMET
    # However the samples fall, the combined criterion is never more in the
    # answer's favour than its majority.
    assert out.credit == (1.0 if out.verdict is MET else 0.0)


@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), min_size=1, max_size=9))
def test_score_combination_properties(credits: list[float]) -> None:
    out = combine(
        _criterion(kind="score"),
        [_o(MET if c >= 0.5 else UNMET, c) for c in credits],
        mean=True,
    )
    assert min(credits) <= out.credit <= max(credits)
    assert (out.agreement == 1.0) == (len(set(credits)) == 1)


# --- end to end -----------------------------------------------------------------------------

RUBRIC = """
cases:
  - id: q1
    question: "What is the horizon of a 1-day VaR?"
    responses: {a: "One day.", b: "It depends."}
    criteria:
      - {id: day, type: any_of, any_of: [day, depends]}
      - {id: horizon, requirement: "Says the horizon is one day"}
"""


def _by_seed(replies: dict[int, Action]) -> Callable[[Recorded], Action]:
    """Answer by the request's seed: sample i carries seed SEED + i."""
    return lambda request: replies[request.body["seed"]]


def _run(pytester: pytest.Pytester, fake: FakeLLM, *extra: str) -> pytest.RunResult:
    return pytester.runpytest(
        "--rubric-judge=openai:m",
        f"--rubric-judge-url={fake.openai_url}",
        "--rubric-json",
        "out.json",
        "-rA",
        *extra,
    )


@pytest.fixture
def judged(pytester: pytest.Pytester, write: Write) -> None:
    write("c.rubric.yaml", RUBRIC)
    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\n")


def test_disagreeing_samples_are_flagged_unstable(
    pytester: pytest.Pytester,
    judged: None,
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    """In one process: e2e/test_run_modes samples its judge three times, has a criterion the
    samples disagree on, and finds the summary and the JSON the same under ``-n 2``."""

    def reply(request: Recorded) -> Action:
        user = request.body["messages"][1]["content"]
        if "One day." in user:  # subject a: two of three samples say MET
            return verdict("UNMET" if request.body["seed"] == SEED + 1 else "MET", "one day")
        return verdict("UNMET", "no horizon")  # subject b: all agree

    fake_llm.respond_with(reply)
    result = _run(pytester, fake_llm, "--rubric-judge-samples=3")
    result.assert_outcomes(passed=1, failed=1)
    assert len(fake_llm.requests) == 6
    result.stdout.fnmatch_lines(
        [
            "*--rubric-judge-samples 3*",
            "*rubric summary*",
            "1 judged criteria unstable (their judge's votes, or a panel's judges, disagreed); the "
            "verdicts below are "
            "majority votes or means:",
            "  c.rubric.yaml::q1[a] horizon: agreement 0.67",
            "judge openai:m: 6 calls*",
        ]
    )
    by_subject = {r["subject"]: r for r in rubric_json()["results"]}
    a, b = by_subject["a"], by_subject["b"]
    horizon = a["criteria"][1]
    assert horizon["verdict"] == "MET" and horizon["credit"] == 1.0
    assert horizon["agreement"] == pytest.approx(2 / 3) and horizon["unstable"] is True
    assert [s["verdict"] for s in horizon["samples"]] == ["MET", "UNMET", "MET"]
    assert "unstable" in a["flags"]
    assert b["criteria"][1]["unstable"] is False and b["criteria"][1]["agreement"] == 1.0
    assert "unstable" not in b["flags"]
    assert "agreement" not in a["criteria"][0]  # deterministic criteria are not sampled


def test_each_sample_is_an_independent_draw_with_its_own_cache_entry(
    pytester: pytest.Pytester, judged: None, fake_llm: FakeLLM
) -> None:
    fake_llm.respond_with(lambda request: verdict("MET"))
    _run(pytester, fake_llm, "--rubric-judge-samples=3").assert_outcomes(passed=2)
    bodies = [r.body for r in fake_llm.requests]
    assert sorted(b["seed"] for b in bodies) == [SEED, SEED, SEED + 1, SEED + 1, SEED + 2, SEED + 2]
    assert {b["temperature"] for b in bodies} == {SAMPLE_TEMPERATURE}
    with sqlite3.connect(pytester.path / ".rubric_cache" / "judge.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM replies").fetchone()[0] == 6

    _run(pytester, fake_llm, "--rubric-judge-samples=3").assert_outcomes(passed=2)
    assert len(fake_llm.requests) == 6  # warm: every sample from the cache

    # One greedy sample is a different call (temperature 0): not served by the samples.
    _run(pytester, fake_llm).assert_outcomes(passed=2)
    assert len(fake_llm.requests) == 8
    assert {r.body["temperature"] for r in fake_llm.requests[6:]} == {0}
    result = json.loads((pytester.path / "out.json").read_text())
    assert all("agreement" not in c for r in result["results"] for c in r["criteria"])


def test_a_failed_sample_is_an_error_and_only_it_is_asked_again(
    pytester: pytest.Pytester, judged: None, fake_llm: FakeLLM
) -> None:
    pytester.makeini("[pytest]\nrubric_judge_backoff = 0.01\nrubric_judge_attempts = 1\n")
    fake_llm.respond_with(
        _by_seed({SEED: verdict("MET"), SEED + 1: status(503), SEED + 2: verdict("MET")})
    )
    result = _run(pytester, fake_llm, "--rubric-judge-samples=3", "c.rubric.yaml::q1[a]")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*1 of 3 judge votes failed; vote 2: *HTTP 503*"])
    fake_llm.respond_with(lambda request: verdict("MET"))
    before = len(fake_llm.requests)
    _run(pytester, fake_llm, "--rubric-judge-samples=3", "c.rubric.yaml::q1[a]").assert_outcomes(
        passed=1
    )
    assert len(fake_llm.requests) == before + 1


def test_score_kind_and_holistic_samples_are_averaged(
    pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM
) -> None:
    write(
        "s.rubric.yaml",
        """
        - id: q1
          response: "One day."
          min_score: 0.5
          criteria:
            - {id: depth, type: judge, kind: score, requirement: "Explains the horizon"}
        """,
    )
    fake_llm.respond_with(_by_seed({SEED: score(5), SEED + 1: score(3), SEED + 2: score(1)}))
    _run(pytester, fake_llm, "--rubric-judge-samples=3").assert_outcomes(passed=1)
    depth = json.loads((pytester.path / "out.json").read_text())["results"][0]["criteria"][0]
    assert depth["credit"] == pytest.approx(0.5)
    assert depth["agreement"] == pytest.approx(1 / 3) and depth["unstable"] is True

    fake_llm.respond_with(_by_seed({SEED: score(90), SEED + 1: score(90), SEED + 2: score(30)}))
    result = _run(pytester, fake_llm, "--rubric-judge-samples=3", "--rubric-grader=holistic")
    result.assert_outcomes(passed=1)
    data = json.loads((pytester.path / "out.json").read_text())["results"][0]
    assert data["score"] == pytest.approx(0.7)
    assert data["criteria"][0]["agreement"] == pytest.approx(2 / 3)


def test_the_sample_count_is_checked(pytester: pytest.Pytester, judged: None) -> None:
    result = pytester.runpytest("--rubric-judge-samples=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--rubric-judge-samples*'0' is not a positive whole number*"])
    pytester.makeini("[pytest]\nrubric_judge_samples = 2.5\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*rubric_judge_samples = 2.5 must be a whole number*"])
