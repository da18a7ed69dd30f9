"""Grading judged criteria with an LLM, concurrently across the whole run.

A :class:`JudgeRunner` grades answers through one client: every known answer is scheduled
when collection ends (:meth:`JudgeRunner.schedule`), the
:class:`~pytest_rubric.judge.transport.Transport` keeps ``concurrency`` calls in flight, and
each item waits for its own (:meth:`JudgeRunner.result`). With ``votes`` K > 1
(``--rubric-judge-samples``) each answer is graded K times, combined by :func:`combine`; a
:class:`Panel`'s judges are combined by :func:`combine_panel`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._defaults import DEFAULT_CHECK_TIMEOUT
from .._guards.secrets import redact
from .._llm.base import CallStats, JudgeClient, Judged, mean_raw_score
from .._results import Outcome, Verdict
from .evidence import check_evidence
from .grounding import grade_grounded
from .strategies import STRATEGIES
from .transport import Transport

if TYPE_CHECKING:
    from ..criteria.extract import JudgedCriterion
    from .requests import JudgeKey, JudgeRequest


class JudgeRunner:
    """The run's judge: answers scheduled by key, graded in the background, waited for."""

    def __init__(
        self,
        client: JudgeClient,
        *,
        name: str,
        strategy: str = "per-criterion",
        votes: int = 1,
        evidence: str = "check",
        check_timeout: float = DEFAULT_CHECK_TIMEOUT,
        **transport: Any,
    ) -> None:
        """``transport``: the rest of :class:`Transport`'s options (``concurrency``, the
        cache, ``timeout``, ``price``, ``budget``, ``recordings``)."""
        self.client = client
        self.name = name
        self.strategy = STRATEGIES[strategy]
        self.votes = votes
        self.evidence = evidence  # --rubric-judge-evidence, see judge.evidence
        self.check_timeout = check_timeout  # bounds the evidence search (ini rubric_check_timeout)
        self.transport = Transport(client, name=name, strategy=strategy, votes=votes, **transport)
        self._futures: dict[JudgeKey, concurrent.futures.Future[Judged]] = {}

    @property
    def stats(self) -> CallStats:
        return self.transport.stats

    def schedule(self, request: JudgeRequest) -> None:
        """Start judging one answer in the background (once per key)."""
        if request.key not in self._futures:
            self._futures[request.key] = self.transport.submit(
                self.transport.recorded(request.recording, self._judge_answer(request))
            )

    def result(self, request: JudgeRequest) -> Judged:
        """Wait for one answer's outcomes, scheduling them first if nobody did."""
        self.schedule(request)
        return self._futures.pop(request.key).result()

    def close(self) -> None:
        """Cancel what is still pending, close the client, stop the loop."""
        for future in self._futures.values():
            future.cancel()
        self._futures.clear()
        self.transport.close()

    async def _judge_answer(self, request: JudgeRequest) -> Judged:
        try:
            judged = await self._grade(request)
        except Exception as exc:  # a grade that could not be obtained is ERROR, never a crash
            reason = f"judge {self.name} failed: {type(exc).__name__}: {exc}"
            judged = Judged({c.id: Outcome(Verdict.ERROR, 0.0, reason) for c in request.criteria})
        # A judge may echo anything, the key included: no reason leaves unredacted.
        return dataclasses.replace(
            judged,
            outcomes={
                cid: dataclasses.replace(o, reason=redact(o.reason, *self.transport.secrets))
                for cid, o in judged.outcomes.items()
            },
        )

    async def _grade(self, request: JudgeRequest) -> Judged:
        runs = await asyncio.gather(*(self._vote(request, i) for i in range(self.votes)))
        if self.votes == 1:
            return runs[0]
        return Judged(
            {
                c.id: combine(c, [run.outcomes[c.id] for run in runs], mean=averaged(c, self))
                for c in request.criteria
            },
            injection_suspected=any(run.injection_suspected for run in runs),
            llm_raw_score=mean_raw_score(run.llm_raw_score for run in runs),
        )

    async def _vote(self, request: JudgeRequest, vote: int) -> Judged:
        """One vote on an answer's grades, MET verdicts' evidence checked; ``grounded``
        criteria are asked on their own (see ``judge.grounding``)."""
        grounded = [c for c in request.criteria if c.kind == "grounded"]
        rest = [c for c in request.criteria if c.kind != "grounded"]
        parts = [
            grade_grounded(self.transport, c, request, vote, self.check_timeout) for c in grounded
        ]
        judged, outcomes = await asyncio.gather(
            self._strategy_vote(dataclasses.replace(request, criteria=rest), vote),
            asyncio.gather(*parts),
        )
        graded = dict(zip((c.id for c in grounded), outcomes, strict=True))
        return dataclasses.replace(judged, outcomes={**judged.outcomes, **graded})

    async def _strategy_vote(self, request: JudgeRequest, vote: int) -> Judged:
        """The strategy's grades of one vote (:meth:`_vote`, but ``grounded``)."""
        if not request.criteria:
            return Judged({})
        judged = await self.strategy.grade(self.transport, request, vote)
        if self.strategy.mean:
            return judged  # a holistic grade is one score for the whole rubric: nothing to quote
        by_id = {c.id: c for c in request.criteria}
        return dataclasses.replace(
            judged,
            outcomes={
                cid: check_evidence(
                    o,
                    by_id[cid],
                    request.response,
                    mode=self.evidence,
                    quotes=o.evidence or (),
                    timeout=self.check_timeout,
                )
                for cid, o in judged.outcomes.items()
            },
        )


def averaged(criterion: JudgedCriterion, runner: JudgeRunner) -> bool:
    """Whether several grades of ``criterion`` (votes, a panel's judges) combine by their mean
    credit (a score, a grounded share, the holistic grader's) or by majority (an extraction)."""
    kind = criterion.kind
    return kind in ("score", "grounded") or (runner.strategy.mean and kind != "extract")


def tally(
    criterion: JudgedCriterion, outcomes: Sequence[Outcome], *, mean: bool
) -> tuple[Verdict, float, float]:
    """The verdict, credit and agreement of several outcomes of one criterion, none ERROR:
    with ``mean``, the mean credit, MET from 0.5; else the majority verdict, a tie going
    against the answer (UNMET for a positive criterion, MET for an error criterion)."""
    k = len(outcomes)
    if mean:
        credits = [o.credit for o in outcomes]
        credit = sum(credits) / k
        verdict = Verdict.MET if credit >= 0.5 else Verdict.UNMET
        return verdict, credit, max(credits.count(c) for c in credits) / k
    met = sum(o.verdict is Verdict.MET for o in outcomes)
    wins = met * 2 > k or (met * 2 == k and criterion.effective_weight < 0)
    verdict = Verdict.MET if wins else Verdict.UNMET
    return verdict, 1.0 if verdict is Verdict.MET else 0.0, max(met, k - met) / k


def combine(criterion: JudgedCriterion, votes: Sequence[Outcome], *, mean: bool) -> Outcome:
    """One outcome from K votes on one criterion: ERROR if any vote is (a grade not obtained K
    times is not a K-vote grade), else as :func:`tally` decides. ``agreement`` is the share of
    votes that gave the most common grade: below 1, ``unstable``."""
    pairs = tuple((o.verdict, o.credit) for o in votes)
    k = len(votes)
    if errors := [(i, o) for i, o in enumerate(votes) if o.verdict is Verdict.ERROR]:
        i, first = errors[0]
        return Outcome(
            Verdict.ERROR,
            0.0,
            f"{len(errors)} of {k} judge votes failed; vote {i + 1}: {first.reason}",
            votes=pairs,
        )
    verdict, credit, agreement = tally(criterion, votes, mean=mean)
    if mean:
        reason = votes[0].reason
        summary = f"mean credit {credit:.2f} of {k} votes"
    else:
        reason = next(o.reason for o in votes if o.verdict is verdict)
        summary = f"{sum(o.verdict is verdict for o in votes)} of {k} votes {verdict}"
    return Outcome(
        verdict,
        credit,
        f"{reason} ({summary})",
        agreement=agreement,
        votes=pairs,
        evidence_ok=_evidence(votes, verdict),
    )


def _evidence(outcomes: Sequence[Outcome], verdict: Verdict) -> bool | None:
    """Whether the quotes of the votes (or judges) that make ``verdict`` were found: a MET
    one whose quotes were not leaves a MET unsupported, and METs that `require` turned to
    UNMET make an UNMET that, as one judge's would be; one outvoted counts for nothing."""
    checked = [
        o.evidence_ok for o in outcomes if o.evidence_ok is not None and o.verdict is verdict
    ]
    return all(checked) if checked else None


class Panel:
    """A panel of judges (``--rubric-judge`` given more than once), each its own
    :class:`JudgeRunner`, their outcomes combined by :func:`combine_panel`; it answers to the
    runner's calls."""

    def __init__(self, runners: Sequence[JudgeRunner]) -> None:
        self.runners = tuple(runners)
        self.name = " + ".join(r.name for r in runners)
        self.transport = runners[0].transport  # the rubric_judge fixture's: the first judge

    def schedule(self, request: JudgeRequest) -> None:
        for runner in self.runners:
            runner.schedule(request)

    def result(self, request: JudgeRequest) -> Judged:
        self.schedule(request)
        by_judge = {runner.name: runner.result(request) for runner in self.runners}
        return Judged(
            {
                c.id: combine_panel(
                    c,
                    {name: j.outcomes[c.id] for name, j in by_judge.items()},
                    mean=averaged(c, self.runners[0]),
                )
                for c in request.criteria
            },
            injection_suspected=any(j.injection_suspected for j in by_judge.values()),
            llm_raw_score=mean_raw_score(j.llm_raw_score for j in by_judge.values()),
        )

    def close(self) -> None:
        for runner in self.runners:
            runner.close()


def combine_panel(
    criterion: JudgedCriterion, outcomes: Mapping[str, Outcome], *, mean: bool
) -> Outcome:
    """One outcome from each judge's outcome of ``criterion``: any judge's ERROR makes it ERROR
    (a panel that could not sit is not a panel's grade); else as :func:`tally` combines
    them (``mean``: see :func:`averaged`). It keeps ``judges``, each judge's verdict (score
    kind: its score; combined by the mean, a share such as the holistic grader's: its credit;
    ERROR, whatever the kind, for a judge whose call failed), and its ``agreement``: below
    1 it is ``unstable``. Only verdicts enter the panel's kappas."""
    k = len(outcomes)
    low, high = getattr(criterion, "min_score", 0.0), getattr(criterion, "max_score", 1.0)

    def given(o: Outcome) -> str | float:
        # A failed call's credit 0.0 is no score: read as the range's minimum, it would be a
        # verdict the judge never gave (and the probe would count flips from it).
        if o.verdict is Verdict.ERROR or not (mean or criterion.kind == "score"):
            return str(o.verdict)
        if criterion.kind != "score":
            return o.credit  # a share of the weight (holistic, grounded): no verdict of its own
        return low + o.credit * (high - low)  # only a judge criterion has a score kind

    judges = tuple((n, given(o)) for n, o in outcomes.items())
    if failed := [(n, o) for n, o in outcomes.items() if o.verdict is Verdict.ERROR]:
        name, first = failed[0]
        return Outcome(
            Verdict.ERROR,
            0.0,
            f"{len(failed)} of {k} judges of the panel failed; {name}: {first.reason}",
            judges=judges,
        )
    values = list(outcomes.values())
    verdict, credit, agreement = tally(criterion, values, mean=mean)
    if mean:
        summary = f"panel mean credit {credit:.2f} of {k} judges"
    else:
        summary = f"panel: {sum(o.verdict is verdict for o in values)} of {k} judges {verdict}"
    reason = next((o.reason for o in values if o.verdict is verdict), values[0].reason)
    return Outcome(
        verdict,
        credit,
        f"{reason} ({summary})",
        agreement=agreement,
        judges=judges,
        evidence_ok=_evidence(values, verdict),
    )
