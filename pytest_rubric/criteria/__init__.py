"""Criterion types: one module each, holding the type's model, its check and nothing else.

=================  ===========================================================
``model``          what every criterion has (id, weight, axis...), the field
                   annotations types share, :class:`FieldError`
``check``          the answer side: :class:`Answer`, :class:`Check` and the
                   outcomes a check returns
``phrases``        phrase matching at word and number bounds (any_of, all_of,
                   forbidden, metric)
``any_of`` ...     one deterministic type per module: its model and its check
``registry``       the one table of criterion types (a line each), with the
                   types a ``pytest_rubric_criterion_types`` hook adds
``json``           ``json``: parses, fits any JSON Schema, checks fields at
                   JSON Pointers with deterministic bodies (above the registry)
``json_text``      JSON read out of an answer (fenced or bare), JSON Pointers
``normalize``      the text normalization every phrase and pattern match uses
``judge``          ``judge``: a requirement the LLM judge grades (model only)
``extract``        ``extract``: the judge reads a value, a deterministic body
                   decides (above the registry, like ``json``)
=================  ===========================================================

The criterion models, and what a type added through the hook is built from,
are importable from here; each is imported on first use (PEP 562), so a
session without rubrics imports none of this, and the models load pydantic,
the checks RE2 and rapidfuzz only where they need them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .all_of import AllOf
    from .any_of import AnyOf
    from .callable import CallableCriterion
    from .check import Answer, Check, CheckContext, credited, error, met, unmet
    from .citations import Citations
    from .claims_backed import ClaimsBacked
    from .context_recall import ContextRecall
    from .extract import Extract
    from .forbidden import Forbidden
    from .fuzzy import Fuzzy
    from .grounded import Grounded
    from .json import Json
    from .judge import Requirement
    from .length import Length
    from .metric import Metric
    from .model import CriterionModel, FieldError
    from .number import Number
    from .regex import Regex
    from .tool_called import ToolCalled
    from .tool_sequence import ToolSequence
    from .trace_limits import TraceLimits

_LAZY = {
    "AllOf": ".all_of",
    "Answer": ".check",
    "AnyOf": ".any_of",
    "CallableCriterion": ".callable",
    "Check": ".check",
    "CheckContext": ".check",
    "Citations": ".citations",
    "ClaimsBacked": ".claims_backed",
    "ContextRecall": ".context_recall",
    "CriterionModel": ".model",
    "Extract": ".extract",
    "FieldError": ".model",
    "Forbidden": ".forbidden",
    "Fuzzy": ".fuzzy",
    "Grounded": ".grounded",
    "Json": ".json",
    "Length": ".length",
    "Metric": ".metric",
    "Number": ".number",
    "Regex": ".regex",
    "Requirement": ".judge",
    "ToolCalled": ".tool_called",
    "ToolSequence": ".tool_sequence",
    "TraceLimits": ".trace_limits",
    "error": ".check",
    "credited": ".check",
    "met": ".check",
    "unmet": ".check",
}

__all__ = [
    "AllOf",
    "Answer",
    "AnyOf",
    "CallableCriterion",
    "Check",
    "CheckContext",
    "Citations",
    "ClaimsBacked",
    "ContextRecall",
    "CriterionModel",
    "Extract",
    "FieldError",
    "Forbidden",
    "Fuzzy",
    "Grounded",
    "Json",
    "Length",
    "Metric",
    "Number",
    "Regex",
    "Requirement",
    "ToolCalled",
    "ToolSequence",
    "TraceLimits",
    "credited",
    "error",
    "met",
    "unmet",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_rubric.criteria' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
