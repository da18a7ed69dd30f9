"""No silent precedence: subjects given on the command line
replace the targets rubric files name, the run says so, and a file that pins its target
(``target_fixed: true``) keeps it and the run says that too.

The project is a team's: ``app/`` with two versions of its bot, a unit test in ``tests/``,
``evals/`` with rubric files and their adapter ``evals/targets.py``, a ``pytest.ini``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import RUN_MODES, lines_in_any_order, team_project

Write = Callable[[str, str], Path]


@pytest.fixture
def team(pytester: pytest.Pytester, write: Write) -> None:
    team_project(
        pytester,
        write,
        app="""
        def stable(question: str) -> str:
            return "You may work remotely two days a week."


        def candidate(question: str) -> str:
            return "Remote work is not allowed."
        """,
        unit_test="""
        from app.bot import stable


        def test_stable():
            assert "remotely" in stable("?")
        """,
        targets="""
        from app import bot


        def stable(question: str) -> str:
            return bot.stable(question)


        def candidate(question: str) -> str:
            return bot.candidate(question)
        """,
    )
    for name in ("remote", "leave"):
        write(
            f"evals/{name}.rubric.yaml",
            f"""
            suite: {name}
            target: targets:stable
            cases:
              - id: {name}
                question: "Can I work remotely?"
                criteria:
                  - {{id: days, type: any_of, any_of: ["two days"]}}
            """,
        )
    write(
        "evals/pinned.rubric.yaml",
        """
        suite: pinned
        target: targets:stable
        target_fixed: true
        cases:
          - id: pinned
            question: "Can I work remotely?"
            criteria:
              - {id: days, type: any_of, any_of: ["two days"]}
        """,
    )


@pytest.mark.parametrize("mode", list(RUN_MODES))
def test_command_line_targets_replace_the_files(
    pytester: pytest.Pytester, team: None, mode: str
) -> None:
    result = pytester.runpytest(
        "evals", "-rA", "--rubric-target", "targets:candidate", *RUN_MODES[mode]
    )
    result.assert_outcomes(passed=1, failed=2)
    lines_in_any_order(
        result,
        [
            "rubric: subjects from the command line replace the targets of 2 rubric files",
            "rubric: `target_fixed: true` keeps the targets of 1 rubric file",
            "FAILED *remote.rubric.yaml::remote?candidate?*",
            "FAILED *leave.rubric.yaml::leave?candidate?*",
            "PASSED *pinned.rubric.yaml::pinned?stable?*",
        ],
    )
    result.stdout.no_fnmatch_line("*remote?stable?*")


def test_without_command_line_subjects_the_files_targets_answer(
    pytester: pytest.Pytester, team: None
) -> None:
    result = pytester.runpytest("evals")
    result.assert_outcomes(passed=3)
    result.stdout.no_fnmatch_line("*replace the targets*")
    result.stdout.no_fnmatch_line("*target_fixed*")


def test_target_fixed_must_be_a_boolean(pytester: pytest.Pytester, team: None) -> None:
    pinned = pytester.path / "evals/pinned.rubric.yaml"
    pinned.write_text(pinned.read_text().replace("target_fixed: true", "target_fixed: maybe"))
    result = pytester.runpytest("evals")
    result.stdout.fnmatch_lines(["*pinned.rubric.yaml*target_fixed*"])


def test_a_responses_folder_naming_a_files_target_is_a_clash_said_as_such(
    pytester: pytest.Pytester, team: None, write: Write
) -> None:
    """The collected answers of `stable` graded with its target still named in the files:
    each of its items has two sources, said as such, even where the responses file has no
    line for the case (`collect` left out a case whose target failed)."""
    write("answers/stable.jsonl", '{"id": "remote", "suite": "remote", "response": "Two days."}\n')
    result = pytester.runpytest("evals/remote.rubric.yaml", "evals/leave.rubric.yaml", "-rE",
                                "--rubric-responses", "answers")  # fmt: skip
    result.assert_outcomes(errors=2)
    lines_in_any_order(
        result,
        [
            "*subject 'stable' is given twice for case 'remote' (*answers/stable.jsonl:1; and "
            "target targets:stable); keep one*",
            "*subject 'stable' is given twice for case 'leave' (*answers/stable.jsonl, which "
            "has no line for it; and target targets:stable); keep one*",
        ],
    )
