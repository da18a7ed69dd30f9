"""The one table of criterion types: :func:`criterion_types` joins the built-in ones with
those the ``pytest_rubric_criterion_types`` hook adds (found in pydantic's validation
context under :data:`CONTEXT_KEY`). The union criteria are read by, the bodies of ``json``
and ``extract``, the loader's "did you mean" and the docs' table derive from it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Union

from pydantic import Discriminator, PlainValidator, Tag, TypeAdapter, ValidationInfo

from .all_of import AllOf
from .any_of import AnyOf
from .callable import CallableCriterion
from .citations import Citations
from .claims_backed import ClaimsBacked
from .context_recall import ContextRecall
from .forbidden import Forbidden
from .fuzzy import Fuzzy
from .length import Length
from .metric import Metric
from .model import CriterionModel
from .number import Number
from .regex import Regex
from .tool_called import ToolCalled
from .tool_sequence import ToolSequence
from .trace_limits import TraceLimits

# The types over the answer's trace: never a body (a field of an answer has no trace).
_OVER_THE_TRACE = (ToolCalled, ToolSequence, TraceLimits, ContextRecall, Citations, ClaimsBacked)
DETERMINISTIC: tuple[type[CriterionModel], ...] = (
    AnyOf,
    AllOf,
    Forbidden,
    Regex,
    Number,
    Fuzzy,
    Length,
    Metric,
    CallableCriterion,
    *_OVER_THE_TRACE,
)
# The built-in types whose models hold others (`json`'s fields, `extract`'s check, read with
# the types above) or are judged: named by path, as their modules import this one.
COMPOSITE = (
    "pytest_rubric.criteria.json:Json",
    "pytest_rubric.criteria.judge:Requirement",
    "pytest_rubric.criteria.extract:Extract",
    "pytest_rubric.criteria.grounded:Grounded",
)

# The key of pydantic's validation context under which a session passes the types its
# plugins added (a tuple of models); without it, a rubric reads the built-in types only.
CONTEXT_KEY = "criterion_types"


@functools.cache
def _builtin() -> tuple[type[CriterionModel], ...]:
    import pkgutil  # here: a run's start-up needs none of it until the first rubric file

    return (*DETERMINISTIC, *(pkgutil.resolve_name(path) for path in COMPOSITE))


def criterion_types(added: Iterable[type[CriterionModel]] = ()) -> dict[str, type[CriterionModel]]:
    """Every type by the ``type:`` it is written with: the built-in ones, then ``added``
    (``TypeError`` for one that is not a criterion type or takes a name already taken)."""
    types = {model.tag: model for model in _builtin()}
    for model in added:
        if not (isinstance(model, type) and issubclass(model, CriterionModel)) or not model.tag:
            raise TypeError(
                f"{model!r} is not a criterion type: return CriterionModel subclasses with a "
                '`type: Literal["your_type"] = "your_type"` field'
            )
        taken = types.get(model.tag)
        if taken is not None and taken is not model:
            raise TypeError(
                f"criterion type {model.tag!r} of {model.__module__}.{model.__qualname__} is "
                f"already {taken.__module__}.{taken.__qualname__}; give it another `type` name"
            )
        types[model.tag] = model
    return types


def _criterion_tag(value: Any) -> str | None:
    """The type a criterion names; one written without ``type`` but with a ``requirement`` is
    a ``judge`` criterion (the weight-and-requirement form of rubric libraries)."""
    if isinstance(value, dict):
        tag = value.get("type")
        if tag is None and "requirement" in value:
            return "judge"
        return tag if isinstance(tag, str) else None
    return getattr(value, "type", None)


@functools.lru_cache(maxsize=32)
def _union(added: tuple[type[CriterionModel], ...], *, body: bool = False) -> TypeAdapter[Any]:
    """The discriminated union on ``type`` of the built-in types and ``added`` (for a
    ``body``, those :func:`body_reader` allows): pydantic validates only the model a
    criterion names, so its errors are about that type's fields (and name the type). Made
    once per set of types: a suite validates one criterion after another."""
    models = tuple(criterion_types(added).values())
    if body:
        composite = _builtin()[len(DETERMINISTIC) :]
        models = tuple(
            model
            for model in models
            if model is not Forbidden and model not in composite and model not in _OVER_THE_TRACE
        )
    members = tuple(Annotated[model, Tag(model.tag)] for model in models)
    union: Any = Annotated[Union[members], Discriminator(_criterion_tag)]  # noqa: UP007
    return TypeAdapter(union)


def _added(info: ValidationInfo) -> tuple[type[CriterionModel], ...]:
    context = info.context
    return tuple(context.get(CONTEXT_KEY, ())) if isinstance(context, Mapping) else ()


def validate_criterion(value: Any, info: ValidationInfo) -> Any:
    """A criterion as written, read as the type it names among the session's types: by that
    type alone, and when it does not validate, by the union, whose errors name the type."""
    if isinstance(value, CriterionModel):
        return value  # built in Python
    added = _added(info)
    model = _by_tag(added).get(_criterion_tag(value))  # type: ignore[arg-type]
    if model is not None:
        try:
            return model.__pydantic_validator__.validate_python(value, context=info.context)
        except ValueError:  # pydantic's ValidationError: the union says it
            pass
    return _union(added).validate_python(value, context=info.context)


@functools.lru_cache(maxsize=32)
def _by_tag(added: tuple[type[CriterionModel], ...]) -> dict[str, type[CriterionModel]]:
    return criterion_types(added)


# What a body may not say: it is one part of its criterion, weighted as a whole.
_NOT_IN_A_BODY = ("id", "weight", "points", "axis", "required", "description")


def body_reader(*, owner: str, subject: str, forbidden: str, name: str) -> PlainValidator:
    """What reads a deterministic body (a ``json`` field's check, an ``extract``'s ``check``),
    given the id ``name``: any type but ``forbidden`` (whose MET is the error), the composite
    ones and those over the trace (a field of an answer has none), and those a plugin adds."""

    def validate(value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, CriterionModel):
            return value
        if isinstance(value, dict):
            given = [key for key in _NOT_IN_A_BODY if key in value]
            if given:
                raise ValueError(
                    f"{subject} takes no {', '.join(f'`{k}`' for k in given)}: it is part of "
                    f"its `{owner}` criterion, which has the id and the weight"
                )
            if value.get("type") == "forbidden":
                raise ValueError(f"{forbidden}; write {{type: regex, pattern: ..., invert: true}}")
            value = {**value, "id": name}
        return _union(_added(info), body=True).validate_python(value, context=info.context)

    return PlainValidator(validate)
