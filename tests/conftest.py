"""Shared helpers for the end-to-end tests, which drive pytest through ``pytester``."""

from __future__ import annotations

import json
import os
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# Property tests run a bounded number of examples so `make test` stays quick: half
# hypothesis's default of 100, and half of what a test asks for through `examples`. Every run
# draws the same ones (derandomized): the suite is never flaky, and a failure reproduces;
# HYPOTHESIS_PROFILE=fuzz draws new ones, two hundred times as many, to hunt for new bugs
# (a bug it finds becomes an @example). Nothing timed: a deadline or the too-slow check is a
# wall-clock assertion (a busy machine failed one example at 287 ms).
settings.register_profile(
    "suite",
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.register_profile(
    "fuzz", parent=settings.get_profile("suite"), max_examples=10_000, derandomize=False
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))


def examples(n: int) -> int:
    """``n`` examples at hypothesis's default profile (100 a test), scaled with the loaded
    one: half under ``suite``, a hundred times ``n`` under ``fuzz``."""
    return max(1, n * settings.default.max_examples // 100)


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# Tests of a bound (a pattern that backtracks, a call that never returns, a reply that never
# ends) prove it by the verdict it gives, never by timing it: without the bound the test
# would wait forever (or for an hour) and then find the wrong verdict. This watchdog
# (pytest-timeout's mark) only stops such a regression from hanging the suite.
HANG_GUARD = 300

# Integration tests of what a user sees run three ways: without xdist, with
# xdist but in-process (-n 0), and with two workers (-n 2).
RUN_MODES = {
    "no-xdist": ["-p", "no:xdist"],
    "xdist-n0": ["-n", "0"],
    "xdist-n2": ["-n", "2"],
}


# The sessions the tests start run with every plugin of the dev extra installed and active
# (hypothesis, pytest-randomly, pytest-asyncio, ...), as a user's would: none is turned off.
# pytest-asyncio warns in every session whose ini leaves its loop scope unset; a project
# that has it sets it, and so do these sessions.
INNER_ADDOPTS = "-o asyncio_default_fixture_loop_scope=function"


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's ``pytester``; the sessions it starts, and their workers, get ``INNER_ADDOPTS``."""
    monkeypatch.setenv("PYTEST_ADDOPTS", INNER_ADDOPTS)  # after pytester cleared it
    return pytester


def lines_in_any_order(result: pytest.RunResult, patterns: list[str]) -> None:
    """Each pattern matches a line of the run's output, in whatever order the run took
    (pytest-randomly shuffles the items of every session the tests start)."""
    for pattern in patterns:
        result.stdout.fnmatch_lines([pattern])


@pytest.fixture(scope="session")
def openai_sdk() -> None:
    """The openai SDK (dev extra), imported in this process before the first session that
    uses it: the agents of the trace tests call it, and a module a pytester run imports is
    dropped after it, so each run would import the SDK again. A fixture, not an import in the
    root conftest, so the processes that run none of those tests never load it."""
    import openai  # noqa: F401


@pytest.fixture(params=list(RUN_MODES))
def run_mode(request: pytest.FixtureRequest) -> list[str]:
    """Extra pytest arguments for one of the three ways of running."""
    return RUN_MODES[request.param]


@pytest.fixture
def write(pytester: pytest.Pytester) -> Callable[[str, str], Path]:
    """Write a dedented file under the pytester directory (parents created).

    It also gives the directory an ini file of its own, so the repository's
    configuration is never picked up.
    """
    pytester.makeini("[pytest]\n")

    def _write(name: str, content: str) -> Path:
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")
        return path

    return _write


TEAM_INI = """
[pytest]
rubric_dirs = evals
rubric_judge_backoff = 0.01
"""
# The team's evals of its support bot, and what the bot answers: each case has a
# deterministic criterion and a judged one.
SUPPORT = """
suite: support
target: app.bot:answer
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
      - {id: how, requirement: "Says how to cancel"}
"""
ANSWERS = {
    "refund": "No: refunds are possible within 30 days of purchase only.",
    "cancel": "Yes, within 24 hours, from the Orders page.",
}


@pytest.fixture
def team(pytester: pytest.Pytester, write: Callable[[str, str], Path]) -> Callable[..., None]:
    """Lay the pytester directory out as a team's project: the application in ``app/``
    (``app.bot:answer``, answering each case from ``answers`` by its id), the rubric files in
    ``evals/`` (ini ``rubric_dirs``; by default ``support.rubric.yaml``, :data:`SUPPORT`),
    and the ini, with ``ini`` added to it."""

    def _team(*, answers: dict[str, str] = ANSWERS, ini: str = "", **rubrics: str) -> None:
        rubrics = rubrics or {"support": SUPPORT}
        pytester.makeini(TEAM_INI + ini)
        write("app/__init__.py", "")
        write(
            "app/bot.py",
            f"ANSWERS = {answers!r}\n\n\ndef answer(case):\n    return ANSWERS[case.id]\n",
        )
        for name, text in rubrics.items():
            write(f"evals/{name}.rubric.yaml", text)

    return _team


def graded(document: dict[str, Any]) -> dict[str, Any]:
    """A ``--rubric-json`` document without its ``run``: what was graded, for comparing two
    runs (``run`` tells them apart: when each started, how long it took, what a cache served)."""
    return {key: value for key, value in document.items() if key != "run"}


# When a run started and how long it took, as the JSON (`"started_at": "...Z"`,
# `"duration_s": 1.234`) and the HTML and Markdown header (`...Z (1.2 s)`) write them.
_WHEN = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ( \(\d+\.\d s\))?|(?<=\"duration_s\": )[\d.e+-]+"
)


def timeless(text: str) -> str:
    """An output's text with when the run started and how long it took masked: the same for
    two runs that graded the same."""
    return _WHEN.sub("<when>", text)


@pytest.fixture
def rubric_json(pytester: pytest.Pytester) -> Callable[[], dict[str, Any]]:
    """Read the ``--rubric-json out.json`` a run wrote."""

    def _read() -> dict[str, Any]:
        data: dict[str, Any] = json.loads((pytester.path / "out.json").read_text())
        return data

    return _read


# The scripted provider server, for the judge tests.
from tests.fake_llm import fake_llm  # noqa: E402, F401


def team_project(
    pytester: pytest.Pytester,
    write: Callable[[str, str], Path],
    *,
    app: str,
    unit_test: str,
    targets: str,
    ini: str = "",
) -> None:
    """Lay the pytester directory out as a team's project: the application ``app/bot.py``, its
    unit test ``tests/test_bot.py``, the target adapter ``evals/targets.py`` (rubric files go
    in ``evals/``), and an ini that collects both, ``ini`` added to it."""
    pytester.makeini(
        "[pytest]\nrubric_dirs = evals\ntestpaths = tests\npythonpath = .\n"
        "rubric_judge_backoff = 0.01\n" + ini
    )
    write("app/__init__.py", "")
    write("app/bot.py", app)
    write("tests/test_bot.py", unit_test)
    write("evals/targets.py", targets)
