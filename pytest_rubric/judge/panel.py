"""A panel of judges: ``--rubric-judge`` given more than once.

A :class:`Panel` grades every judged criterion with each of its judges (one
:class:`~pytest_rubric.judge.runner.JudgeRunner` each, so each keeps its own
client, cache entries, samples and usage) and combines their outcomes per
criterion with :func:`combine_panel`:

* a boolean criterion takes the majority verdict; a tie goes against the
  answer (UNMET for a positive criterion, MET for an error criterion), as
  with judge samples;
* a score-kind criterion takes the mean credit;
* any judge's ERROR makes the criterion ERROR (a panel that could not sit is
  not a panel's grade);
* the criterion keeps ``judges``, each judge's verdict (score kind: its
  score), and its ``agreement``: below 1 it is ``unstable``.

It answers to the same calls as a runner, so the session does not care which
it holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from .._llm.base import CallStats, Judged, mean_raw_score
from .._results import Outcome, Verdict
from .runner import JudgeRunner, tally

if TYPE_CHECKING:
    from ..criteria.extract import JudgedCriterion
    from .requests import JudgeRequest

__all__ = ["Panel", "combine_panel"]


class Panel:
    """Several judges, one grade per criterion."""

    def __init__(self, runners: Sequence[JudgeRunner]) -> None:
        self.runners = tuple(runners)
        self.name = " + ".join(r.name for r in runners)
        self.client = runners[0].client  # the rubric_judge fixture's: the first judge

    @property
    def stats(self) -> CallStats:
        return self.runners[0].stats

    def schedule(self, request: JudgeRequest) -> None:
        for runner in self.runners:
            runner.schedule(request)

    def result(self, request: JudgeRequest) -> Judged:
        self.schedule(request)
        by_judge = {runner.name: runner.result(request) for runner in self.runners}
        return Judged(
            {
                c.id: combine_panel(c, {name: j.outcomes[c.id] for name, j in by_judge.items()})
                for c in request.criteria
            },
            injection_suspected=any(j.injection_suspected for j in by_judge.values()),
            llm_raw_score=mean_raw_score(j.llm_raw_score for j in by_judge.values()),
        )

    def close(self) -> None:
        for runner in self.runners:
            runner.close()


def combine_panel(criterion: JudgedCriterion, outcomes: Mapping[str, Outcome]) -> Outcome:
    """One outcome from each judge's outcome of ``criterion`` (see the module docstring)."""
    k = len(outcomes)
    score = criterion.kind == "score"
    judges: tuple[tuple[str, str | float], ...]
    if score:  # only a judge criterion has a score kind, and its range
        low, high = getattr(criterion, "min_score", 0.0), getattr(criterion, "max_score", 1.0)
        judges = tuple((n, low + o.credit * (high - low)) for n, o in outcomes.items())
    else:
        judges = tuple((n, str(o.verdict)) for n, o in outcomes.items())
    failed = [(n, o) for n, o in outcomes.items() if o.verdict is Verdict.ERROR]
    if failed:
        name, first = failed[0]
        return Outcome(
            Verdict.ERROR,
            0.0,
            f"{len(failed)} of {k} judges of the panel failed; {name}: {first.reason}",
            judges=judges,
        )
    values = list(outcomes.values())
    verdict, credit, agreement = tally(criterion, values, mean=score)
    if score:
        summary = f"panel mean credit {credit:.2f} of {k} judges"
    else:
        summary = f"panel: {sum(o.verdict is verdict for o in values)} of {k} judges {verdict}"
    reason = next((o.reason for o in values if o.verdict is verdict), values[0].reason)
    checked = [o.evidence_ok for o in values if o.evidence_ok is not None]
    return Outcome(
        verdict,
        credit,
        f"{reason} ({summary})",
        agreement=agreement,
        judges=judges,
        evidence_ok=all(checked) if checked and verdict is Verdict.MET else None,
    )
