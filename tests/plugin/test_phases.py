"""Grading belongs to the test call: dry runs grade nothing, call no judge, write no result."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fake_llm import FakeLLM, verdict
from tests.judge.test_judge_e2e import judge_args

Write = Callable[[str, str], Path]

SUITE = """
cases:
  - id: inline_q
    question: "What is the horizon of a 1-day VaR?"
    response: "One day."
    criteria:
      - {id: day, type: any_of, any_of: [one day]}
      - {id: horizon, requirement: "Says the horizon is one day"}
  - id: target_q
    question: "Anything?"
    target: "app:answer"
    criteria:
      - {id: says, type: any_of, any_of: [answer]}
      - {id: judged, requirement: "Answers"}
"""

APP = """
from pathlib import Path

def answer(case):
    Path("target-called").write_text("yes")
    return "an answer"
"""


@pytest.fixture
def project(pytester: pytest.Pytester, write: Write, fake_llm: FakeLLM) -> FakeLLM:
    write("evals/s.rubric.yaml", SUITE)
    write("app.py", APP)
    pytester.syspathinsert()
    fake_llm.respond_with(lambda request: verdict("MET", "judged"))
    return fake_llm


@pytest.mark.parametrize("dry_run", ["--setup-plan", "--setup-only", "--collect-only"])
def test_a_dry_run_grades_nothing_and_calls_no_judge(
    pytester: pytest.Pytester, project: FakeLLM, dry_run: str
) -> None:
    result = pytester.runpytest(
        "--rubric-dir",
        "evals",
        *judge_args(project),
        "--rubric-json",
        "out.json",
        "--rubric-cache",
        "off",
        dry_run,
    )
    assert result.ret == pytest.ExitCode.OK
    assert project.requests == []
    assert not (pytester.path / "out.json").exists()
    assert not (pytester.path / "target-called").exists()
    assert "rubric summary" not in result.stdout.str()


def test_the_grade_is_made_in_the_call_and_an_error_is_still_an_error(
    pytester: pytest.Pytester, project: FakeLLM, write: Write
) -> None:
    write(
        "evals/broken.rubric.yaml",
        """
        cases:
          - id: bad_regex
            response: "text"
            criteria:
              - {id: ok, type: any_of, any_of: [text]}
              - {id: rx, type: regex, pattern: "(unclosed"}
        """,
    )
    pytester.makeconftest(
        """
        import pytest

        PHASES = []

        @pytest.hookimpl(wrapper=True)
        def pytest_runtest_makereport(item, call):
            report = yield
            if report.failed or (report.when == "call" and report.passed):
                PHASES.append((item.name, report.when, report.outcome))
            return report

        def pytest_sessionfinish(session):
            with open("phases.txt", "w") as f:
                f.write(repr(sorted(PHASES)))
        """
    )
    result = pytester.runpytest(
        "--rubric-dir", "evals", *judge_args(project), "--rubric-cache", "off"
    )
    result.assert_outcomes(passed=2, errors=1)
    phases = (pytester.path / "phases.txt").read_text()
    assert phases == repr(
        [
            ("bad_regex[inline]", "call", "failed"),
            ("inline_q[inline]", "call", "passed"),
            ("target_q[answer]", "call", "passed"),
        ]
    )
    result.stdout.fnmatch_lines(["*ERROR at call of rubric: bad_regex[[]inline[]]*"])
    assert (pytester.path / "target-called").exists()
