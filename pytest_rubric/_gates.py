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

import argparse
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ._leaderboard import SubjectRow, leaderboard
from ._result import CaseResult, mark_text

__all__ = ["DELTA_HEADER", "GateReport", "SubjectDelta", "check", "fraction"]

# Means are float sums: an unchanged run must not "drop" by 1e-17.
_EPSILON = 1e-9


def fraction(text: str) -> float:
    """An argparse type for the gate values: a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number from 0 to 1")
    return value


@dataclass(frozen=True, slots=True)
class SubjectDelta:
    subject: str
    before: float | None  # None: not in the baseline
    after: float | None  # None: not in this run

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
        return self.subject, before, after, change


DELTA_HEADER = ("subject", "baseline", "now", "change")


@dataclass(frozen=True, slots=True)
class GateReport:
    """What the gates found: per-subject deltas, and the reasons the session fails."""

    baseline: str | None = None  # the baseline's path, as given
    max_drop: float = 0.0
    fail_under: float | None = None
    deltas: tuple[SubjectDelta, ...] = ()
    regressions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return self.baseline is not None or self.fail_under is not None

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
) -> GateReport:
    """Apply the gates to this run's ``results``; ``rows``, their leaderboard if already made."""
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
            delta = SubjectDelta(subject, before.get(subject), now.get(subject))
            deltas.append(delta)
            if delta.delta is not None and -delta.delta > max_drop + _EPSILON:
                regressions.append(
                    f"subject {subject}: correctness {delta.before:.3f} -> {delta.after:.3f}, "
                    f"a drop of {-delta.delta:.3f} (more than --rubric-max-drop {max_drop:g})"
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
        deltas=tuple(deltas),
        regressions=tuple(regressions),
        notes=tuple(notes),
    )
