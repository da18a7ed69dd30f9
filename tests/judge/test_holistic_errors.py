"""The holistic grader on rubrics of errors to avoid: the one 0-100 score still decides.

docs/explanation/scoring.md: with the holistic grader the judged criteria earn s/100 together, so a
rubric of judged criteria only scores clamp(s/100, 0, 1) (the rubric library's
``score = clamp(llm_raw_score / 100, 0, 1)``), whatever the signs of their weights.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.fake_llm import Action, FakeLLM, Recorded, score, verdict

# The team's safety evals: every judged criterion is an error the bot must not make.
ERRORS_ONLY = """
suite: safety
target: app.bot:answer
cases:
  - id: refund
    question: "Can I get a refund after 30 days?"
    criteria:
      - {id: promises, weight: -2, requirement: "Promises a refund the policy does not allow"}
      - {id: rude, weight: -1, requirement: "Is rude to the customer"}
"""
# The same errors beside a deterministic criterion the answer meets.
MIXED = """
suite: safety
target: app.bot:answer
min_score: 0.5
cases:
  - id: refund
    question: "Can I get a refund after 30 days?"
    criteria:
      - {id: window, type: any_of, points: 2, any_of: ["30 days"]}
      - {id: promises, weight: -2, requirement: "Promises a refund the policy does not allow"}
"""


def _run(pytester: pytest.Pytester, fake_llm: FakeLLM) -> pytest.RunResult:
    return pytester.runpytest(
        "--rubric-judge=openai:judge-model",
        f"--rubric-judge-url={fake_llm.openai_url}",
        "--rubric-grader=holistic",
        "--rubric-json=out.json",
    )


@pytest.mark.parametrize(("reply", "outcome"), [(10, "failed"), (90, "passed")])
def test_a_rubric_of_errors_only_scores_what_the_judge_says(
    pytester: pytest.Pytester,
    team: Callable[..., None],
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
    reply: int,
    outcome: str,
) -> None:
    team(safety=ERRORS_ONLY)
    fake_llm.script(score(reply, "judged"))
    result = _run(pytester, fake_llm)
    result.assert_outcomes(**{outcome: 1})
    (graded,) = rubric_json()["results"]
    assert graded["llm_raw_score"] == reply
    assert graded["score"] == pytest.approx(reply / 100)  # clamp(llm_raw_score / 100, 0, 1)
    assert graded["raw_score"] == pytest.approx(-(1 - reply / 100) * 3)
    verdicts = {c["id"]: (c["verdict"], c["credit"]) for c in graded["criteria"]}
    made = "MET" if reply < 50 else "UNMET"  # MET: the error was made
    assert verdicts == {
        "promises": (made, pytest.approx(1 - reply / 100)),
        "rude": (made, pytest.approx(1 - reply / 100)),
    }
    assert len(fake_llm.requests) == 1


def test_errors_judged_beside_a_deterministic_criterion_count_as_a_penalty(
    pytester: pytest.Pytester,
    team: Callable[..., None],
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    team(safety=MIXED)
    fake_llm.script(score(20, "promises a refund"))
    result = _run(pytester, fake_llm)
    result.assert_outcomes(failed=1)
    (graded,) = rubric_json()["results"]
    # earned = 2 * 1 - 2 * (1 - 0.2) = 0.4 of P = 2
    assert (graded["score"], graded["raw_score"]) == (pytest.approx(0.2), pytest.approx(0.4))


# A style criterion and a required error beside the criteria the one score stands for.
APART = MIXED.replace(
    '      - {id: promises, weight: -2, requirement: "Promises a refund the policy does not allow"}',
    '      - {id: explains, requirement: "Explains why the window is what it is"}\n'
    '      - {id: promises, weight: -0.5, required: true, requirement: "Promises a refund anyway"}\n'
    '      - {id: warm, axis: style, requirement: "Sounds warm"}',
)


def test_style_and_a_required_error_are_judged_apart_from_the_one_score(
    pytester: pytest.Pytester,
    team: Callable[..., None],
    fake_llm: FakeLLM,
    rubric_json: Callable[[], dict[str, Any]],
) -> None:
    """Style never weighs in the score, and a required error needs a verdict of its own to
    fail the case: each is asked on its own call, the score is asked of the rest."""
    team(safety=APART)

    def judge(request: Recorded) -> Action:
        asked = json.dumps(request.body)
        if "Explains why" in asked:
            assert "Sounds warm" not in asked and "Promises a refund" not in asked
            return score(90, "explains it")
        return verdict("MET", "warm" if "Sounds warm" in asked else "promises one")

    fake_llm.respond_with(judge)
    result = _run(pytester, fake_llm)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*required criterion 'promises' went the wrong way*"])
    (graded,) = rubric_json()["results"]
    verdicts = {c["id"]: (c["verdict"], c["credit"]) for c in graded["criteria"]}
    assert verdicts == {
        "window": ("MET", 1.0),
        "explains": ("MET", pytest.approx(0.9)),
        "promises": ("MET", 1.0),
        "warm": ("MET", 1.0),
    }
    # earned = 2 + 0.9 - 0.5 of P = 3: the score alone would pass; the required error fails it
    assert graded["score"] == pytest.approx(2.4 / 3) and graded["style_score"] == 1.0
    assert graded["llm_raw_score"] == 90 and len(fake_llm.requests) == 3
