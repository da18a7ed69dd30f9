"""The garbage-collector tricks of ``_session.heap``: on by default, switchable, undone at the end."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path

import pytest

Write = Callable[[str, str], Path]

# Seen from inside the run: how many objects the collector has frozen while a test runs.
CONFTEST = """
import gc
import pytest
SEEN = []

def pytest_runtest_call(item):
    SEEN.append(gc.get_freeze_count())

def pytest_sessionfinish(session):
    (session.config.rootpath / "frozen.txt").write_text(str(min(SEEN)))

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    # After every other unconfigure hook, pytest's full collection among them: with the
    # freeze on, the heap is still frozen here, so that collection skipped it.
    (config.rootpath / "frozen_at_unconfigure.txt").write_text(str(gc.get_freeze_count()))
"""


@pytest.mark.parametrize(("ini", "frozen"), [("", True), ("rubric_gc_freeze = false", False)])
def test_the_collected_heap_is_frozen_during_the_run_and_thawed_after(
    pytester: pytest.Pytester, write: Write, ini: str, frozen: bool
) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makeconftest(CONFTEST)
    write(
        "a.rubric.yaml",
        "cases:\n  - id: q1\n    response: 'yes'\n"
        "    criteria: [{id: c, type: any_of, any_of: ['yes']}]\n",
    )
    before = gc.get_freeze_count()
    result = pytester.runpytest_inprocess()
    result.assert_outcomes(passed=1)
    assert (int((pytester.path / "frozen.txt").read_text()) > 0) is frozen
    assert (int((pytester.path / "frozen_at_unconfigure.txt").read_text()) > 0) is frozen
    assert gc.get_freeze_count() == before  # nothing stays frozen after the session
