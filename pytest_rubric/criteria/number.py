"""``number``: MET when some number in the answer is within tolerance of ``value``."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import ValidatorFunctionWrapHandler, field_validator, model_validator

from .._results import Outcome
from .check import Answer, Check, CheckContext, met, unmet
from .json_text import FieldScoped, leaves, on_field
from .model import FieldError, Finite, NonNegative

# Numbers in reasons with every digit they were written with (up to float's precision), not
# the six of "g": "saw 102.0001" beside "within 100 ± 2", never "saw 102".
_SHOWN = ".15g"


class Number(FieldScoped):
    """MET when some number in the answer is within tolerance of ``value``."""

    type: Literal["number"] = "number"
    value: Finite
    abs_tol: NonNegative | None = None
    rel_tol: NonNegative | None = None

    @field_validator("value", mode="wrap")
    @classmethod
    def _exact_integer(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> float:
        """An integer stays one once it is checked as a number: a JSON integer past 2**53 is
        compared with it exactly."""
        checked: float = handler(value)
        return value if type(value) is int else checked

    @property
    def tolerance(self) -> float:
        """How far a number may be from ``value``: the larger of the two tolerances."""
        return max(self.abs_tol or 0.0, (self.rel_tol or 0.0) * abs(self.value))

    @model_validator(mode="after")
    def _finite_tolerance(self) -> Number:
        # Each field is finite, but rel_tol * |value| can still overflow to inf,
        # and a check with an infinite tolerance would accept any number at all.
        if not math.isfinite(self.tolerance):
            raise FieldError(
                "rel_tol",
                f"the tolerance rel_tol * |value| = {self.rel_tol:g} * {abs(self.value):g} "
                "overflows to infinity, so any number would match",
                hint="write a smaller `rel_tol` (such as 0.01), or an `abs_tol`",
            )
        return self

    def compile(self, context: CheckContext) -> Check[Number]:
        return on_field(self, NumberCheck(self))


class NumberCheck(Check[Number]):
    __slots__ = ("tol",)

    def __init__(self, c: Number) -> None:
        super().__init__(c)
        self.tol = c.tolerance

    @property
    def target(self) -> str:
        """The target as a reason says it; made with the reason, as every check stays alive to
        the end of the session."""
        return _shown(self.c.value) + (f" ± {self.tol:{_SHOWN}}" if self.tol else "")

    def within(self, x: float) -> bool:
        """Whether ``x`` is within the tolerance; a number that is not finite never is. Two
        integers (a JSON integer and an integer ``value``) within a whole tolerance are
        compared exactly; a tolerance such as ``rel_tol: 0.29`` of 100 (28.999999999999996
        in floats) keeps the slack of a few ulps below."""
        value = self.c.value
        if type(x) is int and type(value) is int and self.tol == int(self.tol):
            return abs(x - value) <= self.tol  # whole numbers throughout: exactly
        x = _float(x)
        # "1e309" or a 400-digit literal reads as inf, and inf - v is inf:
        # without the isfinite, `inf <= tol + eps * inf` would pass any target.
        # Inclusive bounds: a value written exactly at the tolerance passes
        # despite binary floating point (1157.64 - 1157.63 > 0.01 in floats);
        # the slack is a few ulps of the numbers compared, never more.
        return math.isfinite(x) and abs(x - value) <= self.tol + 1e-12 * max(abs(x), abs(value))

    def on_json(self, value: object, case: object) -> Outcome:
        """A JSON number is compared itself, and so is each number in a list or an object
        (their compact text would read ``[12,345]`` as 12345), with the numbers each string
        in them says; a string is read as text."""
        if isinstance(value, str):
            return super().on_json(value, case)
        if isinstance(value, bool) or not isinstance(value, int | float):
            numbers: list[float] = []
            for x in leaves(value):
                if isinstance(x, str):
                    numbers += Answer(x).numbers
                elif type(x) in (int, float):
                    numbers.append(x)
            return self.among(tuple(numbers))
        if self.within(value):
            return met(f"{_shown(value)} (target {self.target})")
        return unmet(f"{_shown(value)} is not within {self.target}")

    def run(self, answer: Answer, case: object) -> Outcome:
        return self.among(answer.numbers)

    def among(self, numbers: tuple[float, ...]) -> Outcome:
        target = self.target
        for x in numbers:
            if self.within(x):
                return met(f"found {_shown(x)} (target {target})")
        if not numbers:
            return unmet(f"no number in the answer (target {target})")
        seen = ", ".join(_shown(x) for x in numbers[:4])
        return unmet(f"no number within {target}; saw {seen}")


def _shown(x: float) -> str:
    """A number as a reason writes it: an integer of up to 30 digits whole, so two that
    differ past float's precision are told apart."""
    return str(x) if type(x) is int and abs(x) < 10**30 else f"{_float(x):{_SHOWN}}"


def _float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer of 400 digits: a number, beyond every tolerance
        return math.inf if value > 0 else -math.inf
