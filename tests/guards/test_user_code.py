"""User code (targets, callables, your own judge, hooks) ends however it likes: any
exception, SystemExit, GeneratorExit and asyncio.CancelledError included, is an ERROR of
that item or criterion, recorded in every output; the session never hangs on it
(docs/development/reliability.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import lines_in_any_order

pytestmark = pytest.mark.hostile

Write = Callable[[str, str], Path]

TARGETS = """
import asyncio
import sys


def exits(question: str) -> str:
    sys.exit(3)


def generator_exit(question: str) -> str:
    raise GeneratorExit("closed")


async def cancelled(question: str) -> str:
    raise asyncio.CancelledError("gone")


def fine(question: str) -> str:
    return "One day."


def check_exits(response, case):
    sys.exit("no")
"""

SUITE = """
targets: {exits: "targets:exits", gen: "targets:generator_exit", cancel: "targets:cancelled",
          fine: "targets:fine"}
cases:
  - id: horizon
    question: "What is the horizon?"
    criteria:
      - {id: day, type: any_of, any_of: ["one day"]}
  - id: checked
    question: "And again?"
    criteria:
      - {id: day, type: any_of, any_of: ["one day"]}
      - {id: own, type: callable, function: "targets:check_exits"}
"""


@pytest.mark.parametrize("mode", [[], ["-n", "1"]], ids=["in-process", "worker"])
def test_base_exceptions_of_targets_and_callables_are_errors_in_every_output(
    pytester: pytest.Pytester, write: Write, mode: list[str]
) -> None:
    write("evals/targets.py", TARGETS)
    write("evals/e.rubric.yaml", SUITE)
    # The controller in process; under -n 1 the exceptions are raised in its worker.
    result = pytester.runpytest(
        *mode, "--rubric-dir=evals", "--rubric-json=out.json", "--junitxml=j.xml"
    )
    result.assert_outcomes(passed=1, errors=7)
    lines_in_any_order(
        result,
        [
            "*target targets:exits raised SystemExit: 3*",
            "*target targets:generator_exit raised GeneratorExit: closed*",
            "*target targets:cancelled raised CancelledError: gone*",
            "*targets:check_exits raised SystemExit: no*",
            # The application's own frames, as the worker that ran the target reported them
            # (plugin/test_app_traceback checks the frames shown in process).
            ">       sys.exit(3)",
            "evals/targets.py:6: SystemExit",
        ],
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    document: dict[str, Any] = json.loads((pytester.path / "out.json").read_text())
    assert len(document["results"]) == 8  # every item has its result
    rows = {row["subject"]: (row["passed"], row["total"]) for row in document["leaderboard"]}
    assert rows == {"exits": (0, 2), "gen": (0, 2), "cancel": (0, 2), "fine": (1, 2)}
    junit = (pytester.path / "j.xml").read_text()
    assert junit.count("<failure") + junit.count("<error") == 7


JUDGES = """
import asyncio
import sys


class Exits:
    async def complete(self, system, user):
        sys.exit(1)


class Cancels:
    async def complete(self, system, user):
        raise asyncio.CancelledError()


def pytest_rubric_make_judge(config):
    return {JUDGE}()
"""

JUDGED = """
cases:
  - id: horizon
    question: "What is the horizon?"
    response: "One day."
    criteria:
      - {id: day, type: any_of, any_of: ["one day"]}
      - {id: says, requirement: "Says the horizon is one day"}
"""


@pytest.mark.parametrize("judge", ["Exits", "Cancels"])
def test_an_own_judge_that_exits_or_cancels_is_an_error_not_a_hang(
    pytester: pytest.Pytester, write: Write, judge: str
) -> None:
    pytester.makeconftest(JUDGES.replace("{JUDGE}", judge))
    write("j.rubric.yaml", JUDGED)
    result = pytester.runpytest_subprocess(
        "--rubric-json=out.json", "--rubric-judge-timeout=5", timeout=60
    )
    result.assert_outcomes(errors=1)
    kind = {"Exits": "SystemExit: 1", "Cancels": "CancelledError: "}[judge]
    result.stdout.fnmatch_lines([f"*judge {judge} raised {kind}*"])
    document = json.loads((pytester.path / "out.json").read_text())
    assert [c["verdict"] for c in document["results"][0]["criteria"]] == ["MET", "ERROR"]


def test_a_make_judge_hook_that_exits_is_a_usage_error(
    pytester: pytest.Pytester, write: Write
) -> None:
    pytester.makeconftest("import sys\n\ndef pytest_rubric_make_judge(config):\n    sys.exit(2)\n")
    write("j.rubric.yaml", JUDGED)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*pytest_rubric_make_judge raised SystemExit: 2*"])
