"""pytest-rubric: rubric-based assertions on LLM output. Substance scores, style never does.

The public names are the twelve below (the criterion models are in
:mod:`pytest_rubric.criteria`), each imported on first use (PEP 562), so the pytest plugin
costs little where no rubric is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._errors import RubricAssertionError as RubricAssertionError
    from ._errors import RubricError as RubricError
    from ._errors import RubricEvaluationError as RubricEvaluationError
    from ._errors import RubricLoadError as RubricLoadError
    from ._errors import RubricWarning as RubricWarning
    from ._grade.grader import Grader as Grader
    from ._results import CaseResult as CaseResult
    from ._results import CriterionResult as CriterionResult
    from ._results import Verdict as Verdict
    from ._schema import Case as Case
    from ._schema import Rubric as Rubric
    from ._session.assertion import assert_rubric as assert_rubric

# Where each public name lives.
_LAZY = {
    "Case": "._schema",
    "CaseResult": "._results",
    "CriterionResult": "._results",
    "Grader": "._grade.grader",
    "Rubric": "._schema",
    "RubricAssertionError": "._errors",
    "RubricError": "._errors",
    "RubricEvaluationError": "._errors",
    "RubricLoadError": "._errors",
    "RubricWarning": "._errors",
    "Verdict": "._results",
    "assert_rubric": "._session.assertion",
    "restyle": "._grade.restyle",  # the judge audit's pytest_rubric.restyle: not in __all__
}


def __getattr__(name: str) -> Any:
    if (module := _LAZY.get(name)) is None:
        raise AttributeError(f"module 'pytest_rubric' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = sorted(_LAZY.keys() - {"restyle"})  # the twelve
