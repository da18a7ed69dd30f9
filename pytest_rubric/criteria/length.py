"""``length``: MET when the answer's word and character counts are within bounds."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from .._results import Outcome
from .check import Answer, Check, CheckContext, met, unmet
from .model import Count, CriterionModel, FieldError, crossed


class Length(CriterionModel):
    """MET when the answer's word and character counts are within bounds (inclusive)."""

    type: Literal["length"] = "length"
    min_words: Count | None = None
    max_words: Count | None = None
    min_chars: Count | None = None
    max_chars: Count | None = None

    @model_validator(mode="after")
    def _bounds(self) -> Length:
        if all(b is None for b in (self.min_words, self.max_words, self.min_chars, self.max_chars)):
            raise FieldError(
                "min_words", "give at least one of min_words, max_words, min_chars, max_chars"
            )
        for low, high, name in (
            (self.min_words, self.max_words, "words"),
            (self.min_chars, self.max_chars, "chars"),
        ):
            if low is not None and high is not None and low > high:
                raise crossed(f"min_{name}", low, f"max_{name}", high)
        return self

    def compile(self, context: CheckContext) -> Check[Length]:
        return _LengthCheck(self)


class _LengthCheck(Check[Length]):
    __slots__ = ()

    def run(self, answer: Answer, case: object) -> Outcome:
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
        return unmet("; ".join(problems)) if problems else met(f"{words} words, {chars} chars")
