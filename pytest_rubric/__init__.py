"""pytest-rubric: rubric-based assertions on LLM output. Substance scores, style never does."""

from __future__ import annotations

from ._assert import assert_rubric
from ._checks import Answer
from ._errors import (
    Problem,
    RubricAssertionError,
    RubricError,
    RubricEvaluationError,
    RubricLoadError,
)
from ._grader import CompiledRubric, Grader
from ._loader import load_suite
from ._normalize import normalize, parse_numbers
from ._result import CaseResult, CriterionResult, Verdict
from ._schema import (
    AllOf,
    AnyOf,
    Callable,
    Case,
    Criterion,
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
from ._session import RubricWarning
from ._style import StyleThresholds, confidence, fluency

__all__ = [
    "AllOf",
    "Answer",
    "AnyOf",
    "Callable",
    "Case",
    "CaseResult",
    "CompiledRubric",
    "Criterion",
    "CriterionResult",
    "Forbidden",
    "Fuzzy",
    "Grader",
    "Json",
    "Judge",
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
]
