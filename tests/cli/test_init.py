"""``python -m pytest_rubric init`` in a team's project whose ``evals/targets.py`` exists:
the example never calls a function the file lacks, so the
next run is as green as the one before.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_rubric._cli.merge import main
from tests.conftest import team_project

Write = Callable[[str, str], Path]

TARGETS = """
from app.bot import reply


def support_bot(question: str) -> str:
    return reply(question)
"""


@pytest.fixture
def team(pytester: pytest.Pytester, write: Write) -> None:
    team_project(
        pytester,
        write,
        app='def reply(question: str) -> str:\n    return "Refunds within 30 days."\n',
        unit_test="from app.bot import reply\n\n\ndef test_reply():\n    assert reply('?')\n",
        targets=TARGETS,
    )
    write(
        "evals/support.rubric.yaml",
        """
        suite: support
        target: targets:support_bot
        cases:
          - id: refund
            question: "Can I get a refund?"
            criteria:
              - {id: days, type: any_of, any_of: ["30 days"]}
        """,
    )


def init(capsys: pytest.CaptureFixture[str]) -> str:
    """What ``init .`` prints, run in process in the project (pytester's directory): the
    ``main`` that ``python -m pytest_rubric`` exits with."""
    capsys.readouterr()
    assert main(["init", "."]) == 0
    return capsys.readouterr().out


def test_init_beside_an_existing_adapter_keeps_the_run_green(
    pytester: pytest.Pytester, team: None, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.runpytest().assert_outcomes(passed=2)
    out = init(capsys)
    assert (pytester.path / "evals/targets.py").read_text() == TARGETS.lstrip("\n")
    assert "kept" in out and "evals/targets.py" in out
    assert "example_targets.py" in out
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*::capital_of_france[[]answer[]] PASSED*"])


@pytest.mark.parametrize(
    "answer",
    [
        "def answer(question: str, history: list) -> str:\n    return 'Paris'\n",
        "def answer(question: str) -> str:\n    return 'Lyon'\n",  # the team's real app
    ],
    ids=["other-parameters", "other-answers"],
)
def test_init_never_calls_the_teams_own_answer(
    pytester: pytest.Pytester,
    team: None,
    write: Write,
    capsys: pytest.CaptureFixture[str],
    answer: str,
) -> None:
    """An ``answer`` the team wrote may take other parameters or answer other questions: the
    example calls the target init writes, so the next run is as green as the one before."""
    write("evals/targets.py", TARGETS + "\n\n" + answer)
    pytester.runpytest().assert_outcomes(passed=2)
    out = init(capsys)
    assert (
        "target: example_targets:answer"
        in (pytester.path / "evals/example.rubric.yaml").read_text()
    )
    assert "wrote" in out and "example_targets.py" in out
    pytester.runpytest().assert_outcomes(passed=4)
    # Run again, init writes nothing: the example it wrote is kept, with the target it names.
    again = init(capsys)
    assert "wrote" not in again and "kept" in again
    pytester.runpytest().assert_outcomes(passed=4)


def test_init_with_no_free_module_names_no_target_and_says_what_to_add(
    pytester: pytest.Pytester, team: None, write: Write, capsys: pytest.CaptureFixture[str]
) -> None:
    write("evals/example_targets.py", "OTHER = 1\n")
    out = init(capsys)
    assert "# target: targets:answer" in (pytester.path / "evals/example.rubric.yaml").read_text()
    assert "def answer(question: str) -> str:" in out
    # The example's case is answered in writing until `answer` is added: still green.
    pytester.runpytest().assert_outcomes(passed=4)
