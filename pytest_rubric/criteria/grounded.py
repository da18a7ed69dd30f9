"""``grounded``: the judge lists the answer's factual claims, each with a supporting quote
from the context, verified against it (:mod:`pytest_rubric.judge.grounding`); the credit is
the share of claims supported. An answer without a context is ERROR, never MET.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from .model import CriterionModel


class Grounded(CriterionModel):
    """Every factual claim of the answer is supported by a quote from its context."""

    type: Literal["grounded"] = "grounded"
    is_judged: ClassVar[bool] = True
    kind: ClassVar[Literal["grounded"]] = "grounded"  # what the judge is asked for
    requirement: ClassVar[str] = (
        "every factual claim of the response is supported by the retrieved context"
    )
