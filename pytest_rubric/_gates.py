"""CI gates: regressions against a baseline ``--rubric-json``, and a floor on correctness.

``--rubric-baseline PATH`` fails the session when a case that passed in the
baseline fails now (or is an ERROR now), or when a subject's correctness
(mean substance score) dropped by more than ``--rubric-max-drop`` (default
0, so any drop). ``--rubric-fail-under X`` fails it when a subject's
correctness is below X. Cases are matched by node id, case and subject; a
case or subject that is only on one side is reported, never a failure
(deselecting is a choice the command line shows).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from . import _stats
from ._leaderboard import SubjectRow, leaderboard, paired
from ._result import CaseResult, mark_text

__all__ = ["DELTA_HEADER", "GateReport", "SubjectDelta", "check"]

# Means are float sums: an unchanged run must not "drop" by 1e-17.
_EPSILON = 1e-9


@dataclass(frozen=True, slots=True)
class SubjectDelta:
    subject: str
    before: float | None  # None: not in the baseline
    after: float | None  # None: not in this run
    interval: tuple[float, float] | None = None  # paired interval of (now - baseline)
    shared: int = 0  # the cases both runs graded

    @property
    def delta(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return self.after - self.before

    def cells(self, *, missing: str) -> tuple[str, str, str, str]:
        """The row of the delta table (see :data:`DELTA_HEADER`); ``missing`` marks an absent side."""
        before = missing if self.before is None else f"{self.before:.3f}"
        after = missing if self.after is None else f"{self.after:.3f}"
        change = missing if self.delta is None else f"{self.delta:+.3f}"
        if self.delta is not None and self.interval is not None:
            change += f" [{self.interval[0]:+.3f}, {self.interval[1]:+.3f}]"
        return self.subject, before, after, change


DELTA_HEADER = ("subject", "baseline", "now", "change")


@dataclass(frozen=True, slots=True)
class GateReport:
    """What the gates found: per-subject deltas, and the reasons the session fails."""

    baseline: str | None = None  # the baseline's path, as given
    max_drop: float = 0.0
    fail_under: float | None = None
    gate_confidence: float | None = None
    level: float = 0.95  # the level of each delta's interval
    deltas: tuple[SubjectDelta, ...] = ()
    regressions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    max_style_flips: float | None = None  # --rubric-judge-max-style-flips (see _audit)

    @property
    def active(self) -> bool:
        return (
            self.baseline is not None
            or self.fail_under is not None
            or self.max_style_flips is not None
        )

    @property
    def failed(self) -> bool:
        return bool(self.regressions)


def _keyed(results: Sequence[CaseResult]) -> dict[tuple[str, str, str, int], CaseResult]:
    """Results by (node id, case, subject, occurrence): a test may assert a rubric twice."""
    seen: Counter[tuple[str, str, str]] = Counter()
    keyed = {}
    for r in results:
        base = (r.nodeid, r.case, r.subject)
        keyed[(*base, seen[base])] = r
        seen[base] += 1
    return keyed


def _name(key: tuple[str, str, str, int]) -> str:
    nodeid, case, subject, occurrence = key
    name = nodeid if nodeid.endswith(f"[{subject}]") else f"{nodeid} {case}[{subject}]"
    return name if occurrence == 0 else f"{name} (#{occurrence + 1})"


def check(
    results: Sequence[CaseResult],
    *,
    baseline: Sequence[CaseResult] | None = None,
    baseline_name: str | None = None,
    max_drop: float = 0.0,
    fail_under: float | None = None,
    rows: Sequence[SubjectRow] | None = None,
    level: float = 0.95,
    gate_confidence: float | None = None,
) -> GateReport:
    """Apply the gates to this run's ``results``; ``rows``, their leaderboard if already made.

    Each subject's delta carries the paired bootstrap interval of (now - baseline) over the
    cases both runs graded, at ``gate_confidence`` if given, else ``level``. With
    ``gate_confidence`` a drop fails only when that interval lies wholly below ``-max_drop``.
    """
    delta_level = gate_confidence if gate_confidence is not None else level
    now = {row.subject: row.correctness for row in rows or leaderboard(results)}
    regressions: list[str] = []
    notes: list[str] = []
    deltas: list[SubjectDelta] = []
    if baseline is not None:
        before = {row.subject: row.correctness for row in leaderboard(baseline)}
        old, new = _keyed(baseline), _keyed(results)
        for key, was in old.items():
            current = new.get(key)
            if current is None or not was.passed or current.passed:
                continue
            why = (
                "is an ERROR now"
                if current.errors
                else f"fails now (score {current.score:.2f}, {mark_text(current.min_score)})"
            )
            regressions.append(f"{_name(key)} passed in the baseline and {why}")
        missing = [k for k in old if k not in new]
        if missing:
            notes.append(
                f"{len(missing)} baseline case(s) did not run this time, e.g. {_name(missing[0])}"
            )
        for subject in sorted(before.keys() | now.keys()):
            pairs = paired(
                [r for r in results if r.ranked and r.subject == subject],
                [r for r in baseline if r.ranked and r.subject == subject],
            )
            delta = SubjectDelta(
                subject,
                before.get(subject),
                now.get(subject),
                interval=_stats.paired_difference(pairs, delta_level),
                shared=len(pairs),
            )
            deltas.append(delta)
            if delta.delta is None or not -delta.delta > max_drop + _EPSILON:
                continue
            if gate_confidence is None:
                regressions.append(
                    f"subject {subject}: correctness {delta.before:.3f} -> {delta.after:.3f}, "
                    f"a drop of {-delta.delta:.3f} (more than --rubric-max-drop {max_drop:g})"
                )
            elif delta.interval is not None and delta.interval[1] < -max_drop - _EPSILON:
                regressions.append(
                    f"subject {subject}: correctness {delta.before:.3f} -> {delta.after:.3f}, "
                    f"a drop of {-delta.delta:.3f}; its {gate_confidence:g} interval over "
                    f"{delta.shared} shared cases, [{delta.interval[0]:+.3f}, "
                    f"{delta.interval[1]:+.3f}], lies below "
                    f"-{max_drop:g} (--rubric-max-drop, --rubric-gate-confidence)"
                )
            else:
                notes.append(
                    f"subject {subject}: the drop of {-delta.delta:.3f} is within noise at "
                    f"--rubric-gate-confidence {gate_confidence:g} (not a failure)"
                )
    if fail_under is not None:
        for subject, value in sorted(now.items()):
            if value < fail_under - _EPSILON:
                regressions.append(
                    f"subject {subject}: correctness {value:.3f} is below "
                    f"--rubric-fail-under {fail_under:g}"
                )
    return GateReport(
        baseline=(baseline_name or "baseline") if baseline is not None else None,
        max_drop=max_drop,
        fail_under=fail_under,
        gate_confidence=gate_confidence,
        level=delta_level,
        deltas=tuple(deltas),
        regressions=tuple(regressions),
        notes=tuple(notes),
    )
