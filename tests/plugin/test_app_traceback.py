"""When the application raises, the item's report is its traceback, cut to the
application's frames, honouring ``--tb``,
in JUnit too.

The project is a team's: ``app/`` whose parser raises on a reply that is not JSON, a unit
test in ``tests/``, ``evals/`` with a rubric file and its target adapter ``evals/targets.py``,
and a ``pytest.ini``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import HANG_GUARD, team_project

Write = Callable[[str, str], Path]


@pytest.fixture
def team(pytester: pytest.Pytester, write: Write) -> None:
    team_project(
        pytester,
        write,
        app="""
        import json


        def parse_reply(raw):
            return json.loads(raw)["answer"]


        def answer(question):
            raw = "Sorry, I am not JSON"
            return parse_reply(raw)
        """,
        unit_test="""
        from app.bot import parse_reply


        def test_parse():
            assert parse_reply('{"answer": "yes"}') == "yes"
        """,
        targets="""
        from app.bot import answer


        def hr_bot(question: str) -> str:
            return answer(question)
        """,
    )
    write(
        "evals/hr.rubric.yaml",
        """
        suite: hr
        target: targets:hr_bot
        cases:
          - id: remote
            question: "Can I work remotely?"
            criteria:
              - {id: says, type: any_of, any_of: ["remote"]}
        """,
    )


# In process: the report is made where the target ran and crosses to an xdist controller as
# pytest's own reports do; guards/test_user_code checks the frames of a target's exception
# under -n 2.
def test_a_target_that_raises_shows_its_traceback(pytester: pytest.Pytester, team: None) -> None:
    result = pytester.runpytest("--tb=long", "evals")
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*def hr_bot(question: str) -> str:",
            ">       return answer(question)",
            "*evals/targets.py:5: ",
            "*return parse_reply(raw)",
            "*app/bot.py:10: ",
            '>       return json.loads(raw)["answer"]',
            "*app/bot.py:5: ",
            "E * json.decoder.JSONDecodeError: *",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*- rubric -*",
            "target targets:hr_bot raised JSONDecodeError: Expecting value*",
            "question: Can I work remotely?",  # what made it raise
        ]
    )
    assert "pytest_rubric" not in out  # the plugin's frames are cut


def test_a_module_that_raises_when_imported_names_the_line_that_raised(
    pytester: pytest.Pytester, team: None, write: Write
) -> None:
    """The application's code runs when the target's module is imported: what it raised there
    is a collection error naming the project's line, never "check the import path"."""
    write(
        "app/settings.py",
        """
        import os

        REGION = os.environ["PYTEST_RUBRIC_TEST_UNSET_REGION"]
        """,
    )
    write("evals/targets.py", "from app.settings import REGION\n\ndef hr_bot(q):\n    return q\n")
    result = pytester.runpytest("evals")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*cannot import target 'targets:hr_bot': KeyError: 'PYTEST_RUBRIC_TEST_UNSET_REGION'",
            "*-> importing its module ran the application's code, which raised at "
            "app/settings.py:3 (REGION = os.environ*): fix it there, or set what it needs",
        ]
    )
    assert "check the import path" not in result.stdout.str()


def test_an_installed_package_that_raises_on_import_names_the_projects_line(
    pytester: pytest.Pytester, team: None, write: Write
) -> None:
    """A library in a virtual environment under the rootdir is not the line to fix: the
    project's line that imported it is."""
    write(".venv/lib/site-packages/fakesdk/__init__.py", "raise RuntimeError('no API region')\n")
    write("app/settings.py", "import sys\n\nsys.path.insert(0, '.venv/lib/site-packages')\n")
    write("app/bot.py", "import app.settings\nimport fakesdk\n\n\ndef answer(q):\n    return q\n")
    result = pytester.runpytest("evals")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*which raised at app/bot.py:2 (import fakesdk): fix it there*"])


@pytest.mark.timeout(HANG_GUARD)
def test_a_local_that_never_prints_leaves_the_exception_and_its_frames(
    pytester: pytest.Pytester, team: None, write: Write
) -> None:
    """With ``-l``, a local whose repr blocks: the report is made again without the frames'
    values, and the exception, which prints, is still itself."""
    write(
        "app/bot.py",
        """
        import threading


        class Handle:
            def __repr__(self):
                threading.Event().wait()  # forever
                return "never"


        def answer(question):
            handle = Handle()
            raise ValueError("the model timed out")
        """,
    )
    result = pytester.runpytest("-l", "evals")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            '>       raise ValueError("the model timed out")',
            "E       ValueError: the model timed out",
            "*app/bot.py:12: ValueError",
        ]
    )
    assert "unprintable" not in result.stdout.str()


def test_a_target_that_returns_no_answer_shows_what_it_was_asked(
    pytester: pytest.Pytester, team: None, write: Write
) -> None:
    """No traceback to show (it returned, but nothing a target returns): its error and the
    question, as for one that raised."""
    write("evals/targets.py", "def hr_bot(question: str) -> str:\n    return None\n")
    result = pytester.runpytest("evals")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["target targets:hr_bot returned NoneType; a target returns one of:*",
         "question: Can I work remotely?"]
    )  # fmt: skip


@pytest.mark.parametrize("raised", ["SystemExit(3)", "GeneratorExit()", "asyncio.CancelledError()"])
def test_a_target_that_exits_shows_its_traceback_and_no_frame_of_the_plugin(
    pytester: pytest.Pytester, team: None, write: Write, raised: str
) -> None:
    """A ``BaseException`` that is not an ``Exception`` is an ERROR like any other: the
    application's frames, the plugin's cut, and what it raised in the short summary."""
    write(
        "evals/targets.py",
        f"import asyncio\n\n\ndef hr_bot(question: str) -> str:\n    raise {raised}\n",
    )
    result = pytester.runpytest("--tb=long", "evals", "-rE")
    result.assert_outcomes(errors=1)
    name = raised.split("(")[0].rpartition(".")[2]
    result.stdout.fnmatch_lines([f">       raise {raised}", f"*evals/targets.py:5: {name}"])
    result.stdout.fnmatch_lines([f"ERROR evals/hr.rubric.yaml::remote?hr_bot? - *{name}*"])
    assert "pytest_rubric" not in result.stdout.str()


@pytest.mark.parametrize(
    ("tb", "shown", "hidden"),
    [
        (
            "short",
            ["*evals/targets.py:5: in hr_bot", "*app/bot.py:5: in parse_reply"],
            ["def hr_bot*"],
        ),
        ("native", ['*File "*app/bot.py", line 5, in parse_reply'], ["E  *"]),
        ("line", ["*JSONDecodeError: Expecting value*"], ["*targets.py:5*"]),
        ("no", [], ["*targets.py*", "*- rubric -*"]),
        # auto, as for a test function: the first and last entries long, the middle short.
        ("auto", ["*def hr_bot(question: str) -> str:", "*app/bot.py:10: in answer"], []),
    ],
)
def test_the_traceback_honours_tb(
    pytester: pytest.Pytester, team: None, tb: str, shown: list[str], hidden: list[str]
) -> None:
    result = pytester.runpytest(f"--tb={tb}", "evals")
    result.assert_outcomes(errors=1)
    if shown:
        result.stdout.fnmatch_lines(shown)
    for pattern in hidden:
        result.stdout.no_fnmatch_line(pattern)


def test_junit_carries_the_traceback(pytester: pytest.Pytester, team: None) -> None:
    result = pytester.runpytest("--junitxml=junit.xml")
    result.assert_outcomes(passed=1, errors=1)
    root = ET.parse(pytester.path / "junit.xml").getroot()
    # A failure or an error element, as the JUnit writer reports an evaluation error.
    (error,) = [e for e in root.iter() if e.tag in ("failure", "error")]
    assert "JSONDecodeError" in error.get("message", "")
    body = error.text or ""
    assert "evals/targets.py:5" in body
    assert "app/bot.py:5" in body
    assert "pytest_rubric" not in body


def test_a_case_that_passed_in_the_baseline_shows_its_answer_there_after_the_traceback(
    pytester: pytest.Pytester, team: None, write: Write
) -> None:
    write("evals/targets.py", "def hr_bot(question: str) -> str:\n    return 'Yes, remote.'\n")
    pytester.runpytest("evals", "--rubric-json=main.json").assert_outcomes(passed=1)
    write(
        "evals/targets.py",
        "from app.bot import answer\n\n\ndef hr_bot(question):\n    return answer(question)\n",
    )
    result = pytester.runpytest("evals", "--rubric-baseline=main.json", "--tb=short")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*app/bot.py:5: in parse_reply",
            "*- rubric -*",
            "target targets:hr_bot raised JSONDecodeError: Expecting value*",
            "since the baseline:",
            "verdicts changed: says MET -> ERROR",
            "baseline (score 1.00): Yes, remote.",
        ]
    )
