"""What the plugin keeps on pytest's objects: the results an item produced and which of them
count, the item running now, and how to tell a rubric item without importing the collector."""

from __future__ import annotations

import contextvars
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

import pytest

if TYPE_CHECKING:
    from .._results import CaseResult


@dataclass(frozen=True, slots=True)
class Recorded:
    """A result kept for an item's report; ``raised``: ``assert_rubric`` raised it next
    (it counts only if that exception escapes the test)."""

    result: CaseResult
    raised: bool = False


RESULTS_KEY = pytest.StashKey[list[Recorded]]()
"""Results produced while an item runs (rubric items and ``assert_rubric`` calls alike)."""

CURRENT_ITEM: contextvars.ContextVar[pytest.Item | None] = contextvars.ContextVar(
    "pytest_rubric_current_item", default=None
)
"""The test item running now, so a bare ``assert_rubric`` call can join the session's outputs.

The one piece of state outside the session, kept because a plain function
has no public way to find the test that called it. A context variable: set
and reset around each test by the plugin's ``pytest_runtest_protocol``
wrapper, so each task and nested (pytester) session sees only its own. A
thread the test starts (a ``ThreadPoolExecutor`` grading answers at once)
does not inherit it: :data:`RUNNING` is the process's item for that. The
``rubric`` fixture uses neither: it is bound to its node, as syrupy's
``snapshot`` is."""

RUNNING: list[pytest.Item] = []
"""The items running in this process, innermost last (a pytester session runs inside a
test): :func:`current_item` in a thread the test started, where :data:`CURRENT_ITEM` is unset."""


def current_item() -> pytest.Item | None:
    """The test that called: this context's, else the one this process runs."""
    return CURRENT_ITEM.get() or (RUNNING[-1] if RUNNING else None)


class RubricItemView(Protocol):
    """What the session reads of a rubric item (``_session.collect.RubricItem``), named here so that
    nothing before collection imports the collector."""

    nodeid: str
    source: Any  # _grade.sources.Source: where the answer comes from
    compiled: Any  # _grade.grader.CompiledRubric

    def release(self) -> None: ...


def is_rubric_item(item: pytest.Item) -> TypeGuard[RubricItemView]:
    """Whether ``item`` is a rubric item, without importing the collector for the asking:
    until a rubric file was collected there is none."""
    collect = sys.modules.get("pytest_rubric._session.collect")
    return collect is not None and isinstance(item, collect.RubricItem)


_CALLS = pytest.StashKey[dict[str, int]]()
_CALLS_LOCK = threading.Lock()


def next_call(item: pytest.Item, subject: str) -> int:
    """This ``assert_rubric`` call's number among the item's calls for ``subject`` (1, 2...):
    taken when the call starts, under a lock (threads the test started call at once)."""
    with _CALLS_LOCK:
        calls = item.stash.setdefault(_CALLS, {})
        calls[subject] = calls.get(subject, 0) + 1
        return calls[subject]


def forget_calls(item: pytest.Item) -> None:
    """Start the item's numbering again (a rerun's calls are numbered as the first run's)."""
    with _CALLS_LOCK:
        if _CALLS in item.stash:
            del item.stash[_CALLS]


def record(item: pytest.Item, result: CaseResult, *, raised: bool = False) -> None:
    """Keep ``result`` for the item's report (see :func:`settle`)."""
    item.stash.setdefault(RESULTS_KEY, []).append(Recorded(result, raised))


def settle(recorded: list[Recorded], escaped: BaseException | None) -> list[CaseResult]:
    """The results of a test phase that count in the session's outputs and gates: one that
    ``assert_rubric`` raised only when its exception escaped the test (a test that catches
    ``RubricAssertionError`` expected the answer to fail: that failure is not the subject's)."""
    return [
        r.result for r in recorded if not r.raised or getattr(escaped, "result", None) is r.result
    ]
