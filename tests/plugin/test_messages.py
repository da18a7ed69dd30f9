"""Messages a team reads: patterns as written, "did you mean" for `case:`, hints in no one
domain's words, a file's `target:` at its own line, warnings at the user's file, and
``collect`` finding the files a run collects.

Each test runs a project laid out as a team's: an ``app/`` package, unit tests in
``tests/``, ``evals/`` with a rubric file and the adapter ``evals/targets.py``, and a
``pytest.ini`` with ``rubric_dirs = evals``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_rubric._cli.merge import main as cli

APP = """
def answer(question: str) -> str:
    return "We support version 3.1 of the API."
"""

TARGETS = """
from app.versions import answer


def version_bot(question: str) -> str:
    return answer(question)
"""

UNIT_TESTS = """
from app.versions import answer


def test_answers():
    assert answer("which version?")
"""

RUBRIC = """
target: targets:version_bot
cases:
  - id: latest
    question: "Which API version is supported?"
    criteria:
      - {id: exact, type: regex, pattern: '^3\\.2$'}
      - {id: named, type: regex, pattern: 'version 3\\.2'}
"""

INI = "[pytest]\nrubric_dirs = evals\npythonpath = .\n"


@pytest.fixture
def team(pytester: pytest.Pytester, write: Callable[[str, str], Path]) -> pytest.Pytester:
    write("pytest.ini", INI)
    write("app/__init__.py", "")
    write("app/versions.py", APP)
    write("tests/test_versions.py", UNIT_TESTS)
    write("evals/targets.py", TARGETS)
    write("evals/versions.rubric.yaml", RUBRIC)
    return pytester


def test_a_pattern_is_shown_as_written_in_the_file(team: pytest.Pytester) -> None:
    result = team.runpytest("evals")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*exact*regex*UNMET*no match for '^3\\.2$'", "*named*no match for 'version 3\\.2'"]
    )
    result.stdout.no_fnmatch_line("*3\\\\.2*")  # never the doubled backslash of repr


def test_a_broken_pattern_is_shown_as_written_too(team: pytest.Pytester) -> None:
    rubric = team.path / "evals/versions.rubric.yaml"
    rubric.write_text(rubric.read_text().replace("'^3\\.2$'", "'^3\\.(2$'"))
    result = team.runpytest("evals")
    result.stdout.fnmatch_lines(["*invalid regex '^3\\.(2$'*"])


def test_a_top_level_case_typo_says_did_you_mean_cases(team: pytest.Pytester) -> None:
    rubric = team.path / "evals/versions.rubric.yaml"
    rubric.write_text(rubric.read_text().replace("cases:", "case:"))
    result = team.runpytest("evals")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "  evals/versions.rubric.yaml:2, field 'case': no `cases:` in the file, but an "
            "unknown key `case`",
            "    -> did you mean `cases`? rename `case` to `cases`",
        ],
        consecutive=True,
    )


def test_hints_for_missing_fields_use_no_one_domains_examples(team: pytest.Pytester) -> None:
    rubric = team.path / "evals/versions.rubric.yaml"
    rubric.write_text(
        rubric.read_text()
        + "      - {id: mentions, type: any_of}\n"
        + "      - {id: number, type: number}\n"
        + "      - {id: wrong, type: forbidden}\n"
        + "      - {id: checked, type: judge}\n"
    )
    result = team.runpytest("evals")
    hints = [line.strip() for line in result.outlines if line.strip().startswith("-> add")]
    assert hints == [
        '-> add `any_of: ["a phrase", "another phrase"]`',
        "-> add `value: 42`",
        '-> add `phrases: ["a known-wrong claim"]`',
        '-> add `requirement: "Answers the question that was asked"`',
    ]
    for finance in ("99%", "1157.63", "maximum loss", "horizon", "npv", "loss"):
        result.stdout.no_fnmatch_line(f"*{finance}*")


def test_a_file_level_target_error_points_at_the_target_line_once(team: pytest.Pytester) -> None:
    rubric = team.path / "evals/versions.rubric.yaml"
    rubric.write_text(
        "suite: versions\n"
        + rubric.read_text().replace("targets:version_bot", "targets:version_boot")
        + "  - id: second\n    question: x\n    criteria: [{id: a, type: any_of, any_of: [x]}]\n"
    )
    result = team.runpytest("evals")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "evals/versions.rubric.yaml: 1 problem in rubric file",
            "  evals/versions.rubric.yaml:2, field 'target': cannot import target "
            "'targets:version_boot'*",
        ],
        consecutive=True,
    )


def test_the_misnamed_rubric_file_warning_names_the_users_file_and_echoes_no_line(
    team: pytest.Pytester, run_mode: list[str]
) -> None:
    (team.path / "evals/versions.rubric.yaml").rename(team.path / "evals/versions.yaml")
    result = team.runpytest(*run_mode)
    result.stdout.fnmatch_lines(
        [
            "*= warnings summary =*",
            "<pytest-rubric>:0",
            "  <pytest-rubric>:0: RubricWarning: ini rubric_dirs evals holds no rubric "
            "file (*.rubric.yaml, *.rubric.yml, *.rubric.json) but YAML or JSON files, such as "
            "evals/versions.yaml: rename it to match, as versions.rubric.yaml, or set ini "
            "rubric_file_patterns",
            "",
            "-- Docs: *",
        ],
        consecutive=True,
    )
    result.stdout.no_fnmatch_line("*pytest_rubric*")  # nothing points inside the plugin
    result.stdout.no_fnmatch_line("*target: targets:version_bot*")  # no line of the file


@pytest.mark.parametrize(
    ("config_file", "text"),
    [
        ("pytest.ini", "[pytest]\nrubric_dirs = evals\nrubric_file_patterns =\n    *.eval.yaml\n"),
        ("pyproject.toml", '[tool.pytest.ini_options]\nrubric_file_patterns = ["*.eval.yaml"]\n'),
        (
            "pytest.ini",
            "[pytest]\nrubric_dirs = evals\nrubric_file_patterns = *.x.yaml *.eval.yaml\n",
        ),
    ],
    ids=["pytest.ini", "pyproject.toml", "pytest.ini-one-line"],
)
def test_collect_finds_the_files_the_ini_patterns_name(
    team: pytest.Pytester, config_file: str, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (team.path / "pytest.ini").unlink()
    (team.path / config_file).write_text(text)
    (team.path / "evals/versions.rubric.yaml").rename(team.path / "evals/versions.eval.yaml")
    # In process, in the project's folder, as `python -m pytest_rubric collect` runs main().
    argv = ["collect", "--rubric-dir", "evals", "--target", "targets:version_bot"]
    assert cli([*argv, "--out", "answers"]) == 0, capsys.readouterr().err
    rows = [json.loads(line) for line in (team.path / "answers/version_bot.jsonl").open()]
    assert [row["id"] for row in rows] == ["latest"]
