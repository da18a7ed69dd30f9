"""``callable``: the function at ``function`` ("package.module:name") grades the response."""

from __future__ import annotations

import math
import reprlib
from typing import Annotated, Any, Literal

from pydantic import AfterValidator

from .._guards.calls import CallRunner, CallTimeout, described, resolve_import
from .._guards.secrets import known_keys, redact
from .._results import Outcome
from .check import Answer, Broken, Check, CheckContext, credited, error, met, unmet
from .model import CriterionModel, Share, Timeout, check_import_path


class CallableCriterion(CriterionModel):
    """The function at ``function`` ("package.module:name") grades the response."""

    type: Literal["callable"] = "callable"
    function: Annotated[str, AfterValidator(check_import_path)]
    threshold: Share = 0.5
    timeout: Timeout | None = None  # default: ini rubric_call_timeout (60 s)

    def compile(self, context: CheckContext) -> Check[CallableCriterion]:
        try:
            function = resolve_import(self.function)
        except Exception as exc:
            return Broken(
                self,
                f"cannot import {self.function!r}: {described(exc)}; check the path "
                "and that the module is importable from the rootdir",
            )
        return _CallableCheck(self, function, context.call_timeout, context.runner)


class _Shown(reprlib.Repr):
    """reprlib's bounded repr that never runs the application's own ``__repr__`` (one may
    raise or block): an object of another class is shown by its class's name."""

    def repr_instance(self, x: Any, level: int) -> str:
        if type(x) in (float, bool, type(None), complex, bytes, bytearray):  # Python's own
            return super().repr_instance(x, level)
        return f"<{type(x).__name__} object>"


# A callable may return 20 MB: its repr in a reason is built from a bounded slice
# (the grader cuts every reason to 2,000 characters anyway).
_REPR = _Shown()
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 2_000


# A returned string is quoted up to this many characters, with a count of the rest: its
# reason then stays within the grader's 2,000, which would cut it a second time.
_QUOTED = 1_800


def _shown(value: Any) -> str:
    """A returned value for a reason: a string redacted of keys, then cut with a count of
    what was cut; anything else as reprlib bounds it."""
    if not isinstance(value, str):
        return _REPR.repr(value)
    text = redact(value, *known_keys())
    if len(text) <= _QUOTED:
        return repr(text)
    return f"{text[:_QUOTED]!r}… [{len(text) - _QUOTED:,} more characters]"


class _CallableCheck(Check[CallableCriterion]):
    __slots__ = ("function", "runner", "timeout")

    def __init__(
        self, c: CallableCriterion, function: Any, timeout: float, runner: CallRunner
    ) -> None:
        super().__init__(c)
        self.function = function
        self.timeout = c.timeout or timeout
        self.runner = runner

    def run(self, answer: Answer, case: object) -> Outcome:
        path = self.c.function
        try:
            value = self.runner.call(self.function, answer.text, case, timeout=self.timeout)
        except CallTimeout as exc:
            return error(f"{path} {exc}")
        except Exception as exc:  # BaseExceptions arrive contained (see _guards.calls)
            return error(f"{path} raised {described(exc)}")
        reason = f"{path} returned {_shown(value)}"
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], str):
            value, reason = value
        if isinstance(value, bool):
            return met(reason) if value else unmet(reason)
        if isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= 1:
            return credited(float(value), self.c.threshold, reason)
        return error(
            f"{path} returned {_shown(value)}; return a bool, a float in [0, 1] or (value, reason)"
        )
