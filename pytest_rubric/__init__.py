"""pytest-rubric: rubric-based assertions on LLM output. Substance scores, style never does."""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._errors import (
        DocumentError,
        JudgeError,
        Problem,
        RubricAssertionError,
        RubricError,
        RubricEvaluationError,
        RubricLoadError,
        RubricWarning,
    )
    from ._grade.grader import CompiledRubric, Grader
    from ._grade.restyle import restyle
    from ._grade.style import StyleThresholds, confidence, fluency
    from ._load.loader import load_suite
    from ._pytest.assertion import assert_rubric
    from ._results import CaseResult, CriterionResult, Verdict
    from ._schema import (
        AllOf,
        AnyOf,
        CallableCriterion,
        Case,
        Criterion,
        Extract,
        Forbidden,
        Fuzzy,
        Json,
        Length,
        Metric,
        Number,
        Regex,
        Requirement,
        Rubric,
        Suite,
    )
    from .criteria.check import Answer
    from .criteria.normalize import normalize, parse_numbers

# Where each public name lives. They are imported on first use (PEP 562), so the
# pytest plugin, which imports this package, costs little where no rubric is used.
_LAZY = {
    "AllOf": "._schema",
    "Answer": ".criteria.check",
    "AnyOf": "._schema",
    "CallableCriterion": "._schema",
    "Case": "._schema",
    "CaseResult": "._results",
    "CompiledRubric": "._grade.grader",
    "Criterion": "._schema",
    "CriterionResult": "._results",
    "Extract": "._schema",
    "Forbidden": "._schema",
    "Fuzzy": "._schema",
    "Grader": "._grade.grader",
    "Json": "._schema",
    "Requirement": "._schema",
    "DocumentError": "._errors",
    "JudgeError": "._errors",
    "Length": "._schema",
    "Metric": "._schema",
    "Number": "._schema",
    "Problem": "._errors",
    "Regex": "._schema",
    "Rubric": "._schema",
    "RubricAssertionError": "._errors",
    "RubricError": "._errors",
    "RubricEvaluationError": "._errors",
    "RubricLoadError": "._errors",
    "RubricWarning": "._errors",
    "StyleThresholds": "._grade.style",
    "Suite": "._schema",
    "Verdict": "._results",
    "assert_rubric": "._pytest.assertion",
    "confidence": "._grade.style",
    "fluency": "._grade.style",
    "load_suite": "._load.loader",
    "normalize": ".criteria.normalize",
    "parse_numbers": ".criteria.normalize",
    "restyle": "._grade.restyle",
}


# Old names kept for code written against them; each warns once where it is used. See the
# changelog in README.md.
_DEPRECATED = {
    "Judge": (
        "Requirement",
        "pytest_rubric.Judge is now pytest_rubric.Requirement (the judge is the LLM; this is "
        "the criterion it grades); the old name will be removed in a later release",
    ),
}


def __getattr__(name: str) -> Any:
    if name in _DEPRECATED:
        new, message = _DEPRECATED[name]
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return __getattr__(new)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_rubric' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "AllOf",
    "Answer",
    "AnyOf",
    "CallableCriterion",
    "Case",
    "CaseResult",
    "CompiledRubric",
    "Criterion",
    "CriterionResult",
    "DocumentError",
    "Extract",
    "Forbidden",
    "Fuzzy",
    "Grader",
    "Json",
    "JudgeError",
    "Length",
    "Metric",
    "Number",
    "Problem",
    "Regex",
    "Requirement",
    "Rubric",
    "RubricAssertionError",
    "RubricError",
    "RubricEvaluationError",
    "RubricLoadError",
    "RubricWarning",
    "StyleThresholds",
    "Suite",
    "Verdict",
    "assert_rubric",
    "confidence",
    "fluency",
    "load_suite",
    "normalize",
    "parse_numbers",
    "restyle",
]
