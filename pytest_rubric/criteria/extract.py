"""``extract``: the judge only pulls a value out of the answer (``{"reason", "value",
"evidence"}``, :mod:`pytest_rubric.judge.replies`); ``check:``, one deterministic criterion
body, decides MET or UNMET on it as on a field of a ``json`` criterion. The surest way to
keep style out of a judged verdict is not to let the judge grade at all.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, PrivateAttr

from .._results import Outcome, Verdict
from .check import Check, CheckContext, unmet
from .grounded import Grounded
from .judge import Requirement
from .model import CriterionModel
from .registry import body_reader

CheckBody = Annotated[
    CriterionModel,
    body_reader(
        owner="extract",
        subject="`check`",
        forbidden="`check` cannot be `forbidden` (MET would mean the error happened)",
        name="check",
    ),
]


class Extract(CriterionModel):
    """The judge extracts ``extract`` (of type ``returns``); ``check`` decides."""

    type: Literal["extract"] = "extract"
    is_judged: ClassVar[bool] = True
    kind: ClassVar[Literal["extract"]] = "extract"  # what the judge is asked for
    extract: Annotated[str, Field(min_length=1)]
    returns: Literal["number", "string", "boolean", "list"]
    check: CheckBody
    _compiled: Check[Any] | None = PrivateAttr(default=None)

    @property
    def requirement(self) -> str:
        return f"extract {self.extract} ({self.returns})"

    def decide(self, value: Any) -> Outcome:
        """The check's outcome on the value the judge extracted (None: the answer gives none)."""
        if value is None:
            return unmet("the judge found no value in the response")
        if self._compiled is None:
            # Built once, on first use, in the judge's thread; a check never raises.
            self._compiled = self.check.compile(CheckContext())
        outcome = self._compiled.on_json(value, None)
        if outcome.verdict is Verdict.ERROR:
            return Outcome(Verdict.ERROR, 0.0, f"the check failed: {outcome.reason}")
        return outcome


JudgedCriterion = Requirement | Extract | Grounded
"""What the judge is asked about: a ``judge`` criterion (it grades), an ``extract`` one
(it reads), or ``grounded`` (it lists claims with quotes from the context)."""
