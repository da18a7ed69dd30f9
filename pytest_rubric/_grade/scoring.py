"""The substance score and the pass rules, exactly as docs/explanation/scoring.md states
them (its formulas, and why an ERROR never raises a score).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .._defaults import PassWhen
from .._results import CriterionResult, Verdict


@dataclass(frozen=True, slots=True)
class Score:
    score: float
    raw_score: float
    positive: float
    negative: float

    @property
    def empty(self) -> bool:
        """Nothing weighted ran (every weighted criterion was skipped)."""
        return self.positive == 0 and self.negative == 0


# Scores are sums of float products: 2/3 of 0.6 must not miss a 0.4 mark by 1e-17.
_EPSILON = 1e-9


def score(results: Iterable[CriterionResult]) -> Score:
    """Score the substance criteria among ``results`` (style ones are ignored, SKIPPED ones
    left out); an ERROR stays in the positive weights earning nothing, and is left out of
    the negative ones, so it never raises a score."""
    substance = [r for r in results if r.axis == "substance"]
    ran = [r for r in substance if r.verdict in (Verdict.MET, Verdict.UNMET)]
    # Floats from the start: an empty sum is the int 0, which JSON writes "0" in process and
    # "0.0" once a result crossed from an xdist worker.
    earned = sum((r.weight * r.credit for r in ran), 0.0)
    positive = sum(
        (r.weight for r in substance if r.weight > 0 and r.verdict is not Verdict.SKIPPED), 0.0
    )
    negative = sum((-r.weight for r in ran if r.weight < 0), 0.0)
    if positive > 0:
        value = earned / positive
    elif negative > 0:
        value = 1 + earned / negative
    else:
        value = 0.0
    return Score(
        score=min(1.0, max(0.0, value)), raw_score=earned, positive=positive, negative=negative
    )


def passes(
    criteria: Sequence[CriterionResult],
    *,
    case_score: float,
    min_score: float | None,
    scored: Score | None = None,
) -> bool:
    """The pass rule of a case: ``case_score >= min_score`` (none for a report-only case), no
    ``required`` criterion went the wrong way, no substance criterion is ERROR, and something
    weighted was graded. ``merge`` and ``--rubric-baseline`` recompute ``passed`` with it
    rather than trust a document's."""
    return (
        (min_score is None or case_score >= min_score - _EPSILON)
        and not any(c.required and c.went_wrong for c in criteria)
        and not any(c.item_error for c in criteria)
        and not (score(criteria) if scored is None else scored).empty
    )


def item_passes(
    samples: Sequence[Any], *, pass_when: PassWhen, min_score: float | None, score: float
) -> bool:
    """Whether an item with these graded ``samples`` and mean ``score`` passes by ``pass_when``."""
    if not samples or any(c.item_error for s in samples for c in s.criteria):
        return False
    passed = sum(bool(s.passed) for s in samples)
    if pass_when == "all":
        return passed == len(samples)
    if pass_when == "any":
        return passed > 0
    if pass_when == "mean":  # the pass rule over every sample's criteria, at the mean score
        criteria = [c for s in samples for c in s.criteria]
        return passes(criteria, case_score=score, min_score=min_score)
    return passed / len(samples) >= float(pass_when) - _EPSILON
