"""Untrusted engines: every pattern and every bounded check runs here, on an answer that
may come from a model told to break the run. :func:`compile_pattern` runs a pattern on RE2
(linear time), or on the ``regex`` package with each search cut off after
:data:`PATTERN_TIMEOUT` (Python's ``re``, which no thread can stop, ran ``^(a+)+$`` on 41
characters past 30 s). A :class:`Deadline` (ini ``rubric_check_timeout``) bounds a JSON
validation and evidence matching: each step calls :func:`tick`; the callers turn
:class:`CheckTimeout`, ``RecursionError`` and ``OverflowError`` into ERROR, never UNMET.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Iterator
from typing import Any

from .secrets import shorten

# How long one search of a pattern RE2 cannot run may backtrack (the regex time bound).
PATTERN_TIMEOUT = 1.0


# --- time bounds --------------------------------------------------------------------------------


class CheckTimeout(Exception):
    """A check ran past its time bound: its criterion is ERROR, whatever it had found so far."""


class Deadline:
    """A point in time ``seconds`` from now, past which :meth:`check` raises :class:`CheckTimeout`."""

    __slots__ = ("at", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.at - time.monotonic()

    def check(self) -> None:
        if time.monotonic() > self.at:
            raise CheckTimeout(
                f"gave up after {self.seconds:g} s (ini rubric_check_timeout sets the bound)"
            )


class _Running(threading.local):
    deadline: Deadline | None = None


# The deadline of the check this thread is running. jsonschema hands its keyword functions a
# validator rebuilt from its own fields at every step (``evolve``), so the bound cannot ride on
# the validator; like decimal's context, it is the running thread's.
_running = _Running()


@contextlib.contextmanager
def running(deadline: Deadline) -> Iterator[None]:
    """Bound what this thread runs inside the block (a JSON validation) by ``deadline``."""
    outer, _running.deadline = _running.deadline, deadline
    try:
        yield
    finally:
        _running.deadline = outer


def tick() -> None:
    """Raise :class:`CheckTimeout` when the running deadline has passed."""
    if (deadline := _running.deadline) is not None:
        deadline.check()


# --- patterns -----------------------------------------------------------------------------------


class PatternError(ValueError):
    """A pattern that does not compile. ``unsupported``: it is valid for the ``regex``
    package but uses what RE2 lacks (backreferences, lookaround)."""

    def __init__(self, message: str, *, unsupported: bool) -> None:
        super().__init__(message)
        self.unsupported = unsupported


@functools.lru_cache(maxsize=4096)
def compile_pattern(
    pattern: str, *, case_sensitive: bool = True, backtracking: bool = False
) -> Any:
    """``pattern`` compiled on RE2, or with ``backtracking`` on the ``regex`` package, for
    :func:`search`; raises :class:`PatternError`. Cached: checked at load, compiled to grade."""
    if backtracking:
        return _compile_backtracking(pattern, case_sensitive=case_sensitive)
    import re2  # imported by the first pattern, not by loading the plugin

    options = re2.Options()
    options.log_errors = False  # RE2 would print every rejected pattern to stderr
    options.case_sensitive = case_sensitive
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        why = (
            exc.args[0].decode(errors="replace")
            if exc.args and isinstance(exc.args[0], bytes)
            else str(exc)
        )
        _compile_backtracking(pattern, case_sensitive=case_sensitive)  # invalid anywhere?
        raise PatternError(why, unsupported=True) from None


def _compile_backtracking(pattern: str, *, case_sensitive: bool) -> Any:
    import regex  # only patterns RE2 cannot run pay for the import

    try:
        return regex.compile(pattern, 0 if case_sensitive else regex.IGNORECASE)
    except (regex.error, ValueError, OverflowError, RecursionError) as exc:
        raise PatternError(str(exc), unsupported=False) from None


def search(compiled: Any, text: str) -> Any:
    """``compiled.search(text)``: the match or None. A backtracking pattern's search stops
    after :data:`PATTERN_TIMEOUT` (or at the :func:`running` deadline, if sooner), raising
    :class:`CheckTimeout`."""
    if type(compiled).__module__ == "re2":  # linear in the text; anything else is bounded
        return compiled.search(text)
    if (deadline := _running.deadline) is not None:
        deadline.check()
    bound = PATTERN_TIMEOUT if deadline is None else min(PATTERN_TIMEOUT, deadline.remaining())
    try:
        return compiled.search(text, timeout=max(bound, 0.001))
    except TimeoutError:
        raise CheckTimeout(
            f"the pattern {shorten(compiled.pattern, 40)!r} gave up after {bound:g} s of backtracking "
            f"on {len(text)} characters; rewrite it without nested repetition or lookaround, so "
            "that it runs on RE2 in linear time"
        ) from None
