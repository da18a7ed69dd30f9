"""``judge``: a requirement graded by the LLM judge (``pytest_rubric.judge``), not checked here."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .model import CriterionModel, FieldError, Finite

__all__ = ["Judge"]


class Judge(CriterionModel):
    """A requirement graded by an LLM judge (boolean, or a score on a scale)."""

    type: Literal["judge"] = "judge"
    requirement: Annotated[str, Field(min_length=1)]
    kind: Literal["boolean", "score"] = "boolean"
    min_score: Finite = 1.0
    max_score: Finite = 5.0

    @model_validator(mode="after")
    def _scale(self) -> Judge:
        if self.max_score <= self.min_score:
            raise FieldError(
                "max_score",
                f"max_score ({self.max_score:g}) must be greater than min_score ({self.min_score:g})",
            )
        return self

    @property
    def is_judged(self) -> bool:
        return True
