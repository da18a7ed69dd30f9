"""One value holds everything a session reports; every output renders it, none recomputes it.

:func:`build_report` is the only place that turns results into a :class:`SessionReport`
(a run at the end of the session, ``merge`` on the shards' results); the outputs of
``_config.outputs.OUTPUTS`` and the terminal summary render it. What a reader must be told
travels as :class:`Note` values whose :class:`Severity` picks a renderer's marks and
colours, never the text.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .._defaults import SHOW_RESPONSE
from .._grade.style import StyleThresholds
from .._llm.base import CallStats
from .._llm.cost import Price
from .._results import CaseResult
from .audit import Calibration, JudgeAudit, audit
from .gates import GateReport, Gates, run_gates
from .leaderboard import SubjectRow, breakdowns, leaderboard, pairwise, rank_noise

if TYPE_CHECKING:
    from .leaderboard import Breakdown, Pair, RankNoise
    from .run import HistoryRun, RunInfo

# Unstable criteria listed by name; the rest are counted.
_SHOWN = 10


class Severity(enum.Enum):
    INFO = "info"
    CAUTION = "caution"  # a difference the noise does not resolve: the terminal marks it "~"
    WARNING = "warning"  # a reader should act on it: the terminal marks it "!" in yellow
    ERROR = "error"  # the session fails because of it


@dataclass(frozen=True, slots=True)
class Note:
    """One thing a reader must know, with lines that detail it (each one item)."""

    severity: Severity
    text: str
    details: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class JudgeUsage:
    """What the judges' calls took over the run, for the summary to say: each judge's figures
    and price, whether prices or a budget were set (replies without ``usage`` were then
    estimated), and the budget given with the criteria it left ERROR once spent."""

    judges: tuple[tuple[str, CallStats, Price | None], ...] = ()
    priced: bool = False
    max_cost: str | None = None  # --rubric-max-cost, as given
    over_budget: int = 0


@dataclass(frozen=True, slots=True)
class SessionReport:
    """What a session (or a merge of shards) reports, computed once."""

    results: tuple[CaseResult, ...]  # in node id order, however the run was split
    leaderboard: tuple[SubjectRow, ...]  # in rank order
    rankings_disagree: bool
    gates: GateReport = field(default_factory=GateReport)
    notes: tuple[Note, ...] = ()  # in the order the summary prints them
    judge_usage: JudgeUsage = field(default_factory=JudgeUsage)
    thresholds: StyleThresholds = field(default_factory=StyleThresholds)
    rankings_differ_within_noise: bool = False
    breakdowns: tuple[Breakdown, ...] = ()
    level: float = 0.95  # the confidence level of every interval and tier
    judge_audit: JudgeAudit = field(default_factory=JudgeAudit)
    show_response: int = SHOW_RESPONSE  # characters of a failing case's response shown
    run: RunInfo | None = None  # which run (or merge of runs) this is; None when unknown
    pairwise: tuple[Pair, ...] = ()  # every pair of subjects, in leaderboard order
    # With --rubric-history: the last runs of the history and this one, oldest first (the
    # HTML draws each subject's correctness over them); see _report.history.with_trend.
    trend: tuple[HistoryRun, ...] = ()

    @property
    def shown(self) -> bool:
        """Whether there is anything to show: results, or gates that ran."""
        return bool(self.results) or self.gates.active

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def assertions(self) -> tuple[int, int]:
        """``assert_rubric`` calls without ``subject=``: how many passed, how many did not."""
        checks = [r.passed for r in self.results if not r.ranked and r.skipped_bounds is None]
        return sum(checks), len(checks) - sum(checks)

    @property
    def failing(self) -> list[CaseResult]:
        return [r for r in self.results if not r.passed and r.skipped_bounds is None]

    @property
    def undecided(self) -> list[CaseResult]:
        """The cases a missing judge left undecided (SKIPPED with their bounds, see
        _grade.bounds): neither passing nor failing, and in no figure."""
        return [r for r in self.results if r.skipped_bounds is not None]

    @property
    def ok(self) -> bool:
        """Every case passed and no gate failed."""
        return not self.failing and not self.gates.failed


def build_report(
    results: Iterable[CaseResult],
    *,
    gates: Gates | None = None,
    judge_usage: JudgeUsage | None = None,
    thresholds: StyleThresholds | None = None,
    level: float = 0.95,
    calibration: Sequence[Calibration] = (),
    responses_replayed: tuple[int, int] = (0, 0),
    show_response: int = SHOW_RESPONSE,
    run: RunInfo | None = None,
) -> SessionReport:
    """The report of ``results`` with the ``gates`` asked for applied (``gates.run_gates``),
    every interval at confidence ``level``. ``responses_replayed`` is
    ``(N, M)``: N of the application's M answers came from the response cache."""
    # Node id order: every output is then the same however the run was split
    # (xdist workers, merged shards), down to the last bit of each mean.
    # The report's level is every result's too: pass_rate_ci follows --rubric-confidence
    # (merge's --confidence), whatever level a result was graded or written with.
    ordered = tuple(
        r if r.level == level else replace(r, level=level)
        for r in sorted(results, key=lambda r: r.nodeid)
    )
    # A case the missing judge left undecided (SKIPPED, see _grade.bounds) is in the results,
    # not in a figure: it neither passed nor failed.
    decided = tuple(r for r in ordered if r.skipped_bounds is None)
    gates = gates or Gates()
    rows = tuple(
        leaderboard(
            decided, level=level, gate_confidence=gates.gate_confidence, max_drop=gates.max_drop
        )
    )
    pairs = pairwise(rows, decided, level=level)
    noise = rank_noise(rows, pairs)
    judge_audit = audit(ordered, calibration=calibration)
    found = run_gates(
        ordered, gates, rows=rows, level=level, calibration=calibration, probes=judge_audit.probes
    )
    return SessionReport(
        results=ordered,
        leaderboard=rows,
        rankings_disagree=noise.disagree,
        gates=found,
        notes=_notes(ordered, noise, responses_replayed),
        judge_usage=judge_usage or JudgeUsage(),
        thresholds=thresholds or StyleThresholds(),
        rankings_differ_within_noise=noise.within_noise,
        breakdowns=breakdowns(
            [r for r in decided if r.ranked], subjects=[row.subject for row in rows], level=level
        ),
        level=level,
        judge_audit=judge_audit,
        run=run,
        show_response=show_response,
        pairwise=pairs,
    )


def _notes(
    results: Sequence[CaseResult], noise: RankNoise, replayed: tuple[int, int]
) -> tuple[Note, ...]:
    notes = []
    if replayed[0]:  # the run did not ask the application (all of it, or some)
        notes.append(
            Note(
                Severity.WARNING,
                f"responses: {replayed[0]} of {replayed[1]} replayed from the cache; the "
                "application was not called for them",
            )
        )
    if noise.disagree:
        notes.append(
            Note(Severity.WARNING, "A style-weighted rubric would rank these subjects differently.")
        )
    if noise.within_noise:
        notes.append(
            Note(
                Severity.CAUTION,
                "Style-weighted ranks differ from correctness ranks only within noise.",
            )
        )
    if errored := sum(1 for r in results if r.errors):
        notes.append(
            Note(
                Severity.INFO,
                f"{errored} answer(s) could not be fully evaluated (ERROR); they count as not "
                "passed.",
            )
        )
    if (unstable := _unstable(results)) is not None:
        notes.append(unstable)
    if skipped := sum(len(r.skipped) for r in results):
        notes.append(_skipped(results, skipped))
    return tuple(notes)


def _skipped(results: Sequence[CaseResult], skipped: int) -> Note:
    """What the SKIPPED judged criteria mean: no judge configured (the cases scored what
    ran), or a judge without its key (each case graded on what can be, see _grade.bounds)."""
    from .._grade.grader import NO_JUDGE_REASON  # loaded by whatever graded the results

    why = next(c.reason for r in results for c in r.skipped)
    if why == NO_JUDGE_REASON:
        return Note(
            Severity.INFO,
            f"{skipped} judged criteria SKIPPED (no judge configured); scores count only "
            "what ran. Set --rubric-judge PROVIDER:MODEL to grade them.",
        )
    undecided = sum(1 for r in results if r.skipped_bounds is not None)
    # A warning, not the terminal's alone: a pull-request comment must not hide that the
    # judge never ran (a key to set is something to act on).
    return Note(
        Severity.WARNING,
        f"{skipped} judged criteria SKIPPED ({why}); each case was graded on what can be, "
        f"{undecided} left undecided (SKIPPED with its bounds).",
    )


def _unstable(results: Sequence[CaseResult]) -> Note | None:
    """Judged criteria whose votes disagreed (``--rubric-judge-samples``), worst first."""
    unstable = sorted(
        (c.agreement or 0.0, r.nodeid or f"{r.case}[{r.subject}]", c.id)
        for r in results
        for c in r.criteria
        if c.unstable
    )
    if not unstable:
        return None
    details = [f"{where} {cid}: agreement {agreement:.2f}" for agreement, where, cid in unstable]
    if len(details) > _SHOWN:
        details[_SHOWN:] = [f"... and {len(details) - _SHOWN} more (see --rubric-json)"]
    return Note(
        Severity.INFO,
        f"{len(unstable)} judged criteria unstable (their judge's votes, or a panel's judges, "
        "disagreed); the verdicts below are majority votes or means:",
        tuple(details),
    )
