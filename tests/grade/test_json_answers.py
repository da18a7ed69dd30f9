"""Answers in JSON: fluency and confidence are measured on
what a JSON answer says (its string values, or the value at ``style_field``), never on its
braces and keys; ``number``, ``any_of``, ``all_of``, ``regex`` and ``forbidden`` take
``field: /json/pointer`` to look only there.

The project is a team's: an HR-policy assistant in ``app/`` that answers in JSON, a unit
test in ``tests/``, ``evals/`` with a rubric file and the adapter ``evals/targets.py``, and
a ``pytest.ini``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_rubric._grade.style import style_text
from tests.conftest import team_project

Write = Callable[[str, str], Path]

SAID = "You may work remotely up to two days a week."
REPLY = {"answer": SAID, "section": "4.2", "days": 3}

APP = f"""
import json

SAID = {SAID!r}


def reply(question: str) -> str:
    return json.dumps({REPLY!r})


def said(question: str) -> str:
    return SAID
"""

RUBRIC = """
suite: hr
targets: {json_bot: "targets:json_bot", plain_bot: "targets:plain_bot"}
cases:
  - id: remote
    question: "Can I work remotely?"
    criteria:
      - {id: remote, type: any_of, any_of: ["remotely"]}
"""


@pytest.fixture
def team(pytester: pytest.Pytester, write: Write) -> Callable[..., pytest.Pytester]:
    def _team(*, ini: str = "", rubric: str = RUBRIC) -> pytest.Pytester:
        team_project(
            pytester,
            write,
            app=APP,
            unit_test="import json\nfrom app.bot import reply\n\n\ndef test_reply():\n"
            "    assert json.loads(reply('?'))['answer']\n",
            targets="from app.bot import reply, said\n\n\ndef json_bot(question: str) -> str:\n"
            "    return reply(question)\n\n\ndef plain_bot(question: str) -> str:\n"
            "    return said(question)\n",
            ini=ini,
        )
        write("evals/hr.rubric.yaml", rubric)
        return pytester

    return _team


def results(pytester: pytest.Pytester, *args: str) -> dict[str, dict[str, Any]]:
    pytester.runpytest("--rubric-json", "out.json", *args)
    document = json.loads((pytester.path / "out.json").read_text())
    return {r["subject"]: r for r in document["results"]}


@pytest.mark.parametrize(
    ("ini", "file_field"),
    [
        ("rubric_style_field = /answer\n", ""),  # the ini's pointer
        ("rubric_style_field = /section\n", "style_field: /answer\n"),  # the file's wins
    ],
)
def test_style_is_measured_on_the_answer_a_json_reply_gives(
    team: Callable[..., pytest.Pytester], ini: str, file_field: str
) -> None:
    by = results(team(ini=ini, rubric=file_field + RUBRIC))
    for measure in ("fluency", "confidence", "flags"):
        assert by["json_bot"][measure] == by["plain_bot"][measure], measure


def test_without_a_style_field_style_is_measured_on_the_string_values(
    team: Callable[..., pytest.Pytester],
) -> None:
    by = results(team())
    assert style_text(json.dumps(REPLY)) == f"{SAID}\n4.2"
    assert by["json_bot"]["confidence"] == by["plain_bot"]["confidence"]
    assert "{" not in style_text(json.dumps(REPLY))


FIELDS = """
suite: hr
target: targets:json_bot
cases:
  - id: remote
    question: "Can I work remotely?"
    criteria:
      - {id: days, type: number, value: 2, field: /days}
      - {id: days_anywhere, type: number, value: 4.2}
      - {id: says, type: all_of, all_of: ["remotely", "two days"], field: /answer}
      - {id: policy, type: regex, pattern: '^4\\.\\d$', field: /section}
      - {id: no_office, type: forbidden, phrases: ["office"], field: /answer}
      - {id: approval, type: any_of, any_of: ["manager"], field: /approval}
      - {id: whole, type: number, value: 3, field: ""}
"""


def test_field_looks_only_at_the_value_the_pointer_names(
    team: Callable[..., pytest.Pytester],
) -> None:
    by = results(team(rubric=FIELDS))
    criteria = {c["id"]: c for c in by["json_bot"]["criteria"]}
    # The number of days is 3 in /days: the section's 4.2 is no answer to it.
    assert criteria["days"]["verdict"] == "UNMET"
    assert criteria["days"]["reason"].startswith("at /days: 3")
    assert criteria["days_anywhere"]["verdict"] == "MET"  # without field, any number counts
    assert criteria["says"]["verdict"] == "MET"
    assert criteria["policy"]["verdict"] == "MET"
    assert criteria["no_office"]["verdict"] == "UNMET"
    assert criteria["approval"]["verdict"] == "UNMET"
    assert criteria["approval"]["reason"] == "the answer has no field '/approval'"
    assert criteria["whole"]["reason"] == "at '' (the whole answer): found 3 (target 3)"


def test_a_field_that_is_not_a_pointer_is_a_collection_error(
    team: Callable[..., pytest.Pytester],
) -> None:
    pytester = team(rubric=FIELDS.replace("field: /days", "field: days"))
    result = pytester.runpytest("evals")
    result.stdout.fnmatch_lines(["*hr.rubric.yaml*days*field*not a JSON Pointer*"])
