"""A case graded on what can be, when its judged criteria could not be asked (a judge set
without its key): graded twice more, each skipped criterion at the verdict that helps it
least and most, it is FAILED if it fails even at best, PASSED if it passes even at worst,
else SKIPPED with both scores as bounds. Score and pass rules are monotone in each credit,
so the extremes bound every answer the judge could give.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from .._results import CaseResult, CriterionResult, Sample, Verdict
from .scoring import item_passes, passes, score


@dataclass(frozen=True, slots=True)
class Bounds:
    """The score at worst and at best, and the verdict both extremes agree on, if any."""

    low: float
    high: float
    verdict: Literal["passed", "failed", "undecided"]


def _extreme(criterion: CriterionResult, *, best: bool) -> CriterionResult:
    """A skipped criterion as the judge could have decided it: MET helps a positive weight,
    UNMET a negative one (an error that did not happen)."""
    met = criterion.negative != best
    return replace(
        criterion, verdict=Verdict.MET if met else Verdict.UNMET, credit=1.0 if met else 0.0
    )


def _graded(result: CaseResult, *, best: bool) -> tuple[float, bool]:
    """The item's score and verdict with every skipped criterion at its extreme."""
    samples = []
    for sample in result.sample_list:
        criteria = [
            _extreme(c, best=best) if c.verdict is Verdict.SKIPPED else c for c in sample.criteria
        ]
        scored = score(criteria)
        passed = passes(
            criteria, case_score=scored.score, min_score=result.min_score, scored=scored
        )
        samples.append(Sample(scored.score, scored.raw_score, passed, criteria))
    if len(samples) == 1:  # one sample: its own verdict, whatever the pass_when rule
        return samples[0].score, samples[0].passed
    mean = math.fsum(s.score for s in samples) / len(samples)
    return mean, item_passes(
        samples, pass_when=result.pass_when, min_score=result.min_score, score=mean
    )


def bounds(result: CaseResult) -> Bounds | None:
    """The bounds of ``result`` over its skipped criteria's verdicts; None when none was."""
    if not any(c.verdict is Verdict.SKIPPED for c in result.every_criterion):
        return None
    low, passes_at_worst = _graded(result, best=False)
    high, passes_at_best = _graded(result, best=True)
    verdict: Literal["passed", "failed", "undecided"] = (
        "passed" if passes_at_worst else "failed" if not passes_at_best else "undecided"
    )
    return Bounds(low, high, verdict)


def unscored(result: CaseResult) -> bool:
    """Whether ``result``, graded with no judge configured, has nothing to score: nothing
    weighted ran, or every positive weight was SKIPPED (what ran, its error criteria alone,
    would score 1.0 if none was made), and nothing that ran decided it (an ERROR, a required
    one gone wrong, an error made that fails the case whatever the judge says)."""
    if (
        result.errors
        or result.possible
        or any(c.required and c.went_wrong for c in result.criteria)
    ):
        return False
    if score(result.criteria).empty:
        return True
    if not any(c.axis == "substance" and c.weight > 0 for c in result.skipped):
        return False
    found = bounds(result)
    return found is None or found.verdict != "failed"


def nothing_graded(result: CaseResult) -> CaseResult | None:
    """``result`` when it has nothing to score (see :func:`unscored`), as every output lists
    it: undecided, its score anywhere between its bounds (never a score of 0, which would
    drag its subject's figures); None when it has something to score."""
    if result.skipped_bounds is not None or not unscored(result):
        return None
    found = bounds(result)
    if found is None:
        return result
    return replace(result, passed=False, skipped_bounds=(found.low, found.high))


def settle_unjudged(result: CaseResult) -> CaseResult:
    """``result``, whose judged criteria could not be asked, graded on what can be: passed or
    failed when the judge could not change that, else not passed with ``skipped_bounds``."""
    found = bounds(result)
    if found is None or result.errors:  # an ERROR is an ERROR whatever the judge says
        return result
    if found.verdict == "undecided":
        return replace(result, passed=False, skipped_bounds=(found.low, found.high))
    return replace(result, passed=found.verdict == "passed")


def skip_reason(result: CaseResult) -> str:
    """Why an undecided ``result`` is SKIPPED: its bounds, then why the judge was not asked."""
    assert result.skipped_bounds is not None
    why = result.skipped[0].reason if result.skipped else "the judge was not asked"
    low, high = result.skipped_bounds
    mark = "none (report-only)" if result.min_score is None else f"{result.min_score:.2f}"
    parts = [f"score between {low:.2f} and {high:.2f} whatever the judge says; min_score {mark}"]
    if result.n_samples > 1 and result.pass_when != "mean":
        parts.append(f"pass_when {result.pass_when}")
    if required := [c.id for c in result.criteria if c.required and c.verdict is Verdict.SKIPPED]:
        parts.append(f"required criterion {required[0]!r} needs the judge")
    return f"{'; '.join(parts)} ({why})"
