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
import importlib
import inspect
import json
import math
import re
from collections.abc import Callable as CallableT
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from rapidfuzz import fuzz

from . import _schema as s
from ._normalize import normalize, normalize_pattern, parse_numbers
from ._result import Verdict

__all__ = ["Answer", "Check", "Outcome", "compile_check", "resolve_import", "run_sync"]

_MAX_REASON = 120
_FENCED = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Outcome:
    verdict: Verdict
    credit: float
    reason: str


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


def _quote_list(items: list[str], limit: int = 3) -> str:
    shown = ", ".join(_short(i) for i in items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


class _Phrase:
    """A phrase matched in normalized text at a word start.

    ``loss`` matches "losses" but not "gloss"; a phrase that starts or ends
    with a digit matches a whole number, so ``1%`` does not match "11%" or
    "0.1%" and ``99`` does not match "995". Matching is ``str.find`` plus a
    look at the neighbouring characters: no regex to compile per phrase.
    """

    __slots__ = ("_left", "_right", "needle", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.needle = normalize(text)
        head, tail = self.needle[:1], self.needle[-1:]
        self._left = head.isascii() and head.isalnum()
        self._right = tail.isdigit()

    def found_in(self, folded: str) -> bool:
        needle = self.needle
        at = folded.find(needle)
        if at < 0 or not (self._left or self._right):
            return at >= 0
        while at >= 0:
            if self._starts_word(folded, at) and self._ends_number(folded, at + len(needle)):
                return True
            at = folded.find(needle, at + 1)
        return False

    def _starts_word(self, text: str, at: int) -> bool:
        if not self._left or at == 0:
            return True
        before = text[at - 1]
        if before.isascii() and before.isalnum():
            return False
        # "0.1%" and "1,5" continue a number: a digit phrase may not start there.
        return not (
            self.needle[0].isdigit() and before in ".," and at >= 2 and text[at - 2].isdigit()
        )

    def _ends_number(self, text: str, end: int) -> bool:
        if not self._right or end == len(text):
            return True
        after = text[end]
        if after.isdigit():
            return False
        return not (after in ".," and end + 1 < len(text) and text[end + 1].isdigit())


def _phrases(items: list[str]) -> list[_Phrase]:
    return [_Phrase(p) for p in items]


def _any_of(c: s.AnyOf) -> Check:
    phrases = _phrases(c.any_of)

    def check(answer: Answer, case: Any) -> Outcome:
        for p in phrases:
            if p.found_in(answer.folded):
                return _met(f"found {_short(p.text)}")
        return _unmet(f"none of {_quote_list(c.any_of)} found")

    return check


def _all_of(c: s.AllOf) -> Check:
    phrases = _phrases(c.all_of)

    def check(answer: Answer, case: Any) -> Outcome:
        missing = [p.text for p in phrases if not p.found_in(answer.folded)]
        if missing:
            return _unmet(f"missing {_quote_list(missing)}")
        return _met(f"all {len(phrases)} phrases found")

    return check


def _forbidden(c: s.Forbidden) -> Check:
    phrases = _phrases(c.phrases)

    def check(answer: Answer, case: Any) -> Outcome:
        for p in phrases:
            if p.found_in(answer.folded):
                return _met(f"states known-wrong claim {_short(p.text)}")
        return _unmet("no known-wrong claim")

    return check


def _regex(c: s.Regex) -> Check:
    try:
        pattern = re.compile(
            normalize_pattern(c.pattern, casefold=not c.case_sensitive),
            0 if c.case_sensitive else re.IGNORECASE,
        )
    except re.error as exc:
        message = (
            f"invalid regex {c.pattern!r}: {exc}; fix the pattern (in YAML, write it in "
            "single quotes or double every backslash)"
        )
        return lambda answer, case: _error(message)

    shown = _short(c.pattern)

    def check(answer: Answer, case: Any) -> Outcome:
        match = pattern.search(answer.cased if c.case_sensitive else answer.folded)
        if c.invert:
            if match:
                return _unmet(f"found {_short(match.group(0))}, which must not occur")
            return _met(f"{shown} does not occur")
        if match:
            return _met(f"matched {_short(match.group(0))}")
        return _unmet(f"no match for {shown}")

    return check


def _number(c: s.Number) -> Check:
    tol = max(c.abs_tol or 0.0, (c.rel_tol or 0.0) * abs(c.value))
    target = f"{c.value:g}" + (f" ± {tol:g}" if tol else "")

    def check(answer: Answer, case: Any) -> Outcome:
        for x in answer.numbers:
            # Inclusive bounds: a value written exactly at the tolerance passes
            # despite binary floating point (1157.64 - 1157.63 > 0.01 in floats);
            # the slack is a few ulps of the numbers compared, never more.
            if abs(x - c.value) <= tol + 1e-12 * max(abs(x), abs(c.value)):
                return _met(f"found {x:g} (target {target})")
        if not answer.numbers:
            return _unmet(f"no number in the answer (target {target})")
        seen = ", ".join(f"{x:g}" for x in answer.numbers[:4])
        return _unmet(f"no number within {target}; saw {seen}")

    return check


def _fuzzy(c: s.Fuzzy) -> Check:
    needles = [(p, normalize(p)) for p in c.any_of]

    def check(answer: Answer, case: Any) -> Outcome:
        best, best_phrase = 0.0, c.any_of[0]
        for phrase, needle in needles:
            score = fuzz.partial_ratio(needle, answer.folded) if answer.folded else 0.0
            if score > best:
                best, best_phrase = score, phrase
            if best >= c.threshold:
                break
        reason = f"best match {best:.0f} for {_short(best_phrase)} (threshold {c.threshold:g})"
        return _met(reason) if best >= c.threshold else _unmet(reason)

    return check


def _length(c: s.Length) -> Check:
    def check(answer: Answer, case: Any) -> Outcome:
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

    return check


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
    """The answer as JSON, or its first fenced block; (value, None) or (None, why not)."""
    try:
        return json.loads(text), None
    except ValueError as exc:
        first_error = str(exc)
    block = _FENCED.search(text)
    if block is None:
        return None, f"not JSON ({first_error}) and no fenced block"
    try:
        return json.loads(block.group(1)), None
    except ValueError as exc:
        return None, f"fenced block is not JSON ({exc})"


def _json(c: s.Json) -> Check:
    def check(answer: Answer, case: Any) -> Outcome:
        value, problem = _parse_json(answer.text.strip())
        if problem is not None:
            return _unmet(problem)
        if c.json_schema is None:
            return _met("valid JSON")
        errors = _schema_errors(value, c.json_schema, "$")
        if errors:
            return _unmet("; ".join(errors[:3]))
        return _met("valid JSON matching the schema")

    return check


def _metric(c: s.Metric) -> Check:
    expected, unexpected = _phrases(c.expected), _phrases(c.unexpected)

    def check(answer: Answer, case: Any) -> Outcome:
        tp = sum(p.found_in(answer.folded) for p in expected)
        fp = sum(p.found_in(answer.folded) for p in unexpected)
        fn, tn = len(expected) - tp, len(unexpected) - fp
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        values = {
            "precision": precision,
            "recall": recall,
            "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
            "accuracy": (tp + tn) / (tp + tn + fp + fn),
            "specificity": tn / (tn + fp) if tn + fp else 0.0,
        }
        credit = values[c.metric]
        reason = f"{c.metric} {credit:.2f} (tp {tp}, fp {fp}, fn {fn}, tn {tn})"
        return _fraction(credit, c.threshold, reason)

    return check


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


def _callable(c: s.Callable) -> Check:
    try:
        function = resolve_import(c.function)
    except Exception as exc:
        message = (
            f"cannot import {c.function!r}: {type(exc).__name__}: {exc}; check the path and "
            "that the module is importable from the rootdir"
        )
        return lambda answer, case: _error(message)
    expected = "return a bool, a float in [0, 1] or (value, reason)"

    def check(answer: Answer, case: Any) -> Outcome:
        try:
            value = run_sync(function(answer.text, case))
        except Exception as exc:
            return _error(f"{c.function} raised {type(exc).__name__}: {exc}")
        reason = f"{c.function} returned {value!r}"
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], str):
            value, reason = value
        if isinstance(value, bool):
            return _met(reason) if value else _unmet(reason)
        if isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= 1:
            return _fraction(float(value), c.threshold, reason)
        return _error(f"{c.function} returned {value!r}; {expected}")

    return check


_COMPILERS: dict[type[Any], CallableT[[Any], Check]] = {
    s.AnyOf: _any_of,
    s.AllOf: _all_of,
    s.Forbidden: _forbidden,
    s.Regex: _regex,
    s.Number: _number,
    s.Fuzzy: _fuzzy,
    s.Length: _length,
    s.Json: _json,
    s.Metric: _metric,
    s.Callable: _callable,
}


def compile_check(criterion: Any) -> Check:
    """Compile a deterministic criterion; verdict reasons are trimmed to one table cell
    (an ERROR keeps its whole reason: it says what to fix)."""
    inner = _COMPILERS[type(criterion)](criterion)

    def check(answer: Answer, case: Any) -> Outcome:
        try:
            outcome = inner(answer, case)
        except Exception as exc:  # a bug here must not turn into a verdict
            return _error(f"check failed: {type(exc).__name__}: {exc}")
        if outcome.verdict is not Verdict.ERROR and len(outcome.reason) > _MAX_REASON:
            return Outcome(outcome.verdict, outcome.credit, outcome.reason[: _MAX_REASON - 1] + "…")
        return outcome

    return check
