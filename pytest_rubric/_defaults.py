"""What the plugin needs before any rubric is seen, kept free of heavy imports.

``pytest --help``, ``pytest -VV`` and every session without rubric files
load the plugin; this module and the ones it names (``_session``,
``_options``, ``_result``) import only the standard library and pytest, and
no report code, so the plugin costs little where it is not used. Pydantic,
PyYAML, RE2 and rapidfuzz are imported when a rubric file is collected or
``assert_rubric`` is called; httpx when a judge sends its first request.
"""

from __future__ import annotations

import contextvars
import fnmatch
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

import pytest

if TYPE_CHECKING:
    from ._results import Recorded

__all__ = [
    "CACHE_MODES",
    "CURRENT_ITEM",
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CHECK_TIMEOUT",
    "DEFAULT_MIN_SCORE",
    "EVIDENCE_MODES",
    "GRADERS",
    "JUNIT_PROPERTIES",
    "MAX_CALL_TIMEOUT",
    "RESPONSE_CACHE_MODES",
    "RESULTS_KEY",
    "SET_A_JUDGE",
    "SHOW_QUESTION",
    "SHOW_RESPONSE",
    "ResponseTally",
    "RetryPolicy",
    "RubricItemView",
    "is_rubric_file",
    "is_rubric_item",
    "named",
]

GRADERS = ("per-criterion", "one-shot", "holistic")
CACHE_MODES = ("use", "refresh", "off", "replay")
# --rubric-response-cache: the application under test is called unless a run asks otherwise.
RESPONSE_CACHE_MODES = ("off", "use", "replay")
EVIDENCE_MODES = ("check", "require", "off")  # --rubric-judge-evidence, see judge.evidence
# --rubric-judge-probe-kinds: what the probed criteria are judged again on (see _audit).
PROBE_KINDS = ("tone", "length", "position")
DEFAULT_MIN_SCORE = 0.8  # the pass mark of cases that set none (ini rubric_min_score)
DEFAULT_CALL_TIMEOUT = 60.0  # seconds a callable or target may run (ini rubric_call_timeout)
# Seconds a check whose cost can grow faster than the answer (a JSON validation, evidence
# matching) may run before its criterion is ERROR (ini rubric_check_timeout).
DEFAULT_CHECK_TIMEOUT = 5.0
# At most a day: a thread's wait past threading.TIMEOUT_MAX would overflow.
MAX_CALL_TIMEOUT = 86_400.0
# What a failing item shows of the question and the response (ini rubric_show_response).
SHOW_QUESTION = 300
SHOW_RESPONSE = 1_000

SET_A_JUDGE = (
    "set --rubric-judge PROVIDER:MODEL (or ini rubric_judge, or the RUBRIC_JUDGE variable)"
)
"""How to configure a judge: the end of every message about a missing one."""

JUNIT_PROPERTIES = frozenset(
    {
        "rubric_case",
        "rubric_subject",
        "rubric_score",
        "rubric_min_score",
        "rubric_passed",
        "rubric_failed_criteria",
    }
)
"""The names of the JUnit properties a result gives (``_collect.junit_properties``)."""

RESULTS_KEY = pytest.StashKey[list["Recorded"]]()
"""Results produced while an item runs (rubric items and ``assert_rubric`` calls alike)."""

CURRENT_ITEM: contextvars.ContextVar[pytest.Item | None] = contextvars.ContextVar(
    "pytest_rubric_current_item", default=None
)
"""The test item running now, so a bare ``assert_rubric`` call can join the session's outputs.

The one piece of state outside the session, kept because a plain function
has no public way to find the test that called it. A context variable, not
a global: set and reset around each test by the plugin's
``pytest_runtest_protocol`` wrapper, so each thread, task and nested
(pytester) session sees only its own. The ``rubric`` fixture does not use
it: it is bound to its node, as syrupy's ``snapshot`` is."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard a judge tries before a criterion becomes ERROR."""

    timeout: float = 60.0
    attempts: int = 4  # per call, the first one included
    backoff: float = 0.5  # first delay; doubles each retry, with full jitter
    max_backoff: float = 20.0
    max_retry_after: float = 30.0  # a longer Retry-After is capped to this
    budget: int = 200  # retries per session, across all calls


def is_rubric_file(path: Path, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns)


class RubricItemView(Protocol):
    """What the session reads of a rubric item (``_collect.RubricItem``), named here so that
    nothing before collection imports the collector."""

    nodeid: str
    source: Any  # _collect._Source: where the answer comes from
    compiled: Any  # _grader.CompiledRubric


def is_rubric_item(item: pytest.Item) -> TypeGuard[RubricItemView]:
    """Whether ``item`` is a rubric item, without importing the collector for the asking:
    until a rubric file was collected there is none."""
    collect = sys.modules.get("pytest_rubric._pytest.collect")
    return collect is not None and isinstance(item, collect.RubricItem)


class ResponseTally:
    """How many answers the application gave this process, and how many of them came from
    the response cache instead (``--rubric-response-cache``): the summary's ``responses: N of
    M replayed`` line. Counted from any thread (``repeat`` asks concurrently)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.asked = 0
        self.replayed = 0

    def count(self, *, replayed: bool) -> None:
        with self._lock:
            self.asked += 1
            self.replayed += replayed

    def add(self, asked: int, replayed: int) -> None:
        """Fold in another process's counts (an xdist worker's)."""
        with self._lock:
            self.asked += asked
            self.replayed += replayed


def named(text: str) -> tuple[str | None, str]:
    """``NAME=VALUE`` as ``(NAME, VALUE)``; a plain ``VALUE`` as ``(None, VALUE)``.

    A name holds no ``:`` (a value's ``provider:model`` or ``module:function``
    does), so ``openai:m=1`` is a value, not a name.
    """
    name, sep, value = text.partition("=")
    if sep and name.strip() and ":" not in name:
        return name.strip(), value.strip()
    return None, text.strip()
