"""``fuzzy``: MET when a phrase matches a span of the answer at or above ``threshold``."""

from __future__ import annotations

from typing import Literal

from .._results import Outcome
from .check import Answer, Check, CheckContext, met, short, unmet
from .model import CriterionModel, Percent, Phrases
from .normalize import normalize


class Fuzzy(CriterionModel):
    """MET when a phrase matches a span of the answer at or above ``threshold`` (0-100)."""

    type: Literal["fuzzy"] = "fuzzy"
    any_of: Phrases
    threshold: Percent = 90.0

    def compile(self, context: CheckContext) -> Check[Fuzzy]:
        return _FuzzyCheck(self)


class _FuzzyCheck(Check[Fuzzy]):
    __slots__ = ("fuzz", "needles")

    def __init__(self, c: Fuzzy) -> None:
        from rapidfuzz import fuzz  # imported by the first fuzzy criterion

        super().__init__(c)
        self.needles = tuple((p, normalize(p)) for p in c.any_of)
        self.fuzz = fuzz

    def run(self, answer: Answer, case: object) -> Outcome:
        threshold, text = self.c.threshold, answer.folded
        best, best_phrase = 0.0, self.c.any_of[0]
        for phrase, needle in self.needles:
            # An answer shorter than the phrase is one span (not looked for inside the phrase).
            ratio = self.fuzz.partial_ratio if len(text) >= len(needle) else self.fuzz.ratio
            score = ratio(needle, text) if text else 0.0
            if score > best:
                best, best_phrase = score, phrase
            if best >= threshold:
                break
        reason = f"best match {best:.0f} for {short(best_phrase)} (threshold {threshold:g})"
        return met(reason) if best >= threshold else unmet(reason)
