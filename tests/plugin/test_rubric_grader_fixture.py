"""``rubric_grader.grade()`` in a team's unit test judges with the session's judge when there
is one, and says why it could not when there is none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fake_llm import FakeLLM, Recorded, verdict

# A unit test of the team's bot that grades without asserting, then checks what it needs.
GRADING_TEST = """
from pytest_rubric import Rubric

from app.bot import answer


def test_refund_answer_is_graded(rubric_grader):
    compiled = rubric_grader.compile(
        Rubric(
            question="Can I get a refund after 30 days?",
            criteria=[
                {"id": "window", "type": "any_of", "any_of": ["30 days"]},
                {"id": "policy", "requirement": "Says whether a refund is possible after 30 days"},
            ],
        )
    )
    result = rubric_grader.grade(answer(type("Case", (), {"id": "refund"})), compiled)
    print("verdicts:", {c.id: str(c.verdict) for c in result.criteria})
    print("score:", result.score)
    assert result.passed
"""


def _judge_says_met(request: Recorded) -> object:
    return verdict("MET", "it says refunds end at 30 days")


def test_grade_judges_with_the_sessions_judge(
    pytester: pytest.Pytester,
    team: Callable[..., None],
    write: Callable[[str, str], Path],
    fake_llm: FakeLLM,
) -> None:
    team(ini="testpaths = tests\npythonpath = .\n")
    write("tests/test_bot.py", GRADING_TEST)
    fake_llm.respond_with(_judge_says_met)
    result = pytester.runpytest(
        "tests/test_bot.py",
        "-s",
        "--rubric-judge=openai:judge-model",
        f"--rubric-judge-url={fake_llm.openai_url}",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*verdicts: {'window': 'MET', 'policy': 'MET'}", "score: 1.0"])
    (request,) = fake_llm.requests
    assert "Says whether a refund is possible after 30 days" in str(request.body)


def test_grade_without_a_judge_skips_the_judged_criteria_saying_why(
    pytester: pytest.Pytester, team: Callable[..., None], write: Callable[[str, str], Path]
) -> None:
    team(ini="testpaths = tests\npythonpath = .\n")
    write("tests/test_bot.py", GRADING_TEST)
    result = pytester.runpytest("tests/test_bot.py", "-s")
    result.assert_outcomes(passed=1)  # what ran passed: the judged criterion is left out
    result.stdout.fnmatch_lines(["*verdicts: {'window': 'MET', 'policy': 'SKIPPED'}"])
