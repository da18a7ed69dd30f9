"""The rubric file format as pydantic models: :class:`Suite`, :class:`Case`, :class:`Rubric`.

A file is a :class:`Suite` of :class:`Case` objects, each with a list of
criteria. Each criterion type is a model in ``pytest_rubric.criteria`` (one
module per type, with its check); :data:`Criterion` is their discriminated
union on ``type``, where a criterion written without ``type`` but with a
``requirement`` is a ``judge`` criterion (the weight-and-requirement form of
rubric libraries loads unchanged).

The models only describe and validate; matching lives in the criteria's
checks, scoring in ``_scoring``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    Field,
    field_validator,
    model_validator,
)

from ._repeat import parse_pass_when, parse_repeat
from .criteria.all_of import AllOf
from .criteria.any_of import AnyOf
from .criteria.callable import CallableCriterion
from .criteria.forbidden import Forbidden
from .criteria.fuzzy import Fuzzy
from .criteria.json import Json
from .criteria.judge import Judge
from .criteria.length import Length
from .criteria.metric import Metric
from .criteria.model import MODEL_CONFIG, CriterionModel, FieldError, Id, Share, Tags, Timeout
from .criteria.model import check_import_path as _check_import_path
from .criteria.number import Number
from .criteria.regex import Regex
from .criteria.registry import DETERMINISTIC, tagged_union

__all__ = [
    "CRITERION_TYPES",
    "AllOf",
    "AnyOf",
    "CallableCriterion",
    "Case",
    "Criterion",
    "CriterionModel",
    "FieldError",
    "Forbidden",
    "Fuzzy",
    "Json",
    "Judge",
    "Length",
    "Metric",
    "Number",
    "Regex",
    "Rubric",
    "Suite",
    "default_ids",
]

# Every criterion type by the `type:` it is written with: the deterministic ones,
# then `json` (whose fields hold deterministic bodies) and `judge`.
_ALL: tuple[type[CriterionModel], ...] = (*DETERMINISTIC, Json, Judge)
CRITERION_TYPES: dict[str, type[CriterionModel]] = {model.tag: model for model in _ALL}

if TYPE_CHECKING:
    Criterion = CriterionModel
else:
    Criterion = tagged_union(CRITERION_TYPES.values())


def default_ids(value: Any, prefix: str) -> Any:
    """Criteria without an ``id`` (the weight-and-requirement form) are named by position."""
    if isinstance(value, list):
        return [
            {**c, "id": f"{prefix}{i}"} if isinstance(c, dict) and "id" not in c else c
            for i, c in enumerate(value, start=1)
        ]
    return value


# How many answers each (case, subject) item gets (`repeat`), and how they make a pass.
Repeat = Annotated[int, BeforeValidator(parse_repeat)]
PassWhenField = Annotated[str | float, BeforeValidator(parse_pass_when)]


class Rubric(BaseModel):
    """A list of criteria with a pass mark: what :func:`assert_rubric` grades against.

    A criterion without an ``id`` is named by its position: ``c1``, ``c2``, ...
    (``g1``, ``g2``, ... in a file's ``global`` list).
    """

    model_config = MODEL_CONFIG

    @field_validator("criteria", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> Any:
        return default_ids(value, "c")

    id: str = "rubric"
    question: str | None = None
    criteria: list[Criterion] = []
    min_score: Share | None = None
    reference: str | None = None
    metadata: dict[str, Any] = {}


class Case(Rubric):
    """One question of a rubric file, with where its responses come from."""

    id: Id
    response: str | None = None
    responses: dict[str, str] | None = None
    subject: str | None = None
    target: str | None = None
    timeout: Timeout | None = None  # for the target; default: ini rubric_call_timeout (60 s)
    repeat: Repeat | None = None  # default: the file's, else --rubric-repeat (1)
    pass_when: PassWhenField | None = None  # default: the file's, else --rubric-pass-when (mean)
    tags: Tags = ()

    @field_validator("target")
    @classmethod
    def _target_path(cls, value: str | None) -> str | None:
        return None if value is None else _check_import_path(value)

    @model_validator(mode="after")
    def _subject_needs_response(self) -> Case:
        if self.subject is not None and self.response is None:
            raise FieldError(
                "response", "`subject` names the author of `response`; add `response: ...`"
            )
        return self


class Suite(BaseModel):
    """A rubric file: cases plus file-level defaults and ``global`` criteria."""

    model_config = MODEL_CONFIG

    suite: str | None = None
    min_score: Share | None = None
    responses: str | None = None
    target: str | None = None
    repeat: Repeat | None = None
    pass_when: PassWhenField | None = None
    global_criteria: list[Criterion] = Field(
        default=[], validation_alias=AliasChoices("global", "global_criteria")
    )
    cases: list[Case]

    @field_validator("global_criteria", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> Any:
        return default_ids(value, "g")

    @field_validator("target")
    @classmethod
    def _target_path(cls, value: str | None) -> str | None:
        return None if value is None else _check_import_path(value)
