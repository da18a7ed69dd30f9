"""The rubric file format as pydantic models.

A file is a :class:`Suite` of :class:`Case` objects, each with a list of
criteria. Every criterion type of the design is one model; they form a
discriminated union on ``type``, where a criterion written without ``type``
but with a ``requirement`` is a ``judge`` criterion (the weight-and-
requirement form of rubric libraries loads unchanged).

The models only describe and validate; matching lives in ``_checks``,
scoring in ``_scoring``.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from ._base import MAX_CALL_TIMEOUT
from ._repeat import parse_pass_when, parse_repeat

__all__ = [
    "CRITERION_TYPES",
    "AllOf",
    "AnyOf",
    "Callable",
    "CallableCriterion",
    "Case",
    "Criterion",
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


class FieldError(ValueError):
    """A mistake a model validator finds, with the field it is about (``_loader`` locates it).

    Field validators are located by pydantic; a model validator sees several
    fields at once, so it says which one to point at.
    """

    def __init__(self, field: str, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.hint = hint  # what to write instead, shown under the problem


_MODEL_CONFIG = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_JSON_KEYWORDS = frozenset(
    {"type", "properties", "required", "items", "enum", "description", "title"}
)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("a phrase must contain more than whitespace (it would match every answer)")
    return value


Phrase = Annotated[str, Field(min_length=1), AfterValidator(_not_blank)]
# Tuples, not lists: a suite keeps thousands alive, and the garbage collector
# stops tracking a tuple of strings.
Phrases = Annotated[tuple[Phrase, ...], Field(min_length=1)]


def _int_to_str(value: Any) -> Any:
    """``id: 7`` (a plain questions.json numbers its questions) is the id "7"."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _check_id(value: str) -> str:
    if "::" in value or any(ch in value for ch in "[]\n\r"):
        raise ValueError(
            f"id {value!r} contains '::', '[', ']' or a line break, which break test ids; "
            "use letters, digits, '_', '-' or '.'"
        )
    return value


# ``id: 7`` is the id "7"; ids must not break pytest node ids.
Id = Annotated[str, BeforeValidator(_int_to_str), Field(min_length=1), AfterValidator(_check_id)]


def _not_bool(value: Any) -> Any:
    """pydantic would read ``weight: yes`` as 1.0; a YAML yes/no is never a number here."""
    if isinstance(value, bool):
        raise ValueError(
            f"must be a number, but YAML read a bare yes/no/on/off/true/false as {value}; "
            "write a number such as 1 or 0.5"
        )
    return value


NotBool = BeforeValidator(_not_bool)
# NaN or infinity in a weight, value or tolerance would poison every score.
Finite = Annotated[float, NotBool, Field(allow_inf_nan=False)]
NonNegative = Annotated[float, NotBool, Field(ge=0, allow_inf_nan=False)]
# `tags: [axis:accuracy, theme:hedging]` on a criterion or a case: per-tag breakdowns.
Tags = tuple[Annotated[str, Field(min_length=1)], ...]
# How many answers each (case, subject) item gets (`repeat`), and how they make a pass.
Repeat = Annotated[int, BeforeValidator(parse_repeat)]
PassWhenField = Annotated[str | float, BeforeValidator(parse_pass_when)]
# Seconds a user's `callable` or `target` may run before its evaluation is ERROR.
Timeout = Annotated[float, NotBool, Field(gt=0, le=MAX_CALL_TIMEOUT, allow_inf_nan=False)]


class _Base(BaseModel):
    model_config = _MODEL_CONFIG

    id: Id
    weight: Finite = Field(default=1.0, validation_alias=AliasChoices("weight", "points"))
    axis: Literal["substance", "style"] = "substance"
    required: bool = False
    description: str | None = None
    tags: Tags = ()

    @model_validator(mode="before")
    @classmethod
    def _one_weight(cls, data: Any) -> Any:
        if isinstance(data, dict) and "weight" in data and "points" in data:
            raise FieldError("points", "give `weight` or its alias `points`, not both")
        return data

    @property
    def effective_weight(self) -> float:
        """The weight that enters the score (``-penalty`` for ``forbidden``)."""
        return self.weight

    @property
    def is_judged(self) -> bool:
        return False


class AnyOf(_Base):
    """MET when any phrase occurs in the normalized answer."""

    type: Literal["any_of"] = "any_of"
    any_of: Phrases


class AllOf(_Base):
    """MET when every phrase occurs in the normalized answer."""

    type: Literal["all_of"] = "all_of"
    all_of: Phrases


class Forbidden(_Base):
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
            raise FieldError(
                "weight" if "weight" in data else "points",
                "a forbidden criterion is weighted by `penalty` (a positive number that is "
                "subtracted when the claim occurs); write `penalty: 2` instead of `weight`",
            )
        return data

    @property
    def effective_weight(self) -> float:
        return -self.penalty


class Regex(_Base):
    """MET when the pattern matches the normalized answer (or, inverted, does not).

    ``engine: re2`` (the default) matches in linear time, so no pattern can
    hang a run; ``engine: python`` allows backreferences and lookaround, and
    each of its searches is cut off after a time bound (ERROR).
    """

    type: Literal["regex"] = "regex"
    pattern: Annotated[str, Field(min_length=1)]
    case_sensitive: bool = False
    invert: bool = False
    engine: Literal["re2", "python"] = "re2"


class Number(_Base):
    """MET when some number in the answer is within tolerance of ``value``."""

    type: Literal["number"] = "number"
    value: Finite
    abs_tol: NonNegative | None = None
    rel_tol: NonNegative | None = None

    @model_validator(mode="after")
    def _finite_tolerance(self) -> Number:
        # Each field is finite, but rel_tol * |value| can still overflow to inf,
        # and a check with an infinite tolerance would accept any number at all.
        # The same formula as the check's (``_checks._Number``).
        tolerance = max(self.abs_tol or 0.0, (self.rel_tol or 0.0) * abs(self.value))
        if not math.isfinite(tolerance):
            raise FieldError(
                "rel_tol",
                f"the tolerance rel_tol * |value| = {self.rel_tol:g} * {abs(self.value):g} "
                "overflows to infinity, so any number would match",
                hint="write a smaller `rel_tol` (such as 0.01), or an `abs_tol`",
            )
        return self


class Fuzzy(_Base):
    """MET when a phrase matches a span of the answer at or above ``threshold`` (0-100)."""

    type: Literal["fuzzy"] = "fuzzy"
    any_of: Phrases
    threshold: Annotated[float, NotBool, Field(ge=0, le=100)] = 90.0


class Length(_Base):
    """MET when the answer's word and character counts are within bounds (inclusive)."""

    type: Literal["length"] = "length"
    min_words: Annotated[int, NotBool, Field(ge=0)] | None = None
    max_words: Annotated[int, NotBool, Field(ge=0)] | None = None
    min_chars: Annotated[int, NotBool, Field(ge=0)] | None = None
    max_chars: Annotated[int, NotBool, Field(ge=0)] | None = None

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
                raise FieldError(
                    f"max_{name}", f"min_{name} ({low}) is greater than max_{name} ({high})"
                )
        return self


class Json(_Base):
    """MET when the answer (or its first fenced block) parses as JSON and fits ``schema``."""

    type: Literal["json"] = "json"
    json_schema: dict[str, Any] | None = Field(
        default=None, validation_alias=AliasChoices("schema", "json_schema")
    )

    @field_validator("json_schema")
    @classmethod
    def _subset(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is not None:
            _check_schema(schema, "schema")
        return schema


class Metric(_Base):
    """Fractional credit: a classification metric over the listed items found in the answer."""

    type: Literal["metric"] = "metric"
    expected: tuple[Phrase, ...] = ()
    unexpected: tuple[Phrase, ...] = ()
    metric: Literal["precision", "recall", "f1", "accuracy", "specificity"] = "f1"
    threshold: Annotated[float, NotBool, Field(ge=0, le=1)] = 0.5

    @model_validator(mode="after")
    def _items(self) -> Metric:
        if self.metric in ("precision", "recall", "f1") and not self.expected:
            raise FieldError("expected", f"metric {self.metric} needs a non-empty `expected` list")
        if self.metric == "specificity" and not self.unexpected:
            raise FieldError("unexpected", "metric specificity needs a non-empty `unexpected` list")
        if not self.expected and not self.unexpected:
            raise FieldError("expected", "give `expected` and/or `unexpected` items")
        return self


class Callable(_Base):
    """The function at ``function`` ("package.module:name") grades the response."""

    type: Literal["callable"] = "callable"
    function: str
    threshold: Annotated[float, NotBool, Field(ge=0, le=1)] = 0.5
    timeout: Timeout | None = None  # default: ini rubric_call_timeout (60 s)

    @field_validator("function")
    @classmethod
    def _import_path(cls, value: str) -> str:
        if not _IMPORT_PATH.match(value):
            raise ValueError(
                f"{value!r} is not an import path; write it as 'package.module:function'"
            )
        return value


# The public name: `Callable` alone would shadow typing's in a star import.
CallableCriterion = Callable


class Judge(_Base):
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


CRITERION_TYPES: dict[str, type[_Base]] = {
    "any_of": AnyOf,
    "all_of": AllOf,
    "forbidden": Forbidden,
    "regex": Regex,
    "number": Number,
    "fuzzy": Fuzzy,
    "length": Length,
    "json": Json,
    "metric": Metric,
    "callable": Callable,
    "judge": Judge,
}


def _criterion_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        tag = value.get("type")
        if tag is None and "requirement" in value:
            return "judge"
        return tag if isinstance(tag, str) else None
    return getattr(value, "type", None)


Criterion = Annotated[
    Annotated[AnyOf, Tag("any_of")]
    | Annotated[AllOf, Tag("all_of")]
    | Annotated[Forbidden, Tag("forbidden")]
    | Annotated[Regex, Tag("regex")]
    | Annotated[Number, Tag("number")]
    | Annotated[Fuzzy, Tag("fuzzy")]
    | Annotated[Length, Tag("length")]
    | Annotated[Json, Tag("json")]
    | Annotated[Metric, Tag("metric")]
    | Annotated[Callable, Tag("callable")]
    | Annotated[Judge, Tag("judge")],
    Discriminator(_criterion_tag),
]

MinScore = Annotated[float, NotBool, Field(ge=0, le=1)]


def default_ids(value: Any, prefix: str) -> Any:
    """Criteria without an ``id`` (the weight-and-requirement form) are named by position."""
    if isinstance(value, list):
        return [
            {**c, "id": f"{prefix}{i}"} if isinstance(c, dict) and "id" not in c else c
            for i, c in enumerate(value, start=1)
        ]
    return value


class Rubric(BaseModel):
    """A list of criteria with a pass mark: what :func:`assert_rubric` grades against.

    A criterion without an ``id`` is named by its position: ``c1``, ``c2``, ...
    (``g1``, ``g2``, ... in a file's ``global`` list).
    """

    model_config = _MODEL_CONFIG

    @field_validator("criteria", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> Any:
        return default_ids(value, "c")

    id: str = "rubric"
    question: str | None = None
    criteria: list[Criterion] = []
    min_score: MinScore | None = None
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
        return _check_target(value)

    @model_validator(mode="after")
    def _subject_needs_response(self) -> Case:
        if self.subject is not None and self.response is None:
            raise FieldError(
                "response", "`subject` names the author of `response`; add `response: ...`"
            )
        return self


class Suite(BaseModel):
    """A rubric file: cases plus file-level defaults and ``global`` criteria."""

    model_config = _MODEL_CONFIG

    suite: str | None = None
    min_score: MinScore | None = None
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
        return _check_target(value)


def _check_target(value: str | None) -> str | None:
    if value is not None and not _IMPORT_PATH.match(value):
        raise ValueError(f"{value!r} is not an import path; write it as 'package.module:function'")
    return value


def _check_schema(schema: Any, where: str) -> None:
    """Reject JSON Schema outside the supported subset, so it is never half-applied."""
    if not isinstance(schema, dict):
        raise ValueError(f"{where} must be a mapping, got {type(schema).__name__}")
    unknown = sorted(set(schema) - _JSON_KEYWORDS)
    if unknown:
        raise ValueError(
            f"{where} uses {', '.join(map(repr, unknown))}, outside the supported JSON Schema "
            f"subset ({', '.join(sorted(_JSON_KEYWORDS))}); use a `callable` criterion for more"
        )
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    for k in kinds:
        if not isinstance(k, str) or k not in _JSON_TYPES:
            raise ValueError(
                f"{where}.type {k!r} is not a JSON type; use one of {', '.join(sorted(_JSON_TYPES))}"
            )
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise ValueError(f"{where}.properties must be a mapping of property name to schema")
    for name, sub in properties.items():
        _check_schema(sub, f"{where}.properties.{name}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise ValueError(f"{where}.required must be a list of property names")
    if "items" in schema:
        _check_schema(schema["items"], f"{where}.items")
    if "enum" in schema and not isinstance(schema["enum"], list):
        raise ValueError(f"{where}.enum must be a list of allowed values")
