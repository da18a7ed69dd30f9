"""``judge``: a requirement graded by the LLM judge (``pytest_rubric.judge``), not checked here."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, model_validator

from .model import CriterionModel, FieldError, Finite, Phrases

# An anchor's description: what a score means (`scale: {1: "wrong", 5: "fully right"}`).
Anchor = Annotated[str, Field(min_length=1)]


def _anchors(value: Any) -> Any:
    """``scale:`` as a mapping of score to description, kept as sorted pairs (a criterion is
    frozen and hashable); a JSON file's keys are text, so a key that reads as a number is one."""
    if not isinstance(value, dict):
        return value
    pairs = []
    for key, text in value.items():
        if isinstance(key, str):
            try:
                key = float(key)
            except ValueError:
                raise ValueError(
                    f"the anchor {key!r} is not a score; write e.g. {{1: wrong, 5: fully right}}"
                ) from None
        pairs.append((key, text))
    return tuple(sorted(pairs, key=lambda pair: pair[0] if isinstance(pair[0], float | int) else 0))


Scale = Annotated[tuple[tuple[Finite, Anchor], ...], BeforeValidator(_anchors)]


class Requirement(CriterionModel):
    """A requirement graded by an LLM judge: boolean, a score on a scale, or a label."""

    type: Literal["judge"] = "judge"
    is_judged: ClassVar[bool] = True
    requirement: Annotated[str, Field(min_length=1)]
    kind: Literal["boolean", "score", "label"] = "boolean"
    min_score: Finite = 1.0
    max_score: Finite = 5.0
    scale: Scale | None = None  # score kind: what some scores mean, by score
    labels: Phrases | None = None  # label kind: the labels the judge picks one of
    pass_labels: Phrases | None = None  # label kind: the labels that earn credit

    @model_validator(mode="after")
    def _fields_agree(self) -> Requirement:
        """The fields read together: a range and its anchors, and each field of its kind's."""
        low, high = self.min_score, self.max_score
        if high <= low:
            raise FieldError(
                "max_score", f"max_score ({high:g}) must be greater than min_score ({low:g})"
            )
        if self.scale is not None and self.kind != "score":
            message = "`scale` describes the scores of a score-kind criterion"
            raise FieldError("scale", message, hint="add `kind: score`, or remove `scale`")
        outside = [k for k, _ in self.scale or () if not low <= k <= high]
        if outside:
            message = f"the anchor {outside[0]:g} is outside the scale {low:g} to {high:g}"
            raise FieldError("scale", message, hint="anchor scores from min_score to max_score")
        if self.kind != "label":
            if self.labels is None and self.pass_labels is None:
                return self
            field = "labels" if self.labels is not None else "pass_labels"
            message = f"`{field}` belongs to a label-kind criterion"
            raise FieldError(field, message, hint="add `kind: label`, or remove it")
        if self.labels is None:
            message = "a label-kind criterion needs `labels`, the labels the judge picks one of"
            hint = 'write e.g. labels: ["correct", "partly correct", "wrong"]'
            raise FieldError("labels", message, hint=hint)
        if self.pass_labels is None:
            message = "a label-kind criterion needs `pass_labels`, the labels that earn credit"
            raise FieldError("pass_labels", message, hint='write e.g. pass_labels: ["correct"]')
        if len(set(self.labels)) != len(self.labels):
            raise FieldError("labels", "a label is listed twice")
        unknown = [label for label in self.pass_labels if label not in self.labels]
        if unknown:
            known = ", ".join(map(repr, self.labels))
            message = f"{unknown[0]!r} is not one of the labels ({known})"
            raise FieldError("pass_labels", message, hint="list pass labels from `labels`")
        return self
