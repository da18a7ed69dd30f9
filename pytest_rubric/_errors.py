"""Exceptions raised by pytest-rubric: every one of them is defined here, under
:class:`RubricError`. ``RubricAssertionError`` and ``RubricEvaluationError`` carry the
:class:`~pytest_rubric.CaseResult` as ``.result`` (None when no answer could be obtained);
their message is the per-criterion table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ._results import CaseResult


class RubricError(Exception):
    """Base class of every pytest-rubric error."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One mistake in a rubric file, located as precisely as the file allows."""

    message: str
    line: int | None = None
    case: str | None = None
    criterion: str | None = None
    field: str | None = None
    hint: str | None = None
    path: Path | str | None = None  # when the problem is in another file than the rubric

    def render(self, path: Path | str | None = None) -> str:
        path = self.path or path
        where = []
        if path is not None:
            where.append(f"{path}:{self.line}" if self.line else str(path))
        elif self.line:
            where.append(f"line {self.line}")
        named = (("case", self.case), ("criterion", self.criterion), ("field", self.field))
        where += [f"{label} {value!r}" for label, value in named if value]
        text = ", ".join(where) + (": " if where else "") + self.message
        if self.hint:
            text += f"\n    -> {self.hint}"
        return text


class RubricLoadError(RubricError):
    """A rubric or responses file cannot be used; lists every problem found in it."""

    def __init__(self, path: Path | str, problems: list[Problem]) -> None:
        self.path = path
        self.problems = problems
        super().__init__(str(self))

    def __str__(self) -> str:
        return self.render(self.path)

    def render(self, shown_as: Path | str) -> str:
        """The message with the file shown as ``shown_as`` (a path relative to the run)."""
        count = len(self.problems)
        head = f"{shown_as}: {count} problem{'s' if count != 1 else ''} in rubric file"
        return "\n".join([head, *("  " + p.render(shown_as) for p in self.problems)])


class _ResultError(RubricError):
    # The message is the text of an item's failure, which leaves the process: whoever raises
    # one passes it through ``_guards.outgoing`` first (``_session.collect`` does, the one place
    # they are raised).
    def __init__(self, message: str, *, result: CaseResult | None) -> None:
        super().__init__(message)
        self.result = result


class RubricEvaluationError(_ResultError):
    """At least one criterion could not be evaluated (ERROR), or no answer could be
    obtained: never a pass."""


class RubricAssertionError(_ResultError, AssertionError):
    """The response scored below ``min_score`` or a ``required`` criterion went wrong."""


class LLMError(RubricError):
    """A call to a provider (a judge's, or the application's model's) that failed after its
    retries; what it grades or answers becomes ERROR. ``what`` is the failure alone (``HTTP
    500: overloaded``); the message adds who called, where, and what to try."""

    def __init__(
        self,
        message: str,
        *,
        what: str = "",
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        hint: str = "",
    ) -> None:
        super().__init__(message)
        self.what = what or message
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.hint = hint  # what to try, as the message ends: the last attempt's is kept


class BudgetSpent(LLMError):
    """``--rubric-max-cost`` is spent: a judge or model call did not start (the criteria it
    would have graded are ERROR with ``cost budget of $X spent``)."""


class DocumentError(RubricError):
    """A file that is not a readable ``--rubric-json`` document; the message names it."""


class SpansUnreadable(RubricError):
    """``--rubric-otel`` could not read a target call's spans whole: the item is ERROR, never
    graded on part of its trace."""


class RubricWarning(pytest.PytestWarning):
    """Something in the inputs was ignored (a response that matches no case), or a cache or
    history file could not be used; the run goes on."""


# Tracebacks and reprs show the public name, not the private module.
for _exc in (
    RubricError,
    RubricLoadError,
    BudgetSpent,
    RubricEvaluationError,
    RubricAssertionError,
    LLMError,
    DocumentError,
    RubricWarning,
):
    _exc.__module__ = "pytest_rubric"
