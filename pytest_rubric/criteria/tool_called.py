"""``tool_called``: MET when the trace shows calls of a tool, as many as asked, whose
arguments fit ``args`` (and that succeeded, with ``ok: true``)."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from .._results import Outcome
from .calls import CallMatcher, calls_of
from .check import Answer, Check, CheckContext, met, unmet
from .json_text import Schema
from .model import Count, CriterionModel, FieldError, Phrase, crossed


class ToolCalled(CriterionModel):
    """MET when the number of calls of ``tool`` that fit ``args`` (and, with ``ok: true``,
    succeeded) is as asked: ``times`` exactly, or within ``min_times``..``max_times``
    (default: at least once; ``times: 0``: never called)."""

    type: Literal["tool_called"] = "tool_called"
    tool: Phrase
    args: Schema = None
    times: Count | None = None
    min_times: Count | None = None
    max_times: Count | None = None
    ok: bool = False

    @model_validator(mode="after")
    def _counts(self) -> ToolCalled:
        if self.times is not None and (self.min_times is not None or self.max_times is not None):
            raise FieldError(
                "times", "give `times` alone, or `min_times` and/or `max_times`, not both"
            )
        low, high = self.min_times, self.max_times
        if low is not None and high is not None and low > high:
            raise crossed("min_times", low, "max_times", high)
        return self

    @property
    def bounds(self) -> tuple[int, int | None]:
        """The number of matching calls allowed: (at least, at most or None)."""
        if self.times is not None:
            return self.times, self.times
        if self.min_times is None and self.max_times is None:
            return 1, None
        return self.min_times or 0, self.max_times

    def compile(self, context: CheckContext) -> Check[ToolCalled]:
        return _ToolCalledCheck(self, context)


class _ToolCalledCheck(Check[ToolCalled]):
    __slots__ = ("matcher",)

    def __init__(self, c: ToolCalled, context: CheckContext) -> None:
        super().__init__(c)
        self.matcher = CallMatcher(c.tool, c.args, ok=c.ok, timeout=context.check_timeout)

    def run(self, answer: Answer, case: object) -> Outcome:
        calls = calls_of(answer)
        if isinstance(calls, Outcome):
            return calls
        matching = self.matcher.matching(calls)
        if isinstance(matching, Outcome):
            return matching
        low, high = self.c.bounds
        n = len(matching)
        what = self.c.tool + (" with matching args" if self.c.args is not None else "")
        what += " that succeeded" if self.c.ok else ""
        if high is None:
            wanted = f"at least {low}"
        else:
            wanted = f"exactly {low}" if low == high else f"{low} to {high}"
        said = f"{n} call(s) of {what} (wanted {wanted})"
        if n >= low and (high is None or n <= high):
            return met(said)
        named = sum(c.name == self.c.tool for c in calls)
        seen = ", ".join(dict.fromkeys(c.name for c in calls)) or "no tool calls"
        return unmet(
            f"{said}; {self.c.tool} called {named} time(s) in all; the trace shows: {seen}"
            + self.matcher.unfit(calls)
        )
