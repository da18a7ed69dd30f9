"""Deterministic checks: each criterion type compiled once into a function of the answer.

:func:`compile_check` turns a criterion model into a :data:`Check`, doing
all the work that does not depend on the answer (normalizing phrases,
compiling patterns, importing callables) once per rubric. The answer side is
an :class:`Answer`, whose normalized forms and numbers are computed once per
response and shared by every check of the case.

A check never raises: whatever the answer, it returns a verdict, or ERROR
with a reason when the criterion cannot be evaluated.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import importlib
import inspect
import json
import math
import queue
import re
import reprlib
import threading
from collections.abc import Callable as CallableT
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import re2
from rapidfuzz import fuzz

from . import _schema as s
from ._base import DEFAULT_CALL_TIMEOUT
from ._normalize import normalize, normalize_pattern, parse_numbers
from ._result import Verdict
from ._secrets import redact
from .judge.providers import known_keys

__all__ = [
    "Answer",
    "CallRunner",
    "CallTimeout",
    "Check",
    "Outcome",
    "compile_check",
    "resolve_import",
    "run_sync",
]

_MAX_REASON = 120
# How long one engine: python search may backtrack before the criterion is ERROR.
PYTHON_REGEX_TIMEOUT = 1.0
_FENCED = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Outcome:
    """A verdict with its credit and reason; ``agreement`` and ``samples`` only when the
    judge was asked more than once (``--rubric-judge-samples``)."""

    verdict: Verdict
    credit: float
    reason: str
    agreement: float | None = None
    samples: tuple[tuple[Verdict, float], ...] = ()


def _met(reason: str) -> Outcome:
    return Outcome(Verdict.MET, 1.0, reason)


def _unmet(reason: str) -> Outcome:
    return Outcome(Verdict.UNMET, 0.0, reason)


def _error(reason: str) -> Outcome:
    return Outcome(Verdict.ERROR, 0.0, reason)


def _fraction(credit: float, threshold: float, reason: str) -> Outcome:
    verdict = Verdict.MET if credit >= threshold else Verdict.UNMET
    return Outcome(verdict, credit, reason)


class Answer:
    """A response under test, with its derived forms computed on first use."""

    __slots__ = ("__dict__", "text")

    def __init__(self, text: str) -> None:
        self.text = text

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


Check = CallableT[[Answer, Any], Outcome]
"""A compiled criterion: ``check(answer, case) -> Outcome``."""


def _short(text: str, limit: int = 40) -> str:
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return repr(text)


def _quote_list(items: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(_short(i) for i in items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


# A phrase compiled for matching: (needle, text, must_start_word, must_end_number).
# Plain tuples of strings and bools, so the garbage collector stops tracking them.
_Phrase = tuple[str, str, bool, bool]


def _phrase(text: str) -> _Phrase:
    """Compile a phrase for :func:`_found`.

    A phrase matches in normalized text at a word start: ``loss`` matches
    "losses" but not "gloss"; a phrase that starts or ends with a digit
    matches a whole number, so ``1%`` does not match "11%" or "0.1%" and
    ``99`` does not match "995". Matching is ``str.find`` plus a look at the
    neighbouring characters: no regex to compile per phrase.
    """
    needle = normalize(text)
    head, tail = needle[:1], needle[-1:]
    return needle, text, head.isascii() and head.isalnum(), tail.isdigit()


def _found(phrase: _Phrase, folded: str) -> bool:
    needle, _, left, right = phrase
    at = folded.find(needle)
    if at < 0 or not (left or right):
        return at >= 0
    digit_head = needle[0].isdigit()
    while at >= 0:
        end = at + len(needle)
        if (not left or _starts_word(folded, at, digit_head)) and (
            not right or _ends_number(folded, end)
        ):
            return True
        at = folded.find(needle, at + 1)
    return False


def _starts_word(text: str, at: int, digit_head: bool) -> bool:
    if at == 0:
        return True
    before = text[at - 1]
    if before.isascii() and before.isalnum():
        return False
    # "0.1%" and "1,5" continue a number: a digit phrase may not start there.
    return not (digit_head and before in ".," and at >= 2 and text[at - 2].isdigit())


def _ends_number(text: str, end: int) -> bool:
    if end == len(text):
        return True
    after = text[end]
    if after.isdigit():
        return False
    return not (after in ".," and end + 1 < len(text) and text[end + 1].isdigit())


def _phrases(items: tuple[str, ...]) -> tuple[_Phrase, ...]:
    return tuple(_phrase(p) for p in items)


class _Check:
    """A compiled criterion. Calling it never raises, and trims a verdict's reason to one
    table cell (an ERROR keeps its whole reason: it says what to fix).

    Checks are small slotted objects rather than closures: a suite of thousands of
    cases keeps one per criterion alive, and closures cost the garbage collector
    several objects each.
    """

    __slots__ = ("c",)

    def __init__(self, c: Any) -> None:
        self.c = c

    def run(self, answer: Answer, case: Any) -> Outcome:
        raise NotImplementedError

    def __call__(self, answer: Answer, case: Any) -> Outcome:
        try:
            outcome = self.run(answer, case)
        except Exception as exc:  # a bug here must not turn into a verdict
            return _error(f"check failed: {type(exc).__name__}: {exc}")
        if outcome.verdict is not Verdict.ERROR and len(outcome.reason) > _MAX_REASON:
            # A callable's reason may hold anything: keys go before the cut can split one.
            reason = redact(outcome.reason, *known_keys())
            if len(reason) > _MAX_REASON:
                reason = reason[: _MAX_REASON - 1] + "…"
            return Outcome(outcome.verdict, outcome.credit, reason)
        return outcome


class _Broken(_Check):
    """A criterion that cannot be evaluated at all (a regex that does not compile...)."""

    __slots__ = ("message",)

    def __init__(self, c: Any, message: str) -> None:
        super().__init__(c)
        self.message = message

    def run(self, answer: Answer, case: Any) -> Outcome:
        return _error(self.message)


class _AnyOf(_Check):
    __slots__ = ("phrases",)

    def __init__(self, c: s.AnyOf) -> None:
        super().__init__(c)
        self.phrases = _phrases(c.any_of)

    def run(self, answer: Answer, case: Any) -> Outcome:
        for p in self.phrases:
            if _found(p, answer.folded):
                return _met(f"found {_short(p[1])}")
        return _unmet(f"none of {_quote_list(self.c.any_of)} found")


class _AllOf(_Check):
    __slots__ = ("phrases",)

    def __init__(self, c: s.AllOf) -> None:
        super().__init__(c)
        self.phrases = _phrases(c.all_of)

    def run(self, answer: Answer, case: Any) -> Outcome:
        missing = [p[1] for p in self.phrases if not _found(p, answer.folded)]
        if missing:
            return _unmet(f"missing {_quote_list(missing)}")
        return _met(f"all {len(self.phrases)} phrases found")


class _Forbidden(_Check):
    __slots__ = ("phrases",)

    def __init__(self, c: s.Forbidden) -> None:
        super().__init__(c)
        self.phrases = _phrases(c.phrases)

    def run(self, answer: Answer, case: Any) -> Outcome:
        for p in self.phrases:
            if _found(p, answer.folded):
                return _met(f"states known-wrong claim {_short(p[1])}")
        return _unmet("no known-wrong claim")


class RegexError(ValueError):
    """A pattern that does not compile. ``unsupported``: it is valid for Python's engine
    but uses what RE2 lacks (backreferences, lookaround), which is a collection error."""

    def __init__(self, message: str, *, unsupported: bool) -> None:
        super().__init__(message)
        self.unsupported = unsupported


def _re2_options(case_sensitive: bool) -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would print every rejected pattern to stderr
    options.case_sensitive = case_sensitive
    return options


@functools.lru_cache(maxsize=4096)
def compile_regex(pattern: str, *, case_sensitive: bool, engine: str) -> Any:
    """A compiled pattern with ``search``; RE2 unless ``engine == "python"``.

    ``engine: python`` is the ``regex`` package (a superset of ``re`` with the
    same syntax), because its searches take a ``timeout``: Python's own ``re``
    holds the GIL while it backtracks, so no thread could stop it, and a
    subprocess per search would cost milliseconds on every answer.

    The pattern's literal characters are normalized like answers are (see
    :func:`normalize_pattern`). Cached: a pattern is checked at collection
    and compiled again by the grader.
    """
    normalized = normalize_pattern(pattern, casefold=not case_sensitive)
    if engine == "python":
        return _compile_backtracking(normalized, case_sensitive=case_sensitive)
    try:
        return re2.compile(normalized, _re2_options(case_sensitive))
    except re2.error as exc:
        why = (
            exc.args[0].decode(errors="replace")
            if exc.args and isinstance(exc.args[0], bytes)
            else str(exc)
        )
        _compile_backtracking(normalized, case_sensitive=case_sensitive)  # invalid anywhere?
        raise RegexError(why, unsupported=True) from None


def _compile_backtracking(pattern: str, *, case_sensitive: bool) -> Any:
    import regex  # only rubrics that ask for engine: python pay for the import

    try:
        return regex.compile(pattern, 0 if case_sensitive else regex.IGNORECASE)
    except (regex.error, ValueError, OverflowError, RecursionError) as exc:
        raise RegexError(str(exc), unsupported=False) from None


def regex_problem(c: s.Regex) -> str | None:
    """Why ``c`` cannot run on RE2 although it is a valid Python pattern, or None."""
    try:
        compile_regex(c.pattern, case_sensitive=c.case_sensitive, engine=c.engine)
    except RegexError as exc:
        if exc.unsupported:
            return str(exc)
    return None


class _Regex(_Check):
    __slots__ = ("pattern",)

    def __init__(self, c: s.Regex) -> None:
        super().__init__(c)
        self.pattern = compile_regex(c.pattern, case_sensitive=c.case_sensitive, engine=c.engine)

    def run(self, answer: Answer, case: Any) -> Outcome:
        c = self.c
        text = answer.cased if c.case_sensitive else answer.folded
        if c.engine == "python":
            # A backtracking engine can take exponential time on a short answer
            # ((a+)+$ on 51 characters): every search is bounded in time.
            try:
                match = self.pattern.search(text, timeout=PYTHON_REGEX_TIMEOUT)
            except TimeoutError:
                return _error(
                    f"engine: python gave up on {_short(c.pattern)} after "
                    f"{PYTHON_REGEX_TIMEOUT:g} s of backtracking on an answer of {len(text)} "
                    "characters; rewrite the pattern without nested repetition, or use the "
                    "default engine (RE2), which runs in linear time"
                )
        else:
            match = self.pattern.search(text)
        if c.invert:
            if match:
                return _unmet(f"found {_short(match.group(0))}, which must not occur")
            return _met(f"{_short(c.pattern)} does not occur")
        if match:
            return _met(f"matched {_short(match.group(0))}")
        return _unmet(f"no match for {_short(c.pattern)}")


def _regex(c: s.Regex) -> _Check:
    try:
        return _Regex(c)
    except RegexError as exc:
        return _Broken(
            c,
            f"invalid regex {c.pattern!r}: {exc}; fix the pattern (in YAML, write it in "
            "single quotes or double every backslash)",
        )


class _Number(_Check):
    __slots__ = ("target", "tol")

    def __init__(self, c: s.Number) -> None:
        super().__init__(c)
        self.tol = max(c.abs_tol or 0.0, (c.rel_tol or 0.0) * abs(c.value))
        self.target = f"{c.value:g}" + (f" ± {self.tol:g}" if self.tol else "")

    def run(self, answer: Answer, case: Any) -> Outcome:
        value, target = self.c.value, self.target
        for x in answer.numbers:
            if not math.isfinite(x):
                # "1e309" or a 400-digit literal reads as inf, and inf - v is inf:
                # without this, `inf <= tol + eps * inf` would pass any target.
                continue
            # Inclusive bounds: a value written exactly at the tolerance passes
            # despite binary floating point (1157.64 - 1157.63 > 0.01 in floats);
            # the slack is a few ulps of the numbers compared, never more.
            if abs(x - value) <= self.tol + 1e-12 * max(abs(x), abs(value)):
                return _met(f"found {x:g} (target {target})")
        if not answer.numbers:
            return _unmet(f"no number in the answer (target {target})")
        seen = ", ".join(f"{x:g}" for x in answer.numbers[:4])
        return _unmet(f"no number within {target}; saw {seen}")


class _Fuzzy(_Check):
    __slots__ = ("needles",)

    def __init__(self, c: s.Fuzzy) -> None:
        super().__init__(c)
        self.needles = tuple((p, normalize(p)) for p in c.any_of)

    def run(self, answer: Answer, case: Any) -> Outcome:
        threshold = self.c.threshold
        best, best_phrase = 0.0, self.c.any_of[0]
        for phrase, needle in self.needles:
            score = fuzz.partial_ratio(needle, answer.folded) if answer.folded else 0.0
            if score > best:
                best, best_phrase = score, phrase
            if best >= threshold:
                break
        reason = f"best match {best:.0f} for {_short(best_phrase)} (threshold {threshold:g})"
        return _met(reason) if best >= threshold else _unmet(reason)


class _Length(_Check):
    __slots__ = ()

    def run(self, answer: Answer, case: Any) -> Outcome:
        c = self.c
        words, chars = len(answer.text.split()), len(answer.text.strip())
        problems = []
        for count, low, high, unit in (
            (words, c.min_words, c.max_words, "words"),
            (chars, c.min_chars, c.max_chars, "chars"),
        ):
            if low is not None and count < low:
                problems.append(f"{count} {unit} < min {low}")
            if high is not None and count > high:
                problems.append(f"{count} {unit} > max {high}")
        if problems:
            return _unmet("; ".join(problems))
        return _met(f"{words} words, {chars} chars")


def _schema_errors(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(_is_type(value, k) for k in kinds):
            return [f"{path}: expected {' or '.join(kinds)}, got {_json_type(value)}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{path}: {value!r} is not one of {schema['enum']!r}"]
    errors: list[str] = []
    if isinstance(value, dict):
        errors += [
            f"{path}: missing {key!r}" for key in schema.get("required", []) if key not in value
        ]
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                errors += _schema_errors(value[key], sub, f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += _schema_errors(item, schema["items"], f"{path}[{i}]")
    return errors


def _is_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    return _json_type(value) == kind or (kind == "number" and _json_type(value) == "integer")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _parse_json(text: str) -> tuple[Any, str | None]:
    """The answer as JSON, or its first fenced block; (value, None) or (None, why not).

    An answer nested too deeply for the parser does not parse, like any other
    malformed answer: UNMET, not ERROR.
    """
    try:
        return json.loads(text), None
    except (ValueError, RecursionError) as exc:
        first_error = str(exc) if isinstance(exc, ValueError) else "nested too deeply"
    block = _FENCED.search(text)
    if block is None:
        return None, f"not JSON ({first_error}) and no fenced block"
    try:
        return json.loads(block.group(1)), None
    except ValueError as exc:
        return None, f"fenced block is not JSON ({exc})"
    except RecursionError:
        return None, "fenced block is not JSON (nested too deeply)"


class _Json(_Check):
    __slots__ = ()

    def run(self, answer: Answer, case: Any) -> Outcome:
        value, problem = _parse_json(answer.text.strip())
        if problem is not None:
            return _unmet(problem)
        schema = self.c.json_schema
        if schema is None:
            return _met("valid JSON")
        errors = _schema_errors(value, schema, "$")
        if errors:
            return _unmet("; ".join(errors[:3]))
        return _met("valid JSON matching the schema")


class _Metric(_Check):
    __slots__ = ("expected", "unexpected")

    def __init__(self, c: s.Metric) -> None:
        super().__init__(c)
        self.expected, self.unexpected = _phrases(c.expected), _phrases(c.unexpected)

    def run(self, answer: Answer, case: Any) -> Outcome:
        tp = sum(_found(p, answer.folded) for p in self.expected)
        fp = sum(_found(p, answer.folded) for p in self.unexpected)
        fn, tn = len(self.expected) - tp, len(self.unexpected) - fp
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        values = {
            "precision": precision,
            "recall": recall,
            "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
            "accuracy": (tp + tn) / (tp + tn + fp + fn),
            "specificity": tn / (tn + fp) if tn + fp else 0.0,
        }
        credit = values[self.c.metric]
        reason = f"{self.c.metric} {credit:.2f} (tp {tp}, fp {fp}, fn {fn}, tn {tn})"
        return _fraction(credit, self.c.threshold, reason)


def resolve_import(path: str) -> Any:
    """Import ``"package.module:name"`` (``name`` may be dotted) and return the object."""
    module_name, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def run_sync(value: Any) -> Any:
    """Await ``value`` if it is awaitable (an async target or callable), else return it."""
    if inspect.isawaitable(value):

        async def wait() -> Any:
            return await value

        return asyncio.run(wait())
    return value


class CallTimeout(Exception):
    """A user's callable or target did not return within its time bound."""

    def __init__(self, timeout: float) -> None:
        super().__init__(
            f"did not return within {timeout:g} s (set `timeout:` on the criterion or case, "
            "or ini rubric_call_timeout, if it needs longer)"
        )


class _Worker:
    """A daemon thread that runs the jobs it is given, one at a time."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[CallableT[[], None]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="pytest-rubric-call", daemon=True).start()

    def _serve(self) -> None:
        while True:
            self.jobs.get()()


class CallRunner:
    """Runs a user's callables and targets, each bounded in time.

    A call runs on a daemon thread, in a copy of the caller's context (so
    context variables read the same). Python cannot stop a thread, so a call
    that overruns is abandoned with its thread, which never holds up the
    session or its exit; a thread whose call returned in time is reused, so
    bounding a call costs a queue hand-off, not a new thread. One runner per
    grader.
    """

    def __init__(self) -> None:
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def call(self, function: Any, *args: Any, timeout: float) -> Any:
        """``function(*args)``, awaited if async, or :class:`CallTimeout` after ``timeout`` s.

        What the function raises is raised here.
        """
        with self._lock:
            worker = self._idle.pop() if self._idle else _Worker()
        context = contextvars.copy_context()
        done = threading.Event()
        outcome: list[tuple[bool, Any]] = []

        def job() -> None:
            try:
                outcome.append((True, context.run(lambda: run_sync(function(*args)))))
            except BaseException as exc:  # handed to the caller, which decides
                outcome.append((False, exc))
            finally:
                done.set()

        worker.jobs.put(job)
        if not done.wait(timeout):
            raise CallTimeout(timeout)  # the worker stays with its call, never reused
        with self._lock:
            self._idle.append(worker)
        returned, value = outcome[0]
        if not returned:
            raise value
        return value


_CALLABLE_CONTRACT = "return a bool, a float in [0, 1] or (value, reason)"
# A callable may return 20 MB: its repr in a reason is built from a bounded slice
# (the grader cuts every reason to 2,000 characters anyway).
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 2_000


def _shown(value: Any) -> str:
    """A returned value for a reason: keys redacted before reprlib cuts a long string."""
    return _REPR.repr(redact(value, *known_keys()) if isinstance(value, str) else value)


class _Callable(_Check):
    __slots__ = ("function", "runner", "timeout")

    def __init__(self, c: s.Callable, function: Any, timeout: float, runner: CallRunner) -> None:
        super().__init__(c)
        self.function = function
        self.timeout = c.timeout or timeout
        self.runner = runner

    def run(self, answer: Answer, case: Any) -> Outcome:
        path = self.c.function
        try:
            value = self.runner.call(self.function, answer.text, case, timeout=self.timeout)
        except CallTimeout as exc:
            return _error(f"{path} {exc}")
        except Exception as exc:
            return _error(f"{path} raised {type(exc).__name__}: {exc}")
        reason = f"{path} returned {_shown(value)}"
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], str):
            value, reason = value
        if isinstance(value, bool):
            return _met(reason) if value else _unmet(reason)
        if isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= 1:
            return _fraction(float(value), self.c.threshold, reason)
        return _error(f"{path} returned {_shown(value)}; {_CALLABLE_CONTRACT}")


def _callable(c: s.Callable, call_timeout: float, runner: CallRunner) -> _Check:
    try:
        return _Callable(c, resolve_import(c.function), call_timeout, runner)
    except Exception as exc:
        return _Broken(
            c,
            f"cannot import {c.function!r}: {type(exc).__name__}: {exc}; check the path and "
            "that the module is importable from the rootdir",
        )


_COMPILERS: dict[type[Any], CallableT[[Any], _Check]] = {
    s.AnyOf: _AnyOf,
    s.AllOf: _AllOf,
    s.Forbidden: _Forbidden,
    s.Regex: _regex,
    s.Number: _Number,
    s.Fuzzy: _Fuzzy,
    s.Length: _Length,
    s.Json: _Json,
    s.Metric: _Metric,
}


def compile_check(
    criterion: Any,
    *,
    call_timeout: float = DEFAULT_CALL_TIMEOUT,
    runner: CallRunner | None = None,
) -> Check:
    """Compile a deterministic criterion into a check that never raises.

    A ``callable`` criterion that sets no ``timeout`` gets ``call_timeout``,
    and runs on ``runner`` (a new one when not given).
    """
    if isinstance(criterion, s.Callable):
        return _callable(criterion, call_timeout, runner or CallRunner())
    return _COMPILERS[type(criterion)](criterion)
