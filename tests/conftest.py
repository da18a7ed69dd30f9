"""Shared helpers for the end-to-end tests, which drive pytest through ``pytester``."""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# Property tests run a bounded number of examples so `make test` stays quick;
# HYPOTHESIS_PROFILE=fuzz runs a hundred times as many, to hunt for new bugs.
settings.register_profile("fuzz", max_examples=10_000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

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


@pytest.fixture
def rubric_json(pytester: pytest.Pytester) -> Callable[[], dict[str, Any]]:
    """Read the ``--rubric-json out.json`` a run wrote."""

    def _read() -> dict[str, Any]:
        data: dict[str, Any] = json.loads((pytester.path / "out.json").read_text())
        return data

    return _read


# The scripted provider server, for the judge tests.
from tests.fake_llm import fake_llm  # noqa: E402, F401
