"""pytest-rubric: rubric-based assertions on LLM output. Substance scores, style never does."""

from __future__ import annotations

import importlib
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
        Judge,
        Length,
        Metric,
        Number,
        Regex,
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
    "Judge": "._schema",
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


def __getattr__(name: str) -> Any:
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
    "Judge",
    "JudgeError",
    "Length",
    "Metric",
    "Number",
    "Problem",
    "Regex",
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
