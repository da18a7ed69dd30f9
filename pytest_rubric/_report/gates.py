"""CI gates, each outcome as data: regressions against a baseline ``--rubric-json`` (compared
in :mod:`.baseline`), a floor on correctness, and the judge's own gates; :func:`check`
applies every gate a run asked for and gathers the outcomes in a :class:`GateReport`.

``--rubric-fail-under X`` fails a subject whose correctness is below X (``fail-under``);
``--rubric-judge-max-style-flips`` a judge whose style sensitivity is above it
(``style-flips``); ``--rubric-judge-max-flips KIND=X`` a judge whose sensitivity to that
probe is above it (``length-flips``, ``position-flips``); ``--rubric-judge-min-kappa`` a
suite whose calibration kappa is below it (``min-kappa``: its judged criteria are then
ERROR).

Every outcome is a :class:`GateEntry`, one per subject, case, judge or suite a gate
judged: the JSON's ``gates``. An entry that did not fail is a note when it says
something (a flip or a drop within noise), and a quiet pass otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from .._results import CaseResult
from .baseline import compare
from .gate_report import (
    CHANGE_KINDS,
    DELTA_HEADER,
    EPSILON,
    GATES,
    ORDER,
    CaseChange,
    GateEntry,
    GateReport,
    SubjectDelta,
)
from .leaderboard import SubjectRow, leaderboard

if TYPE_CHECKING:
    from .audit import ProbeFigures, StyleProbe
    from .calibration import Calibration

__all__ = [
    "CHANGE_KINDS",
    "DELTA_HEADER",
    "GATES",
    "CaseChange",
    "GateEntry",
    "GateReport",
    "SubjectDelta",
    "run_gates",
]


def _fail_under_entries(now: Mapping[str, float], fail_under: float) -> list[GateEntry]:
    entries = []
    for subject, value in sorted(now.items()):
        below = value < fail_under - EPSILON
        message = (
            f"subject {subject}: correctness {value:.3f} is "
            f"{'below' if below else 'at or above'} --rubric-fail-under {fail_under:g}"
        )
        entries.append(GateEntry("fail-under", subject, None, below, message, quiet=not below))
    return entries


def _style_flip_entries(probes: Iterable[StyleProbe], max_flips: float) -> list[GateEntry]:
    entries = []
    for p in probes:
        over = p.style_sensitivity > max_flips
        message = (
            f"judge {p.judge}: {p.flips} of {2 * p.probed} probed verdicts changed with tone "
            f"alone ({p.style_sensitivity:.3f}), {'above' if over else 'at most'} "
            f"{max_flips:g} (--rubric-judge-max-style-flips)"
        )
        entries.append(GateEntry("style-flips", None, None, over, message, quiet=not over))
    return entries


def _kind_flip_entries(
    kind: str, probes: Sequence[ProbeFigures], max_flips: float
) -> list[GateEntry]:
    """The ``length-flips`` or ``position-flips`` gate: one entry per judge; one that failed
    when the probe judged nothing again (a gate that measured nothing must not pass)."""
    gate = f"{kind}-flips"
    flag = f"--rubric-judge-max-flips {kind}, else --rubric-judge-max-style-flips"
    entries = []
    for p in probes:
        over = p.sensitivity > max_flips
        message = (
            f"judge {p.judge}: {p.flips} of {p.verdicts} probed verdicts changed with the "
            f"{kind} probe ({p.sensitivity:.3f}), {'above' if over else 'at most'} "
            f"{max_flips:g} ({flag})"
        )
        entries.append(GateEntry(gate, None, None, over, message, quiet=not over))
    if not any(p.probed for p in probes):
        entries.append(
            GateEntry(
                gate,
                None,
                None,
                True,
                f"the {kind} probe judged no verdict again (every probe call failed, or no "
                f"judged substance criterion ran), so its limit ({flag}) measured nothing",
            )
        )
    return entries


def _min_kappa_entries(calibration: Iterable[Calibration], min_kappa: float) -> list[GateEntry]:
    entries = []
    for c in calibration:
        kappa = c.kappa
        if kappa is None:
            below = True
            verdict = f"kappa cannot be computed (n {c.n}), so it is not at least"
        else:
            below = kappa < min_kappa
            verdict = f"kappa {kappa:.3f} is {'below' if below else 'at least'}"
        message = (
            f"judge calibration of suite {c.suite!r} (judge {c.judge}): {verdict} "
            f"--rubric-judge-min-kappa {min_kappa:g}"
            + ("; its judged criteria are ERROR" if below else "")
        )
        entries.append(GateEntry("min-kappa", None, None, below, message, quiet=not below))
    return entries


def _identity(entry: GateEntry) -> tuple[object, ...]:
    """What makes two entries the same outcome (shards carry the same judge's figures)."""
    return (entry.gate, entry.subject, entry.nodeid, entry.failed, entry.message)


def run_gates(
    results: Sequence[CaseResult],
    *,
    baseline: Sequence[CaseResult] | None = None,
    baseline_name: str | None = None,
    rootdir: str | None = None,
    max_drop: float = 0.0,
    fail_under: float | None = None,
    rows: Sequence[SubjectRow] | None = None,
    level: float = 0.95,
    gate_confidence: float | None = None,
    style_probe: Sequence[StyleProbe] = (),
    max_style_flips: float | None = None,
    calibration: Sequence[Calibration] = (),
    min_kappa: float | None = None,
    carried: Sequence[GateEntry] = (),
    probes: Sequence[ProbeFigures] = (),
    max_flips: Mapping[str, float] | None = None,
) -> GateReport:
    """Apply the gates to this run's ``results``; ``rows``, their leaderboard if already made.

    Each subject's delta carries the paired interval of (now - baseline) over the cases
    both runs graded, at ``gate_confidence`` if given, else ``level``. ``carried``: entries
    an earlier run wrote (``merge`` reads them from the shards); those of a gate applied
    here are replaced by this run's verdicts, the others kept. ``max_flips``: the limit of
    each probe kind other than tone (tone's is ``max_style_flips``), checked against that
    kind's ``probes`` figures.
    """
    delta_level = gate_confidence if gate_confidence is not None else level
    now = {row.subject: row.correctness for row in rows or leaderboard(results)}
    entries: list[GateEntry] = []
    notes: list[str] = []
    deltas: list[SubjectDelta] = []
    applied: set[str] = set()
    changes: tuple[CaseChange, ...] = ()
    if baseline is not None:
        applied |= {"baseline-case", "baseline-subject"}
        compared = compare(
            results,
            baseline,
            now=now,
            baseline_name=baseline_name,
            rootdir=rootdir,
            max_drop=max_drop,
            gate_confidence=gate_confidence,
            delta_level=delta_level,
        )
        entries += compared.entries
        notes += compared.notes
        deltas += compared.deltas
        changes = compared.changes
    if fail_under is not None:
        applied.add("fail-under")
        entries += _fail_under_entries(now, fail_under)
    if max_style_flips is not None:
        applied.add("style-flips")
        style = list(style_probe)
        entries += _style_flip_entries(style, max_style_flips)
        if not any(p.probed for p in style):
            entries.append(
                GateEntry(
                    "style-flips",
                    None,
                    None,
                    True,
                    "the style probe judged no verdict again (every probe call failed, or no "
                    "judged substance criterion ran), so --rubric-judge-max-style-flips "
                    "measured nothing",
                )
            )
    for kind, limit in sorted((max_flips or {}).items()):
        applied.add(f"{kind}-flips")
        entries += _kind_flip_entries(kind, [p for p in probes if p.kind == kind], limit)
    if min_kappa is not None:
        applied.add("min-kappa")
        labels = list(calibration)
        entries += _min_kappa_entries(labels, min_kappa)
        if not any(c.n for c in labels):
            entries.append(
                GateEntry(
                    "min-kappa",
                    None,
                    None,
                    True,
                    "no calibration label was graded, so --rubric-judge-min-kappa measured "
                    "nothing; add `calibration:` examples to the rubric files",
                )
            )
    seen = {_identity(e) for e in entries}
    for entry in carried:
        if entry.gate not in applied and _identity(entry) not in seen:
            seen.add(_identity(entry))
            entries.append(entry)
    entries.sort(key=lambda e: ORDER.get(e.gate, len(ORDER)))  # stable: gate by gate
    return GateReport(
        baseline=(baseline_name or "baseline") if baseline is not None else None,
        max_drop=max_drop,
        fail_under=fail_under,
        gate_confidence=gate_confidence,
        level=delta_level,
        deltas=tuple(deltas),
        entries=tuple(entries),
        notes=tuple(notes),
        max_style_flips=max_style_flips,
        min_kappa=min_kappa,
        max_flips=dict(max_flips or {}),
        changes=changes,
    )
