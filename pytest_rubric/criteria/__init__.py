"""Criterion types: one module each, holding the type's model and its check; ``model`` is
what every criterion has, ``check`` the answer side, ``registry`` the one table of types.
The models, and what a type added through the ``pytest_rubric_criterion_types`` hook is
built from, are importable from here. They are imported with the package: loading any
rubric imports every type's module through the registry anyway.
"""

from __future__ import annotations

from .all_of import AllOf as AllOf
from .any_of import AnyOf as AnyOf
from .callable import CallableCriterion as CallableCriterion
from .check import Answer as Answer
from .check import Check as Check
from .check import CheckContext as CheckContext
from .check import credited as credited
from .check import error as error
from .check import met as met
from .check import unmet as unmet
from .citations import Citations as Citations
from .claims_backed import ClaimsBacked as ClaimsBacked
from .context_recall import ContextRecall as ContextRecall
from .extract import Extract as Extract
from .forbidden import Forbidden as Forbidden
from .fuzzy import Fuzzy as Fuzzy
from .grounded import Grounded as Grounded
from .json import Json as Json
from .judge import Requirement as Requirement
from .length import Length as Length
from .metric import Metric as Metric
from .model import CriterionModel as CriterionModel
from .model import FieldError as FieldError
from .number import Number as Number
from .regex import Regex as Regex
from .tool_called import ToolCalled as ToolCalled
from .tool_sequence import ToolSequence as ToolSequence
from .trace_limits import TraceLimits as TraceLimits
