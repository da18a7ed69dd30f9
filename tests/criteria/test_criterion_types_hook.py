"""A conftest adds a criterion type through ``pytest_rubric_criterion_types``."""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_rubric.hookspec import pytest_rubric_criterion_types

# The hook's own docstring example, as a team's evals/conftest.py would hold it.
_DOC = inspect.cleandoc(pytest_rubric_criterion_types.__doc__ or "")
CONFTEST = textwrap.dedent(_DOC[_DOC.index("    from typing import Literal") :])

WORDY = """
suite: wordy
target: app.bot:answer
cases:
  - id: refund
    question: "Can I get a refund after 30 days?"
    criteria:
      - {id: long_enough, type: word_count_at_least, words: 5}
  - id: cancel
    question: "Can I cancel my order?"
    criteria:
      - {id: long_enough, type: word_count_at_least, words: 50}
  - id: in_json
    question: "Give the refund window as JSON."
    criteria:
      - id: shape
        type: json
        fields:
          /why: {type: word_count_at_least, words: 3}
"""
ANSWERS = {
    "refund": "No: refunds are possible within 30 days of purchase only.",
    "cancel": "Yes, within 24 hours.",
    "in_json": '{"why": "thirty days from purchase"}',
}


def test_a_conftest_type_grades_rubric_files_under_it(
    team: Callable[..., None], write: Callable[[str, str], object], pytester: pytest.Pytester
) -> None:
    team(answers=ANSWERS, wordy=WORDY)
    write("evals/conftest.py", CONFTEST)
    result = pytester.runpytest("-rA")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*long_enough*4 words < 50*"])


def test_the_reference_pages_example_runs_as_written(pytester: pytest.Pytester) -> None:
    """docs/reference/fixtures.md's conftest and rubric file, copied as a reader would."""
    page = (Path(__file__).parents[2] / "docs" / "reference" / "fixtures.md").read_text("utf-8")
    for body in re.findall(r"```(?:python|yaml)\n(.*?)```", page, re.S):
        body = textwrap.dedent(body)
        if body.startswith(("# evals/conftest.py", "# evals/support.rubric.yaml")):
            name = body.splitlines()[0][2:]
            (pytester.path / name).parent.mkdir(exist_ok=True)
            (pytester.path / name).write_text(body, encoding="utf-8")
    assert (pytester.path / "evals" / "support.rubric.yaml").exists()
    result = pytester.runpytest("evals", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*support.rubric.yaml::refund*PASSED*"])


def test_assert_rubric_in_a_unit_test_reads_the_type_its_rubric_files_conftest_adds(
    team: Callable[..., None], write: Callable[[str, str], object], pytester: pytest.Pytester
) -> None:
    """A test in tests/ grades with a case of evals/: the type is the one evals/conftest.py
    adds (the rubric file's scope, not the calling test's)."""
    team(answers=ANSWERS, wordy=WORDY)
    write("evals/conftest.py", CONFTEST)
    write(
        "tests/test_bot.py",
        "from pytest_rubric import assert_rubric\n\n\n"
        "def test_refund():\n"
        '    assert_rubric("Refunds are possible within 30 days.", "evals/wordy.rubric.yaml::refund")\n',
    )
    pytester.runpytest("tests", "evals").assert_outcomes(passed=3, failed=1)


def test_a_type_outside_the_conftest_scope_is_unknown(
    team: Callable[..., None], write: Callable[[str, str], object], pytester: pytest.Pytester
) -> None:
    team(answers=ANSWERS, wordy=WORDY)
    write("other/conftest.py", CONFTEST)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*unknown criterion type 'word_count_at_least'*"])


def test_an_unknown_type_still_gets_did_you_mean_among_the_added_ones(
    team: Callable[..., None], write: Callable[[str, str], object], pytester: pytest.Pytester
) -> None:
    team(
        answers=ANSWERS,
        wordy=WORDY.replace(
            "words: 5}", "words: 5}\n      - {id: x, type: word_count_at_leest, words: 1}", 1
        ),
    )
    write("evals/conftest.py", CONFTEST)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*unknown criterion type 'word_count_at_leest'*",
            "*did you mean `type: word_count_at_least`?*word_count_at_least*",
        ]
    )
    # A field the type does not have is named with the fields it has.
    team(answers=ANSWERS, wordy=WORDY.replace("words: 5}", "wrods: 5}", 1))
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*unknown field `wrods`", "*did you mean `words`?*"])


def test_a_type_that_takes_a_built_in_name_is_a_collection_error(
    team: Callable[..., None], write: Callable[[str, str], object], pytester: pytest.Pytester
) -> None:
    team(answers=ANSWERS, wordy=WORDY)
    write("evals/conftest.py", CONFTEST.replace('"word_count_at_least"', '"regex"'))
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*criterion type 'regex' of conftest.WordCountAtLeast is already*"]
    )
