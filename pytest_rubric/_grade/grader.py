"""Grading: a compiled rubric and a response in, a :class:`CaseResult` out. Every text a
result keeps passes through :func:`~pytest_rubric._guards.secrets.clip` here, the one place
results are built: redacted, then cut to 2,000 characters; grading sees the whole response.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from statistics import fmean as mean
from typing import Any

from .._defaults import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CHECK_TIMEOUT,
    DEFAULT_MIN_SCORE,
    SET_A_JUDGE,
    PassWhen,
)
from .._guards.calls import CallRunner
from .._guards.secrets import Secret, clip, known_keys, whole_characters
from .._llm.base import Judged, mean_raw_score
from .._results import CaseResult, CriterionResult, Outcome, ProbeRecord, Verdict, Vote
from .._schema import REPORT_ONLY, Criterion, Mark, Rubric, own_mark
from .._trace import Passage, Trace
from ..criteria.calls import NO_CONTEXT
from ..criteria.check import Answer, Check, CheckContext
from ..criteria.extract import Extract, JudgedCriterion
from ..criteria.grounded import Grounded
from ..criteria.judge import Requirement
from . import style
from .scoring import item_passes, passes
from .scoring import score as score_results

NO_JUDGE_REASON = f"no judge configured: {SET_A_JUDGE} to grade it"
# The criteria whose result quotes what they require (made once: ``A | B`` is a new object).
_STATED = Requirement | Extract


@dataclass(frozen=True, slots=True)
class CompiledRubric:
    """A rubric ready to grade many responses: criteria in order, checks compiled."""

    rubric: Rubric
    criteria: tuple[Criterion, ...]
    checks: tuple[Check[Any] | None, ...]
    min_score: float | None  # None: report-only (``min_score: null``)
    judged_criteria: tuple[JudgedCriterion, ...] = ()
    style_field: str | None = None  # where style is measured in a JSON answer (a pointer)
    # Per criterion, derived here once: its own tags, then the case's, each once.
    tags: tuple[tuple[str, ...], ...] = field(init=False)

    def __post_init__(self) -> None:
        case_tags = getattr(self.rubric, "tags", ())
        tags = tuple(tuple(dict.fromkeys((*c.tags, *case_tags))) for c in self.criteria)
        object.__setattr__(self, "tags", tags)

    @property
    def judged(self) -> bool:
        return bool(self.judged_criteria)


def with_case_context(trace: Trace | None, rubric: Rubric) -> Trace | None:
    """The trace with the case's fixed ``context:`` as its context when it gives none (an
    empty context the application reported is its retriever's, and kept)."""
    fixed = getattr(rubric, "fixed_context", ())
    if not fixed or (trace is not None and (trace.context or trace.context_known)):
        return trace
    return Trace(source="case", context=fixed) if trace is None else replace(trace, context=fixed)


def context_of(trace: Trace | None, rubric: Rubric) -> tuple[Passage, ...] | None:
    """The answer's context, or the case's fixed one; empty when the application reported
    that its retriever found nothing, None when no context was recorded."""
    traced = with_case_context(trace, rubric)
    if traced is None or not (traced.context or traced.context_known):
        return None
    return traced.context


class Grader:
    """Grades responses against rubrics. ``rubric_grader`` is the session's instance."""

    def __init__(
        self,
        *,
        thresholds: style.StyleThresholds | None = None,
        default_min_score: float = DEFAULT_MIN_SCORE,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        check_timeout: float = DEFAULT_CHECK_TIMEOUT,
        secrets: Sequence[Secret] | None = None,
        style_field: str | None = None,
    ) -> None:
        self.thresholds = thresholds or style.StyleThresholds()
        self.style_field = style_field  # ini rubric_style_field: a file's style_field wins
        self.default_min_score = default_min_score
        self.calls = CallRunner()  # callables and targets, each bounded by a timeout
        self.context = CheckContext(call_timeout, self.calls, check_timeout)
        # What results are redacted of: by default the providers' keys in the
        # environment, the only place keys come from.
        self.secrets = tuple(known_keys() if secrets is None else secrets)
        self._judge: Callable[[CompiledRubric, str], Judged | None] | None = None
        self._settle: Callable[[CaseResult], CaseResult] | None = None

    def with_judge(
        self,
        judge: Callable[[CompiledRubric, str], Judged | None],
        *,
        settle: Callable[[CaseResult], CaseResult] | None = None,
    ) -> Grader:
        """This grader, asking ``judge(compiled, response)`` for the judged criteria when
        :meth:`grade` is given no ``judged``, each result then through ``settle`` (a judge
        without its key: graded on what can be, see ``_grade.bounds``): the ``rubric_grader``
        fixture's."""
        bound = copy.copy(self)
        bound._judge, bound._settle = judge, settle
        return bound

    def compile(
        self,
        rubric: Rubric,
        *,
        global_criteria: Sequence[Criterion] = (),
        min_score: Mark = None,
        style_field: str | None = None,
    ) -> CompiledRubric:
        """Prepare ``rubric`` for grading; ``min_score`` and ``style_field`` (None: the rubric's
        own, else the grader's) override."""
        criteria = (*global_criteria, *rubric.criteria)
        context = self.context  # a case's `timeout:` bounds its callables, as its target
        if (timeout := getattr(rubric, "timeout", None)) is not None:
            context = replace(context, call_timeout=timeout)
        checks = tuple(None if c.is_judged else c.compile(context) for c in criteria)
        mark = own_mark(rubric) if min_score is None else min_score
        mark = self.default_min_score if mark is None else mark
        return CompiledRubric(
            rubric=rubric,
            criteria=criteria,
            checks=checks,
            min_score=None if mark == REPORT_ONLY else float(mark),
            judged_criteria=tuple(c for c in criteria if isinstance(c, JudgedCriterion)),
            style_field=self.style_field if style_field is None else style_field,
        )

    def grade(
        self,
        response: str | Answer,
        compiled: CompiledRubric,
        *,
        nodeid: str = "",
        suite: str = "",
        subject: str = "inline",
        judged: Judged | None = None,
        case: str | None = None,
        ranked: bool = True,
    ) -> CaseResult:
        """Grade one response; a criterion's failure is ERROR, never raised. Without ``judged``
        (the judge's outcomes) the judged criteria are SKIPPED, unless :meth:`with_judge` set
        a judge. ``ranked``: the result counts for its subject in the leaderboard."""
        answer = response if isinstance(response, Answer) else Answer(response)
        answer.trace = with_case_context(answer.trace, compiled.rubric)
        if judged is None and self._judge is not None and compiled.judged:
            judged = self._judge(compiled, answer.text)
        criteria = []
        for criterion, check, tags in zip(
            compiled.criteria, compiled.checks, compiled.tags, strict=True
        ):
            if check is not None:
                outcome = check(answer, compiled.rubric)
            elif (
                isinstance(criterion, Grounded)
                and context_of(answer.trace, compiled.rubric) is None
            ):
                outcome = Outcome(Verdict.ERROR, 0.0, NO_CONTEXT)  # seeing none needs no judge
            else:  # judged: the judge's outcome, if it was asked
                outcome = (
                    judged.outcomes.get(criterion.id) if judged is not None else None
                ) or Outcome(Verdict.SKIPPED, 0.0, NO_JUDGE_REASON)
            criteria.append(self._criterion_result(criterion, outcome, tags))
        flags: list[str] = []  # from judged outcomes only
        if judged is not None:
            if judged.injection_suspected:
                flags.append("injection_suspected")
            if any(c.unstable for c in criteria):
                flags.append("unstable")
            if any(c.evidence_ok is False for c in criteria):
                flags.append("unsupported_evidence")
        result = self.result(
            criteria,
            compiled=compiled,
            answer=answer,
            nodeid=nodeid,
            suite=suite,
            subject=subject,
            case=case,
            ranked=ranked,
            judged_flags=flags,
            llm_raw_score=judged.llm_raw_score if judged is not None else None,
        )
        return result if self._settle is None else self._settle(result)

    def combine(
        self,
        samples: Sequence[CaseResult],
        *,
        pass_when: PassWhen = "mean",
        level: float = 0.95,
        probe: Sequence[ProbeRecord] = (),
    ) -> CaseResult:
        """One item's result from its graded samples (``repeat``): means, the first sample's
        criteria and response, the verdict of ``pass_when``, the audit's ``probe`` records."""
        first = samples[0]
        if len(samples) == 1:  # every pass rule agrees with the one sample's own verdict
            if pass_when == first.pass_when and level == first.level and not probe:
                return first  # as grade built it: no copy for the common case
            return replace(first, pass_when=pass_when, level=level, probe=tuple(probe))
        kept = [s.as_sample() for s in samples]
        score = mean([s.score for s in samples])
        styles = [s.style_score for s in samples if s.style_score is not None]
        flags = tuple(dict.fromkeys(f for s in samples for f in s.flags))
        return replace(
            first,
            score=score,
            raw_score=mean([s.raw_score for s in samples]),
            passed=item_passes(kept, pass_when=pass_when, min_score=first.min_score, score=score),
            fluency=mean([s.fluency for s in samples]),
            confidence=mean([s.confidence for s in samples]),
            naive_score=mean([s.naive_score for s in samples]),
            style_score=mean(styles) if styles else None,
            flags=flags,
            pass_when=pass_when,
            level=level,
            samples=tuple(kept),
            llm_raw_score=mean_raw_score(s.llm_raw_score for s in samples),
            probe=tuple(probe),
        )

    def unavailable(
        self, compiled: CompiledRubric, reason: str, *, nodeid: str, suite: str, subject: str
    ) -> CaseResult:
        """The result of an answer that could not be obtained: every criterion ERROR, still
        counted for its subject, so a missing answer cannot vanish from a report."""
        error = Outcome(Verdict.ERROR, 0.0, reason)
        criteria = [
            self._criterion_result(c, error, tags)
            for c, tags in zip(compiled.criteria, compiled.tags, strict=True)
        ]
        return self.result(
            criteria,
            compiled=compiled,
            answer=Answer(""),
            nodeid=nodeid,
            suite=suite,
            subject=subject,
        )

    def result(
        self,
        criteria: list[CriterionResult],
        *,
        compiled: CompiledRubric,
        answer: Answer,
        nodeid: str,
        suite: str,
        subject: str,
        case: str | None = None,
        ranked: bool = True,
        judged_flags: Sequence[str] = (),
        llm_raw_score: float | None = None,
    ) -> CaseResult:
        substance = score_results(criteria)
        passed = passes(
            criteria, case_score=substance.score, min_score=compiled.min_score, scored=substance
        )
        # In one pass: a known-wrong claim made (a negative substance weight MET); an answer
        # that claims an action its trace does not show (claims_backed UNMET); style, the
        # mean of the style criteria that were decided, each by how far it went the right way
        # (a negative weight's credit is the error happening): one that could not be
        # evaluated is left out of it, and flags the result, but never fails it.
        wrong_claim = unbacked = style_error = False
        style_credits: list[float] = []
        for c in criteria:
            if c.axis == "style":
                if c.verdict in (Verdict.MET, Verdict.UNMET):
                    style_credits.append(1 - c.credit if c.negative else c.credit)
                style_error = style_error or c.verdict is Verdict.ERROR
            elif c.negative and c.verdict is Verdict.MET:  # substance
                wrong_claim = True
            if c.type == "claims_backed" and c.verdict is Verdict.UNMET:
                unbacked = True
        # Measured on what the answer says: a JSON answer's string values, not its syntax.
        styled = style.style_text(answer.text, compiled.style_field)
        fluency = style.fluency(styled)
        confidence = style.confidence((answer if styled is answer.text else Answer(styled)).folded)
        return CaseResult(
            nodeid=nodeid,
            suite=suite,
            case=compiled.rubric.id if case is None else case,
            subject=subject,
            score=substance.score,
            raw_score=substance.raw_score,
            min_score=compiled.min_score,
            passed=passed,
            criteria=criteria,
            fluency=fluency,
            confidence=confidence,
            naive_score=style.naive_score(substance.score, fluency, confidence),
            style_score=sum(style_credits) / len(style_credits) if style_credits else None,
            flags=tuple(
                style.flags(
                    score=None if any(c.item_error for c in criteria) else substance.score,
                    confidence_=confidence,
                    wrong_claim=wrong_claim,
                    thresholds=self.thresholds,
                    unbacked_claim=unbacked,
                )
                + (["style_error"] if style_error else [])
                + list(judged_flags)
            ),
            question=(
                None
                if compiled.rubric.shown_question is None
                else whole_characters(compiled.rubric.shown_question)
            ),
            possible=substance.positive,
            tags=tuple(getattr(compiled.rubric, "tags", ())),
            # A copy for reports: a 20 MB answer is graded whole but not copied whole.
            response=clip(answer.text, *self.secrets),
            ranked=ranked,
            llm_raw_score=llm_raw_score,
            trace=None if answer.trace is None else answer.trace.clipped(self._clip),
        )

    def _clip(self, text: str) -> str:
        return clip(text, *self.secrets)

    def _criterion_result(
        self, criterion: Criterion, outcome: Outcome, tags: tuple[str, ...]
    ) -> CriterionResult:
        """The one place a criterion's result is built, so its reason is always clipped: a
        judge's reason, a callable's reason or repr, an error message."""
        return CriterionResult(
            id=criterion.id,
            type=criterion.tag,
            axis=criterion.axis,
            weight=criterion.effective_weight,
            verdict=outcome.verdict,
            credit=outcome.credit,
            reason=clip(outcome.reason, *self.secrets),
            required=criterion.required,
            agreement=outcome.agreement,
            votes=tuple(Vote(v, c) for v, c in outcome.votes) or None,
            tags=tags,
            evidence_ok=outcome.evidence_ok,
            judges=dict(outcome.judges) if outcome.judges else None,
            requirement=clip(criterion.requirement, *self.secrets)
            if isinstance(criterion, _STATED)
            else None,
        )
