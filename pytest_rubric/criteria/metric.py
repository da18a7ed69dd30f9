"""``metric``: fractional credit, a classification metric over the listed items found."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from .._results import Outcome
from .check import Answer, Check, CheckContext, credited
from .model import CriterionModel, FieldError, Phrase, Share
from .normalize import compile_phrases, found


class Metric(CriterionModel):
    """Fractional credit: a classification metric over the listed items found in the answer."""

    type: Literal["metric"] = "metric"
    expected: tuple[Phrase, ...] = ()
    unexpected: tuple[Phrase, ...] = ()
    metric: Literal["precision", "recall", "f1", "accuracy", "specificity"] = "f1"
    threshold: Share = 0.5

    @model_validator(mode="after")
    def _items(self) -> Metric:
        if self.metric in ("precision", "recall", "f1") and not self.expected:
            raise FieldError("expected", f"metric {self.metric} needs a non-empty `expected` list")
        if self.metric == "specificity" and not self.unexpected:
            raise FieldError("unexpected", "metric specificity needs a non-empty `unexpected` list")
        if not self.expected and not self.unexpected:
            raise FieldError("expected", "give `expected` and/or `unexpected` items")
        return self

    def compile(self, context: CheckContext) -> Check[Metric]:
        return _MetricCheck(self)


class _MetricCheck(Check[Metric]):
    __slots__ = ("expected", "unexpected")

    def __init__(self, c: Metric) -> None:
        super().__init__(c)
        self.expected, self.unexpected = compile_phrases(c.expected), compile_phrases(c.unexpected)

    def run(self, answer: Answer, case: object) -> Outcome:
        tp = sum(found(p, answer.folded) for p in self.expected)
        fp = sum(found(p, answer.folded) for p in self.unexpected)
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
        return credited(credit, self.c.threshold, reason)
