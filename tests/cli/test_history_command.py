"""``python -m pytest_rubric history``: the rows of the runs that graded a subject, and
errors that name what was given (docs/guides/history.md).

The history is a team's: a ``--rubric-history`` file appended by runs over ``evals/``, one of
which graded only one of the two subjects.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_rubric._cli.merge import main as cli

Write = Callable[[str, str], Path]

SUITE = """
suite: support
cases:
  - id: refund_window
    responses: {{{answers}}}
    criteria: [{{id: days, type: any_of, any_of: ["30 days"]}}]
"""
BOTH = 'good: "Within 30 days.", bad: "Within 14 days."'


@pytest.fixture
def history(pytester: pytest.Pytester, write: Write) -> Path:
    """Three runs: both subjects, then ``good`` alone, then both again."""
    for answers in (BOTH, 'good: "Within 30 days."', BOTH):
        write("evals/support.rubric.yaml", SUITE.format(answers=answers))
        pytester.runpytest("evals", "--rubric-history=h.sqlite3")
    return pytester.path / "h.sqlite3"


def _history(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = cli(["history", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_a_subject_s_rows_are_the_runs_that_graded_it(
    history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, rows, _ = _history(capsys, "h.sqlite3", "--subject", "bad")
    assert code == 0 and len(rows) == 2
    assert all(row.endswith("bad 0.000 [0.000, 0.833]") for row in rows)
    code, rows, _ = _history(capsys, "h.sqlite3", "--subject", "bad", "--last", "1")
    assert code == 0 and len(rows) == 1 and "bad 0.000" in rows[0]
    code, rows, _ = _history(capsys, "h.sqlite3", "--subject", "good")
    assert code == 0 and len(rows) == 3 and all("good 1.000" in row for row in rows)


def test_a_subject_no_run_graded_is_an_error_naming_those_it_holds(
    history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, rows, err = _history(capsys, "h.sqlite3", "--subject", "ugly")
    assert (code, rows) == (2, [])
    assert err == (
        "pytest-rubric history: error: h.sqlite3: no run graded subject 'ugly'; its runs "
        "graded bad, good\n"
    )


def test_what_is_not_a_history_is_said_to_be_what_it_is(
    pytester: pytest.Pytester, write: Write, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``--rubric-json`` document, a folder, a path that does not exist: each error names
    the path given (no flag the user did not type) and says what it is."""
    write("s1.json", '{"results": []}')
    write("evals/support.rubric.yaml", SUITE.format(answers=BOTH))
    for given, says in (
        (
            "s1.json",
            "s1.json: not a readable SQLite database (file is not a database); "
            "give the file a run's --rubric-history PATH writes",
        ),
        (
            "evals",
            "evals: a directory, not a history; give the file a run's --rubric-history PATH writes",
        ),
        ("h.sqlite3", "h.sqlite3: no such history file"),
    ):
        code, rows, err = _history(capsys, given)
        assert (code, rows, err) == (2, [], f"pytest-rubric history: error: {says}\n")
    assert (pytester.path / "s1.json").read_text() == '{"results": []}'
