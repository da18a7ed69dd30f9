"""What the CI gates found, as data: every gate's name, one :class:`GateEntry` per outcome,
a subject's :class:`SubjectDelta` against the baseline, the items that changed, and the
:class:`GateReport` that holds them all (the JSON's ``gates``; the renderers print it).

An entry that did not fail is a note when it says something (a flip or a drop within
noise), and a quiet pass otherwise. The gates themselves are applied in
:mod:`.gates`, the baseline comparison in :mod:`.baseline`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "CHANGE_KINDS",
    "DELTA_HEADER",
    "EPSILON",
    "GATES",
    "CaseChange",
    "GateEntry",
    "GateReport",
    "SubjectDelta",
]

# Means are float sums: an unchanged run must not "drop" by 1e-17.
EPSILON = 1e-9

GATES = (
    "baseline-case",
    "baseline-subject",
    "fail-under",
    "style-flips",
    "length-flips",
    "position-flips",
    "min-kappa",
)
"""Every gate's name, as an entry's ``gate`` says it."""
ORDER = {gate: i for i, gate in enumerate(GATES)}
"""Each gate's rank: entries are listed gate by gate in this order."""


@dataclass(frozen=True, slots=True)
class GateEntry:
    """One gate's verdict on one subject, case, judge or suite: an entry of the JSON's
    ``gates``. ``nodeid`` is None for a gate that judges a subject, a judge or a suite;
    ``subject`` too for the last two."""

    gate: str
    subject: str | None
    nodeid: str | None
    failed: bool
    message: str
    quiet: bool = False  # a pass with nothing to tell: in the JSON, not printed as a note

    @property
    def note(self) -> bool:
        """Whether the summary prints it as a note: it passed, and says why that matters."""
        return not self.failed and not self.quiet


@dataclass(frozen=True, slots=True)
class SubjectDelta:
    subject: str
    before: float | None  # None: not in the baseline
    after: float | None  # None: not in this run
    interval: tuple[float, float] | None = None  # paired interval of (now - baseline)
    shared: int = 0  # the cases both runs graded
    # The mean of (now - baseline) over the shared cases: the change the gate judges. It
    # differs from after - before when cases were added or removed.
    change: float | None = None
    partial: bool = False  # some cases ran on one side only

    @property
    def delta(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return self.change

    def cells(self, *, missing: str) -> tuple[str, str, str, str]:
        """The row of the delta table (see :data:`DELTA_HEADER`); ``missing`` marks an absent side."""
        before = missing if self.before is None else f"{self.before:.3f}"
        after = missing if self.after is None else f"{self.after:.3f}"
        change = missing if self.delta is None else f"{self.delta:+.3f}"
        if self.delta is not None and self.interval is not None:
            change += f" [{self.interval[0]:+.3f}, {self.interval[1]:+.3f}]"
        if self.delta is not None and self.partial:
            change += f" over the {self.shared} shared cases"
        return self.subject, before, after, change


DELTA_HEADER = ("subject", "baseline", "now", "change")


@dataclass(frozen=True, slots=True)
class CaseChange:
    """One item that changed since the baseline: ``regressed`` (passed there, not now),
    ``improved`` (the other way), ``appeared`` (new) or ``disappeared`` (gone)."""

    kind: str
    nodeid: str
    subject: str
    before: float | None = None  # the score there; None: not in the baseline
    after: float | None = None  # the score now; None: not in this run
    # Regressed or improved: the response there and now, and each criterion whose verdict
    # changed, (id, verdict there, verdict now).
    response_before: str | None = None
    response_after: str | None = None
    verdicts: tuple[tuple[str, str, str], ...] = ()


CHANGE_KINDS = ("regressed", "improved", "appeared", "disappeared")


@dataclass(frozen=True, slots=True)
class GateReport:
    """What the gates found: per-subject deltas, and every gate's outcome."""

    baseline: str | None = None  # the baseline's path, as given
    max_drop: float = 0.0
    fail_under: float | None = None
    gate_confidence: float | None = None
    level: float = 0.95  # the level of each delta's interval
    deltas: tuple[SubjectDelta, ...] = ()
    entries: tuple[GateEntry, ...] = ()
    notes: tuple[str, ...] = ()  # about the comparison, not an outcome (cases that did not run)
    max_style_flips: float | None = None  # --rubric-judge-max-style-flips (see _report.audit)
    min_kappa: float | None = None  # --rubric-judge-min-kappa (see _report.calibration)
    # The limits of the probe kinds other than tone (--rubric-judge-max-flips KIND=X, else
    # --rubric-judge-max-style-flips), by kind.
    max_flips: Mapping[str, float] = field(default_factory=dict)
    changes: tuple[CaseChange, ...] = ()  # with a baseline: the items that changed

    @property
    def active(self) -> bool:
        return (
            bool(self.entries)
            or bool(self.max_flips)
            or any(
                value is not None
                for value in (self.baseline, self.fail_under, self.max_style_flips, self.min_kappa)
            )
        )

    @property
    def regressions(self) -> tuple[str, ...]:
        """Why the session fails: the message of every failed entry."""
        return tuple(e.message for e in self.entries if e.failed)

    @property
    def failed(self) -> bool:
        return any(e.failed for e in self.entries)

    @property
    def noted(self) -> tuple[str, ...]:
        """What every output lists as notes: the passing outcomes that say something (a flip
        or a drop within noise), then the comparison's own notes."""
        return tuple(e.message for e in self.entries if e.note) + self.notes
