"""``forbidden``: a known-wrong claim, MET (the error happened) when a phrase occurs."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import model_validator

from .._results import Outcome
from .check import Answer, Check, CheckContext, PhraseCheck, met, short, unmet
from .json_text import FieldScoped, on_field
from .model import FieldError, NonNegative, Phrases
from .normalize import found


class Forbidden(FieldScoped):
    """A known-wrong claim: MET (the error happened) when a phrase occurs.

    It enters the score with weight ``-penalty``.
    """

    type: Literal["forbidden"] = "forbidden"
    phrases: Phrases
    penalty: NonNegative = 1.0

    @model_validator(mode="before")
    @classmethod
    def _penalty_not_weight(cls, data: Any) -> Any:
        if isinstance(data, dict) and ("weight" in data or "points" in data):
            field = "weight" if "weight" in data else "points"
            given = data[field]
            # The size the user meant, when it is a number: `weight: -3` is `penalty: 3`.
            size = abs(given) if type(given) in (int, float) and math.isfinite(given) else 2
            raise FieldError(
                field,
                "a forbidden criterion is weighted by `penalty` (a positive number that is "
                f"subtracted when the claim occurs); write `penalty: {size:g}` instead of "
                f"`{field}`",
            )
        return data

    @property
    def effective_weight(self) -> float:
        return -self.penalty

    def compile(self, context: CheckContext) -> Check[Forbidden]:
        return on_field(self, _ForbiddenCheck(self, self.phrases))


class _ForbiddenCheck(PhraseCheck[Forbidden]):
    __slots__ = ()

    def run(self, answer: Answer, case: object) -> Outcome:
        for p in self.phrases:
            if found(p, answer.folded):
                return met(f"states known-wrong claim {short(p[1])}")
        return unmet("no known-wrong claim")
