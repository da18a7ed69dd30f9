"""One piece of judge work: what is judged (:class:`JudgeRequest`) and the key the runner
keeps it by (:class:`JudgeKey`, data, never a string parsed back)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._trace import Passage
    from ..criteria.extract import JudgedCriterion
    from .prompts import Guidance, Question


@dataclass(frozen=True, slots=True)
class JudgeKey:
    """One judge call's identity; equal keys share one call."""

    file: str  # the rubric file's node id ("" for assert_rubric: no file guides it)
    node: str = ""  # the item's node id ("" for a calibration example)
    sample: int = 0  # which of the item's answers (--rubric-repeat)
    probe: str = ""  # the probe kind asked again: confident, hedged, length, position
    example: int = -1  # the index of a calibration example of ``file``
    call: str = ""  # an assert_rubric call's own id: calls in one test never share a verdict

    def of_sample(self, sample: int) -> JudgeKey:
        return self if sample == self.sample else replace(self, sample=sample)

    def probed(self, kind: str) -> JudgeKey:
        return replace(self, probe=kind)


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """An answer to judge on some criteria, and what the judge is shown beside it."""

    key: JudgeKey
    criteria: Sequence[JudgedCriterion]
    question: Question
    response: str
    reference: str | None = None  # the case's known-correct answer, shown when there is one
    guidance: Guidance | None = None  # the rubric file's judge_instructions and judge_examples
    recording: str | None = None  # the file its replies are recorded in (--rubric-recordings)
    # The answer's retrieved passages (`grounded` reads them); None: no context was recorded.
    context: tuple[Passage, ...] | None = None

    def again(
        self, key: JudgeKey, criteria: Sequence[JudgedCriterion], response: str
    ) -> JudgeRequest:
        """The same question asked again under ``key``: a probe's variant of the answer."""
        return replace(self, key=key, criteria=criteria, response=response)
