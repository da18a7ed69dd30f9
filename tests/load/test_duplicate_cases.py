"""Two cases of one id in a team's rubric file are a located collection error: the file, the
line of the second case, the id, and what to write instead (``repeat`` grades one case
several times; a copy never does)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

# The team copied its refund case to ask it again: with `repeat` on the file, or without.
COPIED = """
suite: support
target: app.bot:answer
{repeat}cases:
  - id: refund
    question: "Can I get a refund after 30 days?"
    criteria:
      - {{id: window, type: any_of, any_of: ["30 days"]}}
  - id: cancel
    question: "Can I cancel my order?"
    criteria:
      - {{id: hours, type: any_of, any_of: ["24 hours"]}}
  - id: refund
    question: "Can I get a refund after 30 days, please?"
    criteria:
      - {{id: window, type: any_of, any_of: ["30 days"]}}
"""


@pytest.mark.parametrize("repeat", ["", "repeat: 3\n"], ids=["once", "repeat"])
def test_a_copied_case_is_a_located_collection_error(
    pytester: pytest.Pytester, team: Callable[..., None], repeat: str
) -> None:
    team(support=COPIED.format(repeat=repeat))
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    first, second = (4, 12) if not repeat else (5, 13)
    result.stdout.fnmatch_lines(
        [
            "evals/support.rubric.yaml: 1 problem in rubric file",
            f"  evals/support.rubric.yaml:{second}, case 'refund', field 'id': duplicate case "
            f"id 'refund': a case of this id is already at line {first}, and each case id names "
            "one test",
            "    -> give this case an id of its own, e.g. `id: refund_2`; to grade one case "
            "several times, set `repeat: N` on it instead of copying it",
        ],
        consecutive=True,
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_in_a_json_file_both_lines_are_named(
    pytester: pytest.Pytester, team: Callable[..., None], write: Callable[[str, str], Path]
) -> None:
    team()
    criterion = {"id": "w", "type": "any_of", "any_of": ["30 days"]}
    case = {"id": "q1", "response": "30 days", "criteria": [criterion]}
    write("evals/faq.rubric.json", "[\n" + json.dumps(case) + ",\n" + json.dumps(case) + "\n]\n")
    result = pytester.runpytest("evals/faq.rubric.json")
    result.stdout.fnmatch_lines(
        [
            "  evals/faq.rubric.json:3, case 'q1', field 'id': duplicate case id 'q1': a case "
            "of this id is already at line 2, and each case id names one test"
        ]
    )
