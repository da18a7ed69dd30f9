"""What grading produces: one :class:`CriterionResult` per criterion, one
:class:`CaseResult` per (case, subject).

Results are plain, frozen dataclasses: the same object feeds the failure
text, the test report, the session summary and every output file. The JSON
document (``_report.document``) is what writes one as data and reads it
back, for the ``--rubric-json`` file and through pytest-xdist alike.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from ._trace import Trace


def mark_text(min_score: float | None) -> str:
    """How a result's pass mark reads: ``min_score 0.80``, or ``report-only``."""
    return "report-only" if min_score is None else f"min_score {min_score:.2f}"


class Verdict(enum.StrEnum):
    """Whether a criterion's condition holds as written."""

    MET = "MET"
    UNMET = "UNMET"
    ERROR = "ERROR"
    SKIPPED = "SKIPPED"


@dataclass(frozen=True, slots=True)
class Outcome:
    """A verdict with its credit and reason, as a check or the judge gives it; ``agreement``
    and ``votes`` only when the judge was asked more than once (``--rubric-judge-samples``)."""

    verdict: Verdict
    credit: float
    reason: str
    agreement: float | None = None
    votes: tuple[tuple[Verdict, float], ...] = ()  # each vote's (verdict, credit)
    evidence: tuple[str, ...] | None = None  # the judge's quotes (a MET reply's "evidence")
    evidence_ok: bool | None = None  # a judged MET whose quotes were checked: found or not
    judges: tuple[tuple[str, str | float], ...] = ()  # a panel's: each judge's verdict or score


@dataclass(frozen=True, slots=True)
class Vote:
    """One of the judge's votes on a criterion (``--rubric-judge-samples``): the JSON's
    ``samples``."""

    verdict: Verdict
    credit: float


@dataclass(frozen=True, slots=True)
class CriterionResult:
    """The verdict on one criterion; ``weight`` is the weight that enters the score
    (``-penalty`` for a ``forbidden`` criterion)."""

    id: str
    type: str
    axis: str
    weight: float
    verdict: Verdict
    credit: float
    reason: str
    required: bool = False
    agreement: float | None = None
    votes: tuple[Vote, ...] | None = None  # with several votes only
    tags: tuple[str, ...] = ()  # its own and its case's
    evidence_ok: bool | None = None  # judged MET, quotes checked (--rubric-judge-evidence)
    judges: dict[str, str | float] | None = None  # a panel's: each judge's verdict or score
    # A judged criterion's requirement, as the rubric states it; None for a deterministic one.
    requirement: str | None = None

    @property
    def unstable(self) -> bool:
        """Judged several times (``--rubric-judge-samples``), and the votes disagreed."""
        return self.agreement is not None and self.agreement < 1

    @property
    def negative(self) -> bool:
        """An error to avoid: its weight is negative, ``-0.0`` included (a ``forbidden``
        criterion with ``penalty: 0``, which only its ``required`` makes count)."""
        return math.copysign(1.0, self.weight) < 0

    @property
    def ok(self) -> bool:
        """Went the right way: MET for a positive weight, UNMET for a negative one."""
        if self.verdict is Verdict.MET:
            return not self.negative
        return self.verdict is Verdict.UNMET and self.negative

    @property
    def went_wrong(self) -> bool:
        """Decided, and the wrong way (ERROR and SKIPPED are not decided)."""
        return self.verdict in (Verdict.MET, Verdict.UNMET) and not self.ok

    @property
    def item_error(self) -> bool:
        """ERROR on a substance criterion: the answer could not be graded, so its item is an
        ERROR, never a pass. A style criterion's ERROR never is (style never fails a case):
        the item is decided by its substance, and flagged ``style_error``. The one rule every
        verdict (a run's, ``assert_rubric``'s, ``merge``'s recomputation) goes by."""
        return self.verdict is Verdict.ERROR and self.axis != "style"


@dataclass(frozen=True, slots=True)
class Sample:
    """One of an item's answers (``repeat``), graded on its own."""

    score: float
    raw_score: float
    passed: bool
    criteria: list[CriterionResult]
    response: str = ""
    llm_raw_score: float | None = None  # the holistic judge's 0-100 reply for this answer
    trace: Trace | None = None  # what the application did on the way to this answer


@dataclass(frozen=True, slots=True)
class ProbeRecord:
    """One probed criterion judged again by one judge (``--rubric-judge-probe``; the audit
    counts the flips: ``_report.audit``). ``original`` is its verdict on the answer; the
    tone probe's record holds its verdicts on the two rewrites, ``confident`` and
    ``hedged``, another kind's the verdict judged again, ``probed``, and whether the
    criterion's weight is ``negative`` (a padded answer's flip counts in its favour only)."""

    criterion: str
    judge: str
    original: Verdict
    kind: str = "tone"
    confident: Verdict | None = None
    hedged: Verdict | None = None
    probed: Verdict | None = None
    negative: bool = False


@dataclass(frozen=True, slots=True)
class CaseResult:
    """The grade of one response against one case.

    ``score`` is the substance score in [0, 1]; style never enters it. ``fluency`` and
    ``confidence`` are the style heuristics (``pytest_rubric._grade.style``),
    ``style_score`` the mean of how far each ``axis: style`` criterion that ran went the right
    way (its credit, 1 - credit for a negative weight), or None, and
    ``naive_score`` what a rubric rewarding how an answer reads would have given. With
    ``repeat`` N > 1, ``samples`` holds each answer's grade: the scores are then means,
    ``criteria`` and ``response`` the first sample's, and ``passed`` the ``pass_when``
    rule's verdict. ``llm_raw_score`` is the holistic grader's 0-100 reply (a mean with
    ``repeat``, None when a sample has none).
    """

    nodeid: str
    suite: str
    case: str
    subject: str
    score: float
    raw_score: float
    min_score: float | None  # None: report-only, no pass mark
    passed: bool
    criteria: list[CriterionResult]
    fluency: float
    confidence: float
    naive_score: float
    style_score: float | None = None
    flags: tuple[str, ...] = ()
    question: str | None = None
    response: str = ""
    possible: float = 0.0  # P: the sum of the positive substance weights that were graded
    tags: tuple[str, ...] = ()
    pass_when: str | float = "mean"
    level: float = 0.95  # the confidence level of pass_rate_ci
    samples: tuple[Sample, ...] = ()
    probe: tuple[ProbeRecord, ...] = ()
    # False for an assert_rubric call without ``subject=``: a check inside a unit test, counted
    # in the summary's "assertions" line, never ranked on the leaderboard as a subject.
    ranked: bool = True
    llm_raw_score: float | None = None
    # The first sample's trace, like ``response`` (the JSON writes it in each sample only).
    trace: Trace | None = None
    # (low, high): a case SKIPPED because its judged criteria could not be asked (a judge
    # without its key) and the judge could still pass or fail it; see _grade.bounds.
    skipped_bounds: tuple[float, float] | None = None

    @property
    def sample_list(self) -> list[Sample]:
        """Every sample; a result graded once is its own one sample."""
        return list(self.samples) if self.samples else [self.as_sample()]

    def as_sample(self) -> Sample:
        """This result as one :class:`Sample`: a result graded once is its own sample."""
        return Sample(
            self.score,
            self.raw_score,
            self.passed,
            self.criteria,
            self.response,
            self.llm_raw_score,
            self.trace,
        )

    @property
    def lowest_sample(self) -> tuple[int, Sample] | None:
        """For an item of several samples that did not pass: its lowest-scoring answer (its
        1-based number, the sample) when it scored below the first, whose ``response`` and
        ``criteria`` the result shows; None otherwise."""
        samples = self.sample_list
        worst = min(range(len(samples)), key=lambda i: samples[i].score)
        if self.passed or samples[worst].score >= samples[0].score:
            return None
        return worst + 1, samples[worst]

    @property
    def n_samples(self) -> int:
        return len(self.samples) or 1

    @property
    def pass_rate(self) -> float:
        """The share of samples that pass alone."""
        samples = self.sample_list
        return sum(s.passed for s in samples) / len(samples)

    @property
    def pass_rate_ci(self) -> tuple[float, float]:
        """The Wilson interval of :attr:`pass_rate` at :attr:`level`."""
        samples = self.sample_list
        return wilson(sum(s.passed for s in samples), len(samples), self.level)

    @property
    def every_criterion(self) -> list[CriterionResult]:
        """Every sample's criteria; graded once, its own, with no :class:`Sample` made to ask."""
        return [c for s in self.samples for c in s.criteria] if self.samples else self.criteria

    @property
    def errors(self) -> list[CriterionResult]:
        """The substance criteria that ended in ERROR, in every sample: one makes the item an
        ERROR (see :attr:`CriterionResult.item_error`)."""
        return [c for c in self.every_criterion if c.item_error]

    @property
    def skipped(self) -> list[CriterionResult]:
        return [c for c in self.criteria if c.verdict is Verdict.SKIPPED]

    @property
    def status(self) -> str:
        """``passed``, ``failed``, ``error`` (a criterion could not be evaluated) or
        ``skipped`` (undecided without the judge: :attr:`skipped_bounds`)."""
        if self.errors:
            return "error"
        if self.skipped_bounds is not None:
            return "skipped"
        return "passed" if self.passed else "failed"

    def failure_reasons(self) -> list[str]:
        """Why the case did not pass, one line each (empty when it passed)."""
        reasons = [f"{c.id}: ERROR: {c.reason}" for c in self.errors]
        # Each required criterion once, with the samples it went the wrong way in.
        wrong: dict[tuple[str, Verdict], list[int]] = {}
        for n, sample in enumerate(self.sample_list, start=1):
            for c in sample.criteria:
                if c.required and c.went_wrong:
                    wrong.setdefault((c.id, c.verdict), []).append(n)
        for (cid, verdict), samples in wrong.items():
            where = ""
            if self.n_samples > 1:
                shown = ", ".join(map(str, samples[:5])) + (" ..." if len(samples) > 5 else "")
                where = f" in sample{'s' if len(samples) > 1 else ''} {shown}"
            reasons.append(f"required criterion {cid!r} went the wrong way ({verdict}){where}")
        if (
            self.min_score is not None
            and self.score < self.min_score
            and (self.pass_when == "mean" or self.n_samples == 1)
        ):
            reasons.append(f"score {self.score:.2f} is below min_score {self.min_score:.2f}")
        if self.n_samples > 1 and not self.passed:
            passed = sum(s.passed for s in self.samples)
            reasons.append(
                f"{passed} of {self.n_samples} samples passed (pass_rate {self.pass_rate:.2f}); "
                f"pass_when {self.pass_when}"
            )
        return reasons


def without_subject(name: str, subject: str) -> str:
    """A node id or a test's name without the subject in its parameter ids: ``case[bot]``
    and ``test_all[q1-bot]`` of subject ``bot`` are ``case`` and ``test_all[q1]``, what two
    subjects' results of one case share (a test parametrized over its subjects)."""
    # The parameter ids open at the first "[" after the node id's last "::" (a folder or a
    # file may hold one: evals[v2]/t.rubric.yaml).
    at = name.find("[", name.rfind("::") + 1)
    if at < 0 or not name.endswith("]"):
        return name
    head, ids = name[:at], name[at + 1 : -1]
    # As written (a rubric item's), or as pytest writes a parameter's id: "modèle" is
    # "mod\xe8le" there.
    for form in dict.fromkeys((subject, subject.encode("unicode_escape").decode("ascii"))):
        if ids == form:
            return head
        for kept in (
            ids.removeprefix(f"{form}-") if ids.startswith(f"{form}-") else None,
            ids.removesuffix(f"-{form}") if ids.endswith(f"-{form}") else None,
            ids.replace(f"-{form}-", "-", 1) if f"-{form}-" in ids else None,
        ):
            if kept is not None:
                return f"{head}[{kept}]"
    return name


# The one statistic a result computes of itself; ``_report.stats`` holds the others.
def z_of(level: float) -> float:
    """The two-sided standard normal quantile of ``level`` (1.96 at 0.95)."""
    if not 0 < level < 1:
        raise ValueError(f"a confidence level is a number between 0 and 1, not {level!r}")
    from statistics import NormalDist  # on first use: pytest -VV imports this module

    return NormalDist().inv_cdf(1 - (1 - level) / 2)


def wilson(passes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of ``passes`` out of ``n`` at ``level``; (0, 1) when n is 0."""
    if n <= 0:
        return (0.0, 1.0)
    z = z_of(level)
    p = passes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # At p = 0 or 1 the bound is exactly 0 or 1; rounding must not move it off.
    lo = 0.0 if passes == 0 else min(p, centre - half)
    hi = 1.0 if passes == n else max(p, centre + half)
    return (lo, hi)
