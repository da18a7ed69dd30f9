"""Files a rubric file names (``calibration:``, ``judge_examples:``, ``responses:``): a key
whose file cannot be read is located at its line in the rubric file; a problem inside such a
file names it as the run names the rubric file (relative, not its absolute path), with its
line, case, criterion and field, and says what to write instead. Everything else still runs.

The project is a team's: ``app/`` with a unit test in ``tests/``, ``evals/`` with the support
bot's rubric file, its labels and its answers, and a second rubric file that is fine.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import team_project

Write = Callable[[str, str], Path]

SUPPORT = """
suite: support
responses: answers/
calibration: labels.jsonl
judge_examples: shown.jsonl
cases:
  - id: refund
    question: "Can I get a refund after 30 days?"
    criteria:
      - {id: window, type: any_of, any_of: ["30 days"]}
      - {id: policy, requirement: "Says whether a refund is possible after 30 days"}
  - id: cancel
    question: "Can I cancel my order?"
    criteria:
      - {id: hours, type: any_of, any_of: ["24 hours"]}
"""
LABELS = [
    {
        "case": "refund",
        "criterion": "policy",
        "response": "No refund after 30 days.",
        "verdict": "MET",
    },
    {"case": "refund", "criterion": "policy", "response": "Ask the shop.", "verdict": "UNMET"},
]
SHOWN = {"criterion": "policy", "response": "Refunds: 30 days.", "verdict": "MET", "reason": "r"}
ANSWERS = [
    {"id": "refund", "response": "Refunds are possible within 30 days only."},
    {"id": "cancel", "response": "Yes, within 24 hours."},
]


def _jsonl(rows: list[dict[str, object]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


@pytest.fixture
def team(pytester: pytest.Pytester, write: Write) -> None:
    team_project(
        pytester,
        write,
        app='def answer(question):\n    return "Within 30 days."\n',
        unit_test="from app.bot import answer\n\n\ndef test_answer():\n    assert answer('q')\n",
        targets="from app.bot import answer\n",
    )
    write("evals/support.rubric.yaml", SUPPORT)
    write("evals/labels.jsonl", _jsonl(LABELS))
    write("evals/shown.jsonl", _jsonl([SHOWN]))
    write("evals/answers/bot.jsonl", _jsonl(ANSWERS))
    write(
        "evals/faq.rubric.yaml",
        """
        cases:
          - id: hours
            response: "We open at 9."
            criteria: [{id: nine, type: any_of, any_of: ["9"]}]
        """,
    )


def _edit(pytester: pytest.Pytester, name: str, old: str, new: str) -> None:
    path = pytester.path / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _one_problem(pytester: pytest.Pytester, *lines: str) -> None:
    """The support file is the one collection error, with exactly ``lines`` as its problem,
    which name no file by its absolute path; the unit test and the other rubric file pass."""
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        ["evals/support.rubric.yaml: 1 problem in rubric file", *lines], consecutive=True
    )
    errors = result.stdout.str().split(" ERRORS ", 1)[1].split(" short test summary ", 1)[0]
    assert str(pytester.path) not in errors


def test_the_team_project_passes_as_written(pytester: pytest.Pytester, team: None) -> None:
    pytester.runpytest().assert_outcomes(passed=4)


def test_a_copied_case_id_adds_no_false_problem_from_the_calibration_labels(
    pytester: pytest.Pytester, team: None
) -> None:
    """The labels name the first `refund` case's judged criterion: they were checked against
    the copy, which has none, and two false problems followed the true one."""
    _edit(pytester, "evals/support.rubric.yaml", "  - id: cancel", "  - id: refund")
    _one_problem(
        pytester,
        "  evals/support.rubric.yaml:11, case 'refund', field 'id': duplicate case id 'refund': "
        "a case of this id is already at line 6, and each case id names one test",
        "    -> give this case an id of its own, e.g. `id: refund_2`; to grade one case several "
        "times, set `repeat: N` on it instead of copying it",
    )


@pytest.mark.parametrize(
    ("key", "old", "new", "line", "said"),
    [
        (
            "calibration",
            "labels.jsonl",
            "label.jsonl",
            3,
            "cannot read evals/label.jsonl: no such file or directory",
        ),
        (
            "judge_examples",
            "shown.jsonl",
            "shwn.jsonl",
            4,
            "cannot read evals/shwn.jsonl: no such file or directory",
        ),
        ("responses", "answers/", "answrs/", 2, "responses folder 'evals/answrs' does not exist"),
    ],
)
def test_a_key_naming_a_missing_file_is_located_at_its_line(
    pytester: pytest.Pytester, team: None, key: str, old: str, new: str, line: int, said: str
) -> None:
    _edit(pytester, "evals/support.rubric.yaml", f"{key}: {old}", f"{key}: {new}")
    relative = f"(`{key}:` is a path relative to this rubric file's folder, evals)"
    _one_problem(
        pytester,
        f"  evals/support.rubric.yaml:{line}, field '{key}': {said}",
        f"    -> did you mean `{key}: {old}`? {relative}",
    )


def test_a_missing_folder_with_no_name_near_it_says_to_create_it(
    pytester: pytest.Pytester, team: None
) -> None:
    _edit(pytester, "evals/support.rubric.yaml", "responses: answers/", "responses: ../frozen/")
    _one_problem(
        pytester,
        "  evals/support.rubric.yaml:2, field 'responses': responses folder 'frozen' does not "
        "exist",
        "    -> create frozen with one <subject>.jsonl per subject, or fix the path "
        "(`responses:` is a path relative to this rubric file's folder, evals)",
    )


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        (
            '"verdict": "UNMET"',
            '"verdict": "maybe"',
            [
                "  evals/labels.jsonl:2, case 'refund', criterion 'policy', field 'verdict': "
                'calibration example 2: `verdict` is MET or UNMET, not "maybe"',
                '    -> write `"verdict": "MET"` or `"verdict": "UNMET"`',
            ],
        ),
        (
            '"criterion": "policy", "response": "Ask',
            '"criterion": "polcy", "response": "Ask',
            [
                "  evals/labels.jsonl:2, case 'refund', criterion 'polcy', field 'criterion': "
                "calibration example 2: case 'refund' has no judged criterion 'polcy'",
                "    -> use one of policy",
            ],
        ),
        (
            '"verdict": "UNMET"',
            '"score": 3',
            [
                "  evals/labels.jsonl:2, case 'refund', criterion 'policy', field 'verdict': "
                "calibration example 2: criterion 'policy' needs a verdict label",
                '    -> write `"verdict": "MET"` or `"verdict": "UNMET"` instead of `score`',
            ],
        ),
        (
            '"response": "Ask the shop.", ',
            "",
            [
                "  evals/labels.jsonl:2, case 'refund', criterion 'policy', field 'response': "
                "calibration example 2: missing required field `response`",
                '    -> add `"response": "..."`',
            ],
        ),
    ],
    ids=["verdict-maybe", "unknown-criterion", "score-for-boolean", "no-response"],
)
def test_a_calibration_label_names_its_file_line_case_criterion_and_field(
    pytester: pytest.Pytester, team: None, old: str, new: str, problem: list[str]
) -> None:
    _edit(pytester, "evals/labels.jsonl", old, new)
    _one_problem(pytester, *problem)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"response": "Yes."}', "evals/answers/bot.jsonl:2, field 'id': missing `id`"),
        (
            '{"id": "cancel", "response": "Yes."',
            "evals/answers/bot.jsonl:2, field 'responses': invalid JSON (*)",
        ),
        (
            '{"id": "refund", "response": "Yes."}',
            "evals/answers/bot.jsonl:2, case 'refund', field 'id': 2 responses for case 'refund' "
            "(lines 1, 2), but the case has repeat: 1*",
        ),
        (
            '{"id": "cancel", "response": "a", "response": "b"}',
            "evals/answers/bot.jsonl:2, field 'response': the key `response` is given twice*",
        ),
        (
            '{"id": "cancel", "text": "Yes."}',
            "evals/answers/bot.jsonl:2, case 'cancel', field 'response': *",
        ),
        (
            '{"id": "cancel", "response": 42}',
            "evals/answers/bot.jsonl:2, case 'cancel', field 'response': *",
        ),
        (
            '{"id": "cancel", "response": "Yes.", "context": 5}',
            "evals/answers/bot.jsonl:2, case 'cancel', field 'context': *",
        ),
    ],
    ids=["no-id", "invalid-json", "duplicate-id", "duplicate-key", "text", "number", "context"],
)
def test_a_responses_file_is_named_as_the_run_names_the_rubric_file(
    pytester: pytest.Pytester, team: None, line: str, problem: str
) -> None:
    (pytester.path / "evals/answers/bot.jsonl").write_text(_jsonl(ANSWERS[:1]) + line + "\n")
    _one_problem(pytester, f"  {problem}")
