"""The answer side of a criterion: the :class:`Answer` a check reads (its normalized forms
computed once per response), the :class:`Check` it is compiled into (once per rubric), and
the outcomes it returns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Generic, TypeVar

from .._defaults import DEFAULT_CALL_TIMEOUT, DEFAULT_CHECK_TIMEOUT
from .._guards.calls import CallRunner
from .._guards.outgoing import as_written
from .._guards.secrets import shorten
from .._results import Outcome, Verdict
from .._trace import Trace
from .normalize import compile_phrases, normalize, parse_numbers


def met(reason: str) -> Outcome:
    return Outcome(Verdict.MET, 1.0, reason)


def unmet(reason: str) -> Outcome:
    return Outcome(Verdict.UNMET, 0.0, reason)


def error(reason: str) -> Outcome:
    return Outcome(Verdict.ERROR, 0.0, reason)


def credited(credit: float, threshold: float, reason: str) -> Outcome:
    """Partial credit: MET at or above ``threshold``."""
    return Outcome(Verdict.MET if credit >= threshold else Verdict.UNMET, credit, reason)


def short(text: str, limit: int = 40) -> str:
    """A phrase, pattern or match as a reason quotes it: cut short, in quotes, as written."""
    return as_written(shorten(text, limit))


def quote_list(items: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(short(i) for i in items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


class Answer:
    """A response under test, its derived forms computed on first use, and its trace."""

    __slots__ = ("__dict__", "text", "trace")

    def __init__(self, text: str, trace: Trace | None = None) -> None:
        self.text = text
        self.trace = trace

    @cached_property
    def folded(self) -> str:
        """Normalized and casefolded: what phrases and regexes are matched against."""
        return normalize(self.text)

    @cached_property
    def cased(self) -> str:
        """Normalized, case kept (``case_sensitive`` regexes)."""
        return normalize(self.text, casefold=False)

    @cached_property
    def numbers(self) -> tuple[float, ...]:
        return tuple(parse_numbers(self.text))


@dataclass(frozen=True, slots=True)
class CheckContext:
    """What compiling a check may need besides its criterion: a ``callable``'s default
    ``call_timeout`` and ``runner``, and the ``check_timeout`` of a super-linear check."""

    call_timeout: float = DEFAULT_CALL_TIMEOUT
    runner: CallRunner = field(default_factory=CallRunner)
    check_timeout: float = DEFAULT_CHECK_TIMEOUT


C = TypeVar("C")


class Check(Generic[C]):
    """A compiled criterion ``c``: ``check(answer, case) -> Outcome``, which never raises; its
    reason is whole (the grader cuts it once). Slotted objects, not closures: a suite keeps
    one per criterion alive, and a closure is several objects."""

    __slots__ = ("c",)

    def __init__(self, c: C) -> None:
        self.c = c

    def run(self, answer: Answer, case: object) -> Outcome:
        raise NotImplementedError

    def __call__(self, answer: Answer, case: object) -> Outcome:
        try:
            return self.run(answer, case)
        except Exception as exc:  # a bug here must not turn into a verdict
            return error(f"check failed: {type(exc).__name__}: {exc}")

    def on_json(self, value: object, case: object) -> Outcome:
        """This check on one value of a JSON answer: a string is read as an answer would be, any
        other value as its compact JSON text."""
        if not isinstance(value, str):
            value = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        return self(Answer(value), case)


class PhraseCheck(Check[C]):
    """A check of ``phrases`` (``any_of``, ``all_of``, ``forbidden``), compiled once."""

    __slots__ = ("phrases",)

    def __init__(self, c: C, phrases: Sequence[str]) -> None:
        super().__init__(c)
        self.phrases = compile_phrases(phrases)


class Broken(Check[C]):
    """A criterion that cannot be evaluated at all (a regex that does not compile...)."""

    __slots__ = ("message",)

    def __init__(self, c: C, message: str) -> None:
        super().__init__(c)
        self.message = message

    def run(self, answer: Answer, case: object) -> Outcome:
        return error(self.message)
