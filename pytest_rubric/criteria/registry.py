"""The registry of deterministic criterion types: one line each in :data:`DETERMINISTIC`.

A type listed here can be written in a rubric file (``type: <its tag>``)
and, as a body without id or weight, checks a field of a ``json`` criterion.
The full union of criteria (these, ``json`` and ``judge``) is
``pytest_rubric._schema.Criterion``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Union

from pydantic import Discriminator, Tag

from .._defaults import DEFAULT_CALL_TIMEOUT, DEFAULT_CHECK_TIMEOUT
from .._guards.calls import CallRunner
from .all_of import AllOf
from .any_of import AnyOf
from .callable import CallableCriterion
from .check import Check, CheckContext
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

__all__ = ["DETERMINISTIC", "compile_check", "tagged_union"]

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
    ToolCalled,
    ToolSequence,
    TraceLimits,
    ContextRecall,
    Citations,
    ClaimsBacked,
)


def _criterion_tag(value: Any) -> str | None:
    """The type a criterion names; one written without ``type`` but with a ``requirement`` is
    a ``judge`` criterion (the weight-and-requirement form of rubric libraries)."""
    if isinstance(value, dict):
        tag = value.get("type")
        if tag is None and "requirement" in value:
            return "judge"
        return tag if isinstance(tag, str) else None
    return getattr(value, "type", None)


def tagged_union(models: Iterable[type[CriterionModel]]) -> Any:
    """The discriminated union of ``models`` on ``type``: pydantic validates only the model
    a criterion names, so its errors are about that type's fields."""
    members = tuple(Annotated[model, Tag(model.tag)] for model in models)
    return Annotated[Union[members], Discriminator(_criterion_tag)]  # noqa: UP007


def compile_check(
    criterion: CriterionModel,
    *,
    call_timeout: float = DEFAULT_CALL_TIMEOUT,
    runner: CallRunner | None = None,
    check_timeout: float = DEFAULT_CHECK_TIMEOUT,
) -> Check[Any]:
    """Compile a deterministic criterion into a check that never raises.

    A ``callable`` criterion that sets no ``timeout`` gets ``call_timeout``,
    and runs on ``runner`` (a new one when not given); a check whose cost can
    grow faster than the answer gives up after ``check_timeout`` (ERROR).
    """
    context = CheckContext(call_timeout, runner or CallRunner(), check_timeout)
    return criterion.compile(context)
