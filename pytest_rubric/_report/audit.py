"""The judge audit: what a session learned about its judge, computed from the results.

* **Probes** (``--rubric-judge-probe N``, ``--rubric-judge-probe-kinds``; what each kind
  changes and counts as a flip: docs/guides/judge-bias.md): up to N judged substance
  criteria (:func:`probe_plan`) are judged again, each leaving a
  :class:`~pytest_rubric._results.ProbeRecord` in its result's ``probe``.
  :class:`ProbeFigures` counts the flips.
* **Evidence** (``--rubric-judge-evidence``): :class:`EvidenceAudit`.
* **Panel** (``--rubric-judge`` repeated): Cohen's kappa for each pair of judges over the
  criteria both decided, Fleiss' kappa over those every judge decided (score-kind criteria
  are not in the kappas).
* **Calibration** (a rubric file's ``calibration:`` labels, read by ``_load.examples``):
  :class:`Calibration`, measured at the start of the session (its figures:
  docs/guides/audit.md).

Everything here but the calibration (which ``merge`` keeps) is a function of the results,
so a serial run, an xdist run and ``merge`` report the same audit.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING

from .._results import CaseResult, ProbeRecord, Verdict
from .leaderboard import fixed
from .stats import cohen_kappa, fleiss_kappa

if TYPE_CHECKING:
    from .._schema import CalibrationExample as Example
    from ..criteria.judge import Requirement

_DECIDED = ("MET", "UNMET")
_KIND_ORDER = {"tone": 0, "length": 1, "position": 2}


# What each kind's flip is, as the audit's lines say it.
_CHANGED = {
    "tone": "changed with tone alone",
    "length": "changed in the answer's favour with neutral padding alone",
    "position": "changed with the order of the criteria alone",
}


@dataclass(frozen=True, slots=True)
class ProbeFigures:
    """One judge's figures for one probe kind (an entry of ``judge_audit.probes``); tone's are
    the style probe's too (``judge_audit.style_probe``): ``flips`` counts every verdict that
    changed with tone alone, ``flips_confident`` those that changed in the answer's favour
    once it sounded sure, ``flips_hedged`` those that changed once it was hedged."""

    judge: str
    kind: str
    probed: int = 0
    flips: int = 0
    flips_confident: int = 0
    flips_hedged: int = 0

    @property
    def verdicts(self) -> int:
        """The verdicts that could flip: two rewrites per probed criterion for tone, one
        judging again for the other kinds."""
        return (2 if self.kind == "tone" else 1) * self.probed

    @property
    def sensitivity(self) -> float:
        return self.flips / self.verdicts if self.verdicts else 0.0

    @property
    def line(self) -> str:
        name = "style" if self.kind == "tone" else self.kind
        if not self.verdicts:
            return f"judge {name} probe: no verdict judged again (each had an ERROR)"
        return (
            f"judge {name} probe: {self.flips} of "
            f"{self.verdicts} verdicts "
            f"{_CHANGED.get(self.kind, 'changed')} ({100 * self.sensitivity:.1f} %)"
        )


@dataclass(frozen=True, slots=True)
class EvidenceAudit:
    """Judged MET verdicts whose quotes were checked, and those none of whose quotes was found."""

    checked: int = 0
    unsupported: int = 0


@dataclass(frozen=True, slots=True)
class PairAgreement:
    """Two judges of a panel: Cohen's kappa over the ``n`` criteria both decided."""

    judges: tuple[str, str]
    n: int
    kappa: float | None


@dataclass(frozen=True, slots=True)
class PanelAgreement:
    """A panel's agreement (``judge_audit.panel``): Fleiss' kappa over the ``n`` criteria
    every judge decided, each pair's kappa, and the criteria its judges disagreed on."""

    judges: tuple[str, ...]
    n: int
    fleiss_kappa: float | None
    pairs: tuple[PairAgreement, ...]
    unstable: int


@dataclass(frozen=True, slots=True)
class JudgeAudit:
    """The ``judge_audit`` of a report."""

    evidence: EvidenceAudit = field(default_factory=EvidenceAudit)
    calibration: tuple[Calibration, ...] = ()
    panel: PanelAgreement | None = None  # with a panel of judges only
    probes: tuple[ProbeFigures, ...] = ()  # per judge and kind, tone included

    @property
    def style_probe(self) -> tuple[ProbeFigures, ...]:
        return tuple(p for p in self.probes if p.kind == "tone")

    @property
    def shown(self) -> bool:
        """Whether there is anything to say (``probes`` holds the style probe's too)."""
        return bool(self.probes or self.evidence.checked or self.calibration or self.panel)

    def lines(self) -> list[str]:
        """The ``judge audit`` block's lines, after its title."""
        lines = [c.line for c in self.calibration]
        # A run of several judges (a panel): every probe line names its judge.
        judges = {p.judge for p in self.probes} | set(self.panel.judges if self.panel else ())
        several = len(judges) > 1
        tone_first = [*self.style_probe, *(p for p in self.probes if p.kind != "tone")]
        lines += [f"{p.line}, judge {p.judge}" if several else p.line for p in tone_first]
        if panel := self.panel:
            lines.append(
                f"judge panel: {len(panel.judges)} judges, {panel.n} criteria every judge "
                f"decided, Fleiss' kappa {fixed(panel.fleiss_kappa)}, {panel.unstable} unstable"
            )
            lines += [
                f"judge panel: {pair.judges[0]} vs {pair.judges[1]}: kappa "
                f"{fixed(pair.kappa)} (n {pair.n})"
                for pair in panel.pairs
            ]
        if self.evidence.checked:
            lines.append(
                f"judge evidence: {self.evidence.unsupported} of {self.evidence.checked} MET "
                "verdicts quoted nothing found in the response"
            )
        return lines


def _favoured(record: ProbeRecord, again: Verdict | None) -> bool:
    """Whether the verdict judged ``again`` changed in the answer's favour: MET for a
    positive weight, UNMET for an error to avoid."""
    favoured = (Verdict.MET, Verdict.UNMET) if record.negative else (Verdict.UNMET, Verdict.MET)
    return (record.original, again) == favoured


def audit(results: Sequence[CaseResult], *, calibration: Sequence[Calibration] = ()) -> JudgeAudit:
    """The judge audit of ``results`` (a probe record with an ERROR in it is not counted,
    but its judge is there, ``probed`` 0 if nothing else of it was), with the calibration
    figures measured at the start of the session (or read back)."""
    # Per judge and kind: probed, flips, flips_confident, flips_hedged (the last two tone's).
    tallies: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    checked = unsupported = 0
    for result in results:
        for record in result.probe:
            counts = tallies[(record.judge, record.kind)]  # a judge probed, measured or not
            if record.kind != "tone":
                if record.original in _DECIDED and record.probed in _DECIDED:
                    counts[0] += 1
                    # Padding flips only in the answer's favour; another kind, either way.
                    counts[1] += (
                        _favoured(record, record.probed)
                        if record.kind == "length"
                        else record.original != record.probed
                    )
                continue
            verdicts = (record.original, record.confident, record.hedged)
            if not all(v in _DECIDED for v in verdicts):
                continue
            counts[0] += 1
            counts[1] += (verdicts[1] != verdicts[0]) + (verdicts[2] != verdicts[0])
            counts[2] += _favoured(record, record.confident)  # sounding sure paid
            counts[3] += verdicts[2] != verdicts[0]
        for c in result.every_criterion:
            if c.evidence_ok is not None:
                checked += 1
                unsupported += not c.evidence_ok
    figures = [ProbeFigures(judge, kind, *counts) for (judge, kind), counts in tallies.items()]
    return JudgeAudit(
        probes=tuple(sorted(figures, key=lambda p: (p.judge, _KIND_ORDER.get(p.kind, 9)))),
        evidence=EvidenceAudit(checked, unsupported),
        calibration=tuple(calibration),
        panel=_panel(results),
    )


def _panel(results: Sequence[CaseResult]) -> PanelAgreement | None:
    """The panel's agreement, from every sample's judged criteria (None without a panel)."""
    names: set[str] = set()
    votes: list[dict[str, str]] = []
    unstable = 0
    for result in results:
        for c in result.every_criterion:
            if not c.judges:
                continue
            names.update(c.judges)
            unstable += c.unstable
            decided = {n: v for n, v in c.judges.items() if isinstance(v, str) and v in _DECIDED}
            if decided:
                votes.append(decided)
    if not names:
        return None
    judges = sorted(names)
    pairs = []
    for a, b in combinations(judges, 2):
        both = [(v[a], v[b]) for v in votes if a in v and b in v]
        kappa = cohen_kappa([x for x, _ in both], [y for _, y in both])
        pairs.append(PairAgreement((a, b), len(both), kappa))
    everyone = [[v[n] for n in judges] for v in votes if len(v) == len(judges)]
    return PanelAgreement(
        tuple(judges), len(everyone), fleiss_kappa(everyone), tuple(pairs), unstable
    )


def probe_plan(
    candidates: Sequence[tuple[str, str, Sequence[str]]], n: int
) -> dict[str, tuple[str, ...]]:
    """Which judged criteria the style probe judges again: up to ``n`` of them.

    ``candidates`` are ``(node id, subject, judged substance criterion ids)``.
    The choice depends on nothing but them: subjects take turns (in name
    order), and within a subject the first criterion of every item comes
    before any second one (items in node id order), so a small ``n`` is spread
    over subjects and cases alike.
    """
    queues: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
    for nodeid, subject, ids in candidates:
        queues[subject] += [(i, nodeid, cid) for i, cid in enumerate(ids)]
    for queue in queues.values():
        queue.sort(reverse=True)  # popped from the end: smallest first
    chosen: dict[str, list[str]] = defaultdict(list)
    picked = 0
    while picked < n and any(queues.values()):
        for subject in sorted(queues):
            if queues[subject] and picked < n:
                _, nodeid, cid = queues[subject].pop()
                chosen[nodeid].append(cid)
                picked += 1
    return {nodeid: tuple(ids) for nodeid, ids in chosen.items()}


@dataclass(frozen=True, slots=True)
class Calibration:
    """The judge's agreement with one suite's labels."""

    suite: str
    judge: str
    n: int
    accuracy: float | None
    kappa: float | None
    tpr: float | None
    tnr: float | None
    errors: int = 0  # examples the judge could not grade (ERROR): not in n

    @property
    def line(self) -> str:
        text = (
            f"judge calibration {self.suite}: n {self.n}, accuracy {fixed(self.accuracy)}, "
            f"kappa {fixed(self.kappa)}, tpr {fixed(self.tpr)}, tnr {fixed(self.tnr)}"
        )
        return text + (f" ({self.errors} not graded: ERROR)" if self.errors else "")


def label_met(example: Example, criterion: Requirement) -> bool:
    """The label as MET or not: a score counts as MET in the upper half of the range."""
    if example.score is not None:
        low, high = criterion.min_score, criterion.max_score
        return (example.score - low) / (high - low) >= 0.5
    return example.verdict == "MET"


def measure(suite: str, judge: str, pairs: Sequence[tuple[bool, bool | None]]) -> Calibration:
    """Agreement from ``(label MET, judge MET or None for ERROR)`` pairs."""
    graded = [(label, judged) for label, judged in pairs if judged is not None]
    n = len(graded)
    labels = [label for label, _ in graded]
    verdicts = [bool(judged) for _, judged in graded]
    positives = [v for label, v in zip(labels, verdicts, strict=True) if label]
    negatives = [not v for label, v in zip(labels, verdicts, strict=True) if not label]
    return Calibration(
        suite=suite,
        judge=judge,
        n=n,
        accuracy=sum(a == b for a, b in zip(labels, verdicts, strict=True)) / n if n else None,
        kappa=cohen_kappa(labels, verdicts),
        tpr=sum(positives) / len(positives) if positives else None,
        tnr=sum(negatives) / len(negatives) if negatives else None,
        errors=len(pairs) - n,
    )
