"""What every criterion has (:class:`CriterionModel`), and the field annotations the types
share, which carry the messages a user sees for a wrong number or an empty phrase.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
)

from .._defaults import MAX_CALL_TIMEOUT
from .._guards.limits import PlainNumber
from .._guards.outgoing import safe_subject, subject_problem
from .._guards.secrets import shorten
from .check import Check, CheckContext


class FieldError(ValueError):
    """A mistake a model validator finds, with the field it is about (``_load.locate`` locates
    it) and the ``path`` further into the field's value."""

    def __init__(
        self, field: str, message: str, *, hint: str | None = None, path: tuple[Any, ...] = ()
    ) -> None:
        super().__init__(message)
        self.field = field
        self.hint = hint  # what to write instead, shown under the problem
        self.path = path


def crossed(low: str, low_value: int, high: str, high_value: int) -> FieldError:
    """The error of a lower bound written above its upper bound, on the upper bound."""
    return FieldError(
        high,
        f"{low} ({low_value}) is greater than {high} ({high_value})",
        hint=f"write {low} no greater than {high}; if they are the wrong way round, swap "
        f"them: `{low}: {high_value}, {high}: {low_value}`",
    )


MODEL_CONFIG = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def share_fields_sets(models: Iterable[BaseModel]) -> None:
    """Give models that were written with the same fields one set of those fields' names.
    Pydantic gives every instance its own set (216 bytes), so a suite of 200,000 cases held
    800,000 of them with a handful of values, to the end of the session. The models are
    frozen: no set is changed in place (a copy with updates gets its own)."""
    shared: dict[frozenset[str], set[str]] = {}
    for model in models:
        written = model.__pydantic_fields_set__
        object.__setattr__(
            model, "__pydantic_fields_set__", shared.setdefault(frozenset(written), written)
        )


_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def check_import_path(value: str) -> str:
    """``value`` if it reads as ``package.module:function`` (a ``callable`` or a ``target``)."""
    if not _IMPORT_PATH.match(value):
        raise ValueError(f"{value!r} is not an import path; write it as 'package.module:function'")
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise FieldError(
            "phrase",
            "a phrase must contain more than whitespace (it would match every answer)",
            hint="write the words to look for, or remove the item",
        )
    return value


Phrase = Annotated[str, Field(min_length=1), AfterValidator(_not_blank)]
# Tuples, not lists: a suite keeps thousands alive, and the garbage collector
# stops tracking a tuple of strings.
Phrases = Annotated[tuple[Phrase, ...], Field(min_length=1)]


def _not_blank_tag(value: str) -> str:
    if not value.strip():
        raise ValueError("a tag must contain more than whitespace; write e.g. `theme:hedging`")
    return value


def _int_to_str(value: Any) -> Any:
    """``id: 7`` (a plain questions.json numbers its questions) is the id "7"."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _check_id(value: str) -> str:
    if (why := subject_problem(value)) is not None:  # an id goes into test ids, as subjects do
        raise FieldError(
            "id",
            f"the id {value!r} cannot be used: {why}",
            hint="use letters, digits, '_', '-' or '.'"
            + (f", such as {safe_subject(value)!r}" if value.strip() else ""),
        )
    return value


# ``id: 7`` is the id "7"; ids must not break pytest node ids. The length is the string's own
# check (written after the validator that wraps it, it was a Python call per id).
Id = Annotated[str, Field(min_length=1), BeforeValidator(_int_to_str), AfterValidator(_check_id)]


def _not_bool(value: Any) -> Any:
    """A number in a file is written as one: pydantic would read ``weight: yes`` as 1.0
    and ``weight: "2"`` as 2.0, but a YAML yes/no or a quoted string is never a number here."""
    if isinstance(value, bool):
        raise ValueError(
            f"must be a number, but YAML read a bare yes/no/on/off/true/false as {value}; "
            "write a number such as 1 or 0.5"
        )
    if isinstance(value, str) and not isinstance(value, PlainNumber):
        raise ValueError(
            f"must be a number, got the text {shorten(repr(value), 40)}; write the number "
            "without quotes, such as 1 or 0.5"
        )
    return value


# Every number a file gives goes through NotBool; NaN or infinity in a weight,
# value or tolerance would poison every score.
NotBool = BeforeValidator(_not_bool)
Finite = Annotated[float, NotBool, Field(allow_inf_nan=False)]
NonNegative = Annotated[float, NotBool, Field(ge=0, allow_inf_nan=False)]
Share = Annotated[float, NotBool, Field(ge=0, le=1)]  # a pass mark or threshold in [0, 1]
Percent = Annotated[float, NotBool, Field(ge=0, le=100)]
Count = Annotated[int, NotBool, Field(ge=0)]
# `tags: [..]` on a criterion or a case: strings (`key:value` welcome), none blank.
Tags = tuple[Annotated[str, Field(min_length=1), AfterValidator(_not_blank_tag)], ...]
# Seconds a user's `callable` or `target` may run before its evaluation is ERROR.
Timeout = Annotated[float, NotBool, Field(gt=0, le=MAX_CALL_TIMEOUT, allow_inf_nan=False)]


class CriterionModel(BaseModel):
    """The fields every criterion has; a type adds ``type: Literal[...]`` and its own."""

    # A type's validator is built when a file first names it (see registry.validate_criterion):
    # most runs read a few of the twenty types.
    model_config = ConfigDict(**MODEL_CONFIG, defer_build=True)
    # What a type's `type:` reads, set from its literal by __pydantic_init_subclass__.
    tag: ClassVar[str] = ""
    is_judged: ClassVar[bool] = False  # graded by the judge, never compiled into a check

    id: Id
    weight: Finite = Field(default=1.0, validation_alias=AliasChoices("weight", "points"))
    axis: Literal["substance", "style"] = "substance"
    required: bool = False
    description: str | None = None
    tags: Tags = ()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        field = cls.model_fields.get("type")
        if field is not None and isinstance(field.default, str):
            cls.tag = field.default

    @model_validator(mode="before")
    @classmethod
    def _fields_together(cls, data: Any) -> Any:
        if isinstance(data, dict) and "weight" in data and "points" in data:
            raise FieldError("points", "give `weight` or its alias `points`, not both")
        if isinstance(data, dict) and data.get("axis") == "style" and data.get("required"):
            raise FieldError(
                "required",
                "style never fails a case, so a style criterion cannot be required; drop "
                "`required: true`, or make it a substance criterion",
            )
        return data

    @property
    def effective_weight(self) -> float:
        """The weight that enters the score (``-penalty`` for ``forbidden``)."""
        return self.weight

    def compile(self, context: CheckContext) -> Check[Any]:
        """The check that grades answers against this criterion, built once per rubric."""
        raise NotImplementedError(f"{type(self).__name__} is not checked deterministically")
