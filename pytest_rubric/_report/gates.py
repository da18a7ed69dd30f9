"""CI gates, each outcome as data: :func:`run_gates` applies every gate a run asked for and
gathers the outcomes in a :class:`GateReport` (the JSON's ``gates``; the renderers print it).

Every outcome is a :class:`GateEntry`, one per subject, case, judge or suite a gate judged.
An entry that did not fail is a note when it says something (a flip or a drop within
noise), and a quiet pass otherwise. The gates: ``fail-under`` (a subject's correctness
below ``--rubric-fail-under``), ``style-flips``, ``length-flips`` and ``position-flips`` (a
judge's probe sensitivity above its limit), ``min-kappa`` (a suite's calibration kappa below
``--rubric-judge-min-kappa``: its judged criteria are then ERROR), and the two of
``--rubric-baseline``: ``baseline-case`` (a case that passed there fails now) and
``baseline-subject`` (a subject's correctness dropped more than ``--rubric-max-drop``).
With ``--rubric-gate-confidence C`` both must be beyond noise, and together they raise a
false alarm on an unchanged subject at most ``1 - C`` of the time: each takes half of
``1 - C`` (the tests: docs/explanation/statistics.md, "Gating on noise").

Cases are matched by node id, case and subject; a case or subject that is only on one
side is reported, never a failure (deselecting is a choice the command line shows).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .._defaults import NO_KEY
from .._guards.secrets import MAX_TEXT, clip, known_keys
from .._results import CaseResult, Sample, mark_text
from . import stats as _stats
from .leaderboard import SubjectRow, by_subject, leaderboard, paired

if TYPE_CHECKING:
    from .audit import Calibration, ProbeFigures


# Means are float sums: an unchanged run must not "drop" by 1e-17.
EPSILON = 1e-9

# Every gate's name, as an entry's ``gate`` says it; entries are listed gate by gate so.
GATES = (
    "baseline-case",
    "baseline-subject",
    "fail-under",
    "style-flips",
    "length-flips",
    "position-flips",
    "min-kappa",
)
ORDER = {gate: i for i, gate in enumerate(GATES)}


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
    # A pass with nothing to tell: in the JSON, not printed as a note. Not part of what makes
    # two entries the same outcome (shards carry the same judge's figures, read back quiet).
    quiet: bool = field(default=False, compare=False)

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
    # The mean of (now - baseline) over the shared cases: the change the gate judges (None
    # when no case was graded in both runs). It differs from after - before when cases were
    # added or removed.
    change: float | None = None
    partial: bool = False  # some cases ran on one side only
    # With ``partial``: (baseline, now) over the shared cases, what ``change`` is measured on.
    on_shared: tuple[float, float] | None = None

    def cells(self, *, missing: str) -> tuple[str, str, str, str]:
        """The row of the delta table (see :data:`DELTA_HEADER`); ``missing`` marks an absent side."""
        before = missing if self.before is None else f"{self.before:.3f}"
        after = missing if self.after is None else f"{self.after:.3f}"
        change = missing if self.change is None else f"{self.change:+.3f}"
        if self.change is not None and self.interval is not None:
            change += f" [{self.interval[0]:+.3f}, {self.interval[1]:+.3f}]"
        if self.change is not None and self.partial:
            change += f" over the {self.shared} shared cases"
            if self.on_shared is not None:  # baseline and now above are over all their cases
                change += f", {self.on_shared[0]:.3f} -> {self.on_shared[1]:.3f}"
        return self.subject, before, after, change


DELTA_HEADER = ("subject", "baseline", "now", "change")


@dataclass(frozen=True, slots=True)
class CaseChange:
    """One item that changed since the baseline: ``regressed`` (passed there, not now; a
    report-only case, which passes either way: scored lower now), ``improved`` (the other
    way), ``appeared`` (new) or ``disappeared`` (gone)."""

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
    # A failing item of several samples shows its lowest-scoring one (as its failure report
    # does): (its number, how many, its score) for each side, or None for the first.
    sample_before: tuple[int, int, float] | None = None
    sample_after: tuple[int, int, float] | None = None
    # A report-only case that passed in both runs: no failure report shows what changed.
    report_only: bool = False

    @property
    def heading(self) -> str:
        """What every output lists it under: a report-only case passes either way, so it
        scored lower or higher, and never counts as regressed or improved."""
        if self.report_only:
            return f"scored {'lower' if self.kind == 'regressed' else 'higher'} (report-only)"
        return self.kind


CHANGE_KINDS = ("regressed", "improved", "appeared", "disappeared")
# Every :attr:`CaseChange.heading`, in the order the outputs list them.
CHANGE_HEADINGS = (
    "regressed",
    "scored lower (report-only)",
    "improved",
    "scored higher (report-only)",
    "appeared",
    "disappeared",
)


@dataclass(frozen=True, slots=True)
class Gates:
    """The gates a run (or ``merge``) asked for: no baseline, or a limit None, is a gate not
    asked; ``max_drop`` and ``gate_confidence`` set the leaderboard's ``detectable_drop`` too."""

    baseline: Sequence[CaseResult] | None = None  # the baseline's results
    baseline_name: str | None = None  # its path, as given
    rootdir: str | None = None  # pytest's, which node ids are relative to
    max_drop: float = 0.0
    gate_confidence: float | None = None
    fail_under: float | None = None
    # Each probe kind's limit on its share of flips, by kind (tone's is the style probe's).
    max_flips: Mapping[str, float] = field(default_factory=dict)
    min_kappa: float | None = None
    # Why no judge could be asked (none configured, or its key missing): what a gate that
    # measured nothing then says, rather than guess.
    unjudged: str | None = None
    # Entries an earlier run wrote (``merge`` reads them from the shards): those of a gate
    # applied here are replaced by this run's verdicts, the others kept.
    carried: Sequence[GateEntry] = ()
    # What the messages put before a flag's name: the command's own, "--" for merge's
    # --max-drop, --fail-under and --gate-confidence.
    flag: str = "--rubric-"


@dataclass(frozen=True, slots=True)
class GateReport:
    """What the gates found: per-subject deltas, and every gate's outcome."""

    asked: Gates = field(default_factory=Gates)
    level: float = 0.95  # the level of each delta's interval
    deltas: tuple[SubjectDelta, ...] = ()
    entries: tuple[GateEntry, ...] = ()
    notes: tuple[str, ...] = ()  # about the comparison, not an outcome (cases that did not run)
    changes: tuple[CaseChange, ...] = ()  # with a baseline: the items that changed

    @property
    def baseline(self) -> str | None:
        """The baseline's name (its path, as given); None without a baseline."""
        return None if self.asked.baseline is None else self.asked.baseline_name or "baseline"

    @property
    def active(self) -> bool:
        asked = self.asked
        limits = (self.baseline, asked.fail_under, asked.min_kappa)
        return bool(self.entries or asked.max_flips) or any(v is not None for v in limits)

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


def case_changes(
    old: Mapping[tuple[str, str, str, int], CaseResult],
    new: Mapping[tuple[str, str, str, int], CaseResult],
) -> tuple[CaseChange, ...]:
    """Every item whose outcome changed, appeared or disappeared, kind by kind."""
    changes = []
    for key, now in new.items():
        if (was := old.get(key)) is None:
            changes.append(CaseChange("appeared", now.nodeid, now.subject, None, now.score))
        elif was.passed != now.passed or _report_only_moved(was, now):
            changes.append(changed(was, now))
    changes += [
        CaseChange("disappeared", was.nodeid, was.subject, was.score, None)
        for key, was in old.items()
        if key not in new
    ]
    return tuple(sorted(changes, key=lambda c: (CHANGE_KINDS.index(c.kind), c.nodeid)))


def _report_only_moved(was: CaseResult, now: CaseResult) -> bool:
    """Whether a report-only case that passed in both runs scored differently: its score is
    what it reports (an imported HealthBench suite's regression is a score that fell)."""
    return (
        was.min_score is None
        and now.min_score is None
        and was.passed
        and now.passed
        and not math.isclose(was.score, now.score, abs_tol=EPSILON)
    )


def changed(was: CaseResult, now: CaseResult) -> CaseChange:
    """An item that passed in one run and not the other, or a report-only one that scored
    differently: ``regressed`` or ``improved``, with both responses and the verdicts that
    changed (a criterion added or removed since is ``absent`` on its other side). A side
    that failed over several samples shows its lowest-scoring one, as its failure report
    does."""
    (was_sample, before), (now_sample, after) = _shown(was), _shown(now)
    there = {c.id: c.verdict.value for c in before.criteria}
    here = {c.id for c in after.criteria}
    report_only = _report_only_moved(was, now)
    better = now.score > was.score if report_only else now.passed
    return CaseChange(
        "improved" if better else "regressed",
        now.nodeid,
        now.subject,
        was.score,
        now.score,
        response_before=before.response,
        response_after=after.response,
        verdicts=tuple(
            (c.id, there.get(c.id, "absent"), c.verdict.value)
            for c in after.criteria
            if there.get(c.id) != c.verdict.value
        )
        + tuple((cid, verdict, "absent") for cid, verdict in there.items() if cid not in here),
        report_only=report_only,
        sample_before=was_sample,
        sample_after=now_sample,
    )


def _shown(result: CaseResult) -> tuple[tuple[int, int, float] | None, Sample]:
    """The answer of ``result`` a change shows: its lowest-scoring sample when it failed
    with a lower one than the first (its number, how many, its score), else the first."""
    if (lowest := result.lowest_sample) is None:
        return None, result.sample_list[0]
    number, sample = lowest
    return (number, result.n_samples, sample.score), sample


def before_and_after(change: CaseChange, *, limit: int = MAX_TEXT) -> list[tuple[str, str]]:
    """A regressed item's before and after, as (label, text) rows for the terminal, the
    Markdown and the HTML alike: the criteria whose verdict changed, then the baseline's
    response beside today's (each cut to ``limit`` characters, redacted of the keys known
    now; ``limit`` 0 shows no response)."""
    verdicts = ", ".join(f"{cid} {there} -> {now}" for cid, there, now in change.verdicts)
    rows = [("verdicts changed", verdicts)] if verdicts else []
    keys = known_keys()
    for label, score, sample, response in (
        ("baseline", change.before, change.sample_before, change.response_before),
        ("now", change.after, change.sample_after, change.response_after),
    ):
        if response is not None and limit > 0:
            shown = f"score {score:.2f}" if score is not None else ""
            if sample is not None:
                shown += f"; sample {sample[0]} of {sample[1]} scored {sample[2]:.2f}"
            text = clip(response, *keys, limit=limit) if response else "(no answer)"
            rows.append((f"{label} ({shown})" if shown else label, text))
    return rows


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


def _passes(result: CaseResult) -> tuple[int, int]:
    """(passing samples, samples) of a result."""
    samples = result.sample_list
    return sum(s.passed for s in samples), len(samples)


def _case_entries(
    old: Mapping[tuple[str, str, str, int], CaseResult],
    new: Mapping[tuple[str, str, str, int], CaseResult],
    gate_confidence: float | None,
    flag: str,
) -> list[GateEntry]:
    """``baseline-case``: one entry per case that passed in the baseline and fails now."""
    thresholds: dict[str, float] = {}
    if gate_confidence is not None:
        # Half the subject's false-alarm budget, shared over every case it has in both runs.
        floors: dict[str, list[float]] = defaultdict(list)
        for key, was in old.items():
            if key in new:
                floors[key[2]].append(_stats.fisher_floor(_passes(was), _passes(new[key])))
        alpha = (1 - gate_confidence) / 2
        thresholds = {s: _stats.tarone_threshold(f, alpha) for s, f in floors.items()}
    entries = []
    for key, was in old.items():
        if (current := new.get(key)) is None or not was.passed or current.passed:
            continue
        subject = key[2]
        failed, message = _flip(
            _name(key), was, current, gate_confidence, thresholds.get(subject, 0.0), flag
        )
        entries.append(GateEntry("baseline-case", subject, current.nodeid, failed, message))
    return entries


def _flip(
    name: str,
    was: CaseResult,
    current: CaseResult,
    gate_confidence: float | None,
    threshold: float,
    flag: str,
) -> tuple[bool, str]:
    """Whether a case that passed in the baseline and fails now fails the gate, and why."""
    if current.errors:  # not an answer graded worse: nothing was measured
        return True, f"{name} passed in the baseline and is an ERROR now"
    message = (
        f"{name} passed in the baseline and fails now "
        f"(score {current.score:.2f}, {mark_text(current.min_score)})"
    )
    if gate_confidence is None:
        return True, message
    (a, k1), (b, k2) = _passes(was), _passes(current)
    p = _stats.fisher_decline((a, k1), (b, k2))
    failed = p <= threshold
    verdict = (
        "beyond noise"
        if failed
        else f"within noise at {flag}gate-confidence {gate_confidence:g} (not a failure)"
    )
    return failed, (
        f"{message}: {b} of {k2} sample(s) pass now, {a} of {k1} in the baseline, {verdict}; "
        f"one-sided Fisher p = {p:.3g}, {'at or below' if failed else 'above'} {threshold:.3g}"
    )


def _subject_entry(delta: SubjectDelta, before: float, after: float, asked: Gates) -> GateEntry:
    """``baseline-subject``: the verdict on one subject found in both runs, ``before`` and
    ``after`` its correctness over the cases both graded."""
    max_drop, gate_confidence, flag = asked.max_drop, asked.gate_confidence, asked.flag
    subject, drop = delta.subject, before - after
    head = f"subject {subject}: correctness {before:.3f} -> {after:.3f}"
    if delta.partial:
        head += f" over the {delta.shared} cases both runs graded"
    interval = delta.interval
    if not drop > max_drop + EPSILON:
        failed, quiet = False, True
        message = f"{head}, no drop beyond {flag}max-drop {max_drop:g}"
    elif gate_confidence is None:
        failed, quiet = True, False
        message = f"{head}, a drop of {drop:.3f} (more than {flag}max-drop {max_drop:g})"
    elif interval is not None and interval[1] < -max_drop - EPSILON:
        failed, quiet = True, False
        message = (
            f"{head}, a drop of {drop:.3f}; its {gate_confidence:g} interval over "
            f"{delta.shared} shared cases, [{interval[0]:+.3f}, {interval[1]:+.3f}], lies "
            f"below {0 - max_drop:g} ({flag}max-drop, {flag}gate-confidence)"
        )
    else:
        failed, quiet = False, False
        message = (
            f"subject {subject}: the drop of {drop:.3f} is within noise at "
            f"{flag}gate-confidence {gate_confidence:g} (not a failure)"
        )
    return GateEntry("baseline-subject", subject, None, failed, message, quiet=quiet)


def _shares_no_case(
    name: str,
    rootdir: str | None,
    old: Mapping[tuple[str, str, str, int], CaseResult],
    new: Mapping[tuple[str, str, str, int], CaseResult],
    unjudged: str | None,
    flag: str,
) -> str:
    """Why a baseline shares no case: nothing was graded without the judge, or cases are
    matched by node id, and node ids are relative to pytest's rootdir. With no ini file,
    pytest takes the rootdir from the paths on the command line, and ``--rubric-baseline
    PATH`` (with a space) is one of them: a baseline kept elsewhere moves the rootdir, and
    every node id with it."""
    message = f"the baseline ({name}) shares no case with this run: nothing was compared"
    if not new and unjudged is not None:  # every case needed the judge
        return f"{message}: no case was graded without the judge ({unjudged})"
    if rootdir is None:
        return f"{message}; give the baseline of this suite"
    was = next(iter(old))[0]
    now = next((key[0] for key in new), None)
    seen = f"; the baseline's node ids read like {was}" + (
        f", this run's like {now}" if now is not None else ""
    )
    return (
        f"{message}. Cases are matched by node id, relative to pytest's rootdir, {rootdir} "
        f"in this run{seen}. With no ini file pytest takes the rootdir from the paths on the "
        "command line, the baseline's too: add an ini file (pytest.ini, or "
        "[tool.pytest.ini_options] in pyproject.toml) at the project's root, or pass "
        f"--rootdir, or write {flag}baseline=PATH; else give the baseline of this suite"
    )


def _compare(
    results: Sequence[CaseResult],
    baseline: Sequence[CaseResult],
    asked: Gates,
    now: Mapping[str, float],
    delta_level: float,
) -> tuple[list[GateEntry], list[str], list[SubjectDelta], tuple[CaseChange, ...]]:
    """``baseline-case`` and ``baseline-subject`` on this run's ``results``: their entries, the
    notes about cases that did not run, each subject's delta (with the paired interval of
    (now - baseline) over the cases both runs graded, at ``delta_level``) and the changes. A
    case the baseline left undecided (SKIPPED, see _grade.bounds) was in none of its figures:
    it is compared as one the baseline does not have. One this run left undecided ran, and
    is compared with nothing: it is noted as undecided, neither gone nor a change. One graded
    on other criteria than in the baseline (judged ones SKIPPED without the judge in one of
    the runs) has its pass or fail compared, never its score: a score over fewer criteria is
    another measure, which could hide a drop or make one."""
    baseline = [r for r in baseline if r.skipped_bounds is None]
    old, everything = _keyed(baseline), _keyed(results)
    new = {key: r for key, r in everything.items() if r.skipped_bounds is None}
    left = everything.keys() - new.keys()
    undecided = [key for key in old if key in left]
    entries = _case_entries(old, new, asked.gate_confidence, asked.flag)
    notes = []
    if missing := [k for k in old if k not in everything]:
        notes.append(
            f"{len(missing)} baseline case(s) did not run this time, e.g. {_name(missing[0])}"
        )
    if undecided:
        notes.append(
            f"{len(undecided)} baseline case(s) left undecided without the judge this time "
            f"(not compared), e.g. {_name(undecided[0])}"
        )
    measured = {k: r for k, r in new.items() if k not in old or _skipped(r) == _skipped(old[k])}
    if other := [key for key in new if key not in measured]:
        notes.append(
            f"{len(other)} case(s) graded on other criteria than in the baseline (judged "
            f"criteria SKIPPED without the judge in one run): their pass or fail is compared, "
            f"not their score, e.g. {_name(other[0])}"
        )
    deltas: list[SubjectDelta] = []
    shares_none = bool(old) and not any(key in new for key in old)  # one failure says it all
    mine, theirs = by_subject(measured.values()), by_subject(baseline)
    before = {subject: _stats.mean([r.score for r in rs]) for subject, rs in theirs.items()}
    for subject in sorted(before.keys() | now.keys()):
        pairs = paired(mine.get(subject, ()), theirs.get(subject, ()))
        delta = SubjectDelta(
            subject,
            before.get(subject),
            now.get(subject),
            interval=_stats.paired_difference(pairs, delta_level),
            shared=len(pairs),
            change=_stats.mean([a - b for a, b in pairs]) if pairs else None,
            partial=len(pairs) < max(len(mine.get(subject, ())), len(theirs.get(subject, ()))),
            on_shared=(
                (_stats.mean([b for _, b in pairs]), _stats.mean([a for a, _ in pairs]))
                if pairs
                else None
            ),
        )
        deltas.append(delta)
        if delta.before is None or delta.after is None:
            continue
        if not pairs and shares_none:
            continue
        if not pairs:  # a gate that compared nothing must not pass
            same = (
                " on the same criteria (judged ones SKIPPED without the judge in one run)"
                if any(new[key].subject == subject for key in other)
                else ""
            )
            message = (
                f"subject {subject}: no case of it was graded in both runs{same}, so nothing "
                "was compared with the baseline"
            )
            entries.append(GateEntry("baseline-subject", subject, None, True, message))
            continue
        # Over the cases both runs graded: added or removed cases cannot hide a drop.
        assert delta.on_shared is not None  # pairs
        entries.append(_subject_entry(delta, *delta.on_shared, asked))
    if shares_none:
        name = asked.baseline_name or "baseline"
        message = _shares_no_case(name, asked.rootdir, old, new, asked.unjudged, asked.flag)
        entries.append(GateEntry("baseline-case", None, None, True, message))
    compared = {key: r for key, r in old.items() if key not in left}
    return entries, notes, deltas, case_changes(compared, new)


def _skipped(result: CaseResult) -> set[str]:
    """The ids of the criteria ``result`` skipped: its score is over the others."""
    return {c.id for c in result.skipped}


def _unjudged_spans(results: Sequence[CaseResult]) -> dict[str, tuple[float, float]]:
    """Each subject's correctness at worst and at best over the verdicts the judge, not asked
    (no key), could give: its cases at their bounds (see ``_grade.bounds``), those left
    undecided too. Only the subjects the judge could move."""
    from .._grade.bounds import bounds

    spans = {}
    for subject, rs in by_subject(results).items():
        ends = []
        for r in rs:
            found = r.skipped_bounds or ((b.low, b.high) if (b := bounds(r)) else None)
            ends.append(found or (r.score, r.score))
        low, high = _stats.mean([e[0] for e in ends]), _stats.mean([e[1] for e in ends])
        if high - low > EPSILON:
            spans[subject] = (low, high)
    return spans


def _fail_under_entries(
    now: Mapping[str, float],
    fail_under: float,
    flag: str,
    spans: Mapping[str, tuple[float, float]],
    unjudged: str | None,
) -> list[GateEntry]:
    """``fail-under`` per subject; a subject the judge, not asked, could move (``spans``) is
    judged at its bounds: below at best fails, at or above at worst passes, and between them
    the gate is not decided without the judge, which fails it (a keyless run's green must
    not hide a subject the judge would fail)."""
    entries = []
    mark = f"{flag}fail-under {fail_under:g}"
    for subject in sorted(now.keys() | spans.keys()):
        if (span := spans.get(subject)) is None:
            value = now[subject]
            below = value < fail_under - EPSILON
            said = f"correctness {value:.3f} is {'below' if below else 'at or above'} {mark}"
        else:
            low, high = span
            below = low < fail_under - EPSILON  # it passes only if it does at worst
            if high < fail_under - EPSILON:
                said = f"correctness at most {high:.3f} whatever the judge says, below {mark}"
            elif not below:
                said = f"correctness at least {low:.3f} whatever the judge says, at or above {mark}"
            else:
                said = (
                    f"correctness between {low:.3f} and {high:.3f} whatever the judge says, "
                    f"so {mark} is not decided without it"
                )
            said += f" ({unjudged})"
        message = f"subject {subject}: {said}"
        entries.append(GateEntry("fail-under", subject, None, below, message, quiet=not below))
    if not now and not spans:  # a gate that measured nothing must not pass
        message = (
            f"no subject was graded in this run, so {flag}fail-under {fail_under:g} measured "
            "nothing; run the rubric files it gates, or leave the flag out of this run"
        )
        entries.append(GateEntry("fail-under", None, None, True, message))
    return entries


def _flip_entries(
    kind: str, probes: Sequence[ProbeFigures], limit: float, unjudged: str | None, probed_any: str
) -> list[GateEntry]:
    """The ``style-flips`` gate (kind ``tone``), ``length-flips`` or ``position-flips``: one
    entry per judge, failed for a judge the probe measured nothing of; one that failed when
    the probe judged nothing again at all (a gate that measured nothing must not pass), saying
    why: ``probed_any`` is ``judged`` when another kind judged answers again, ``unasked``
    when no probe ran though judged substance criteria were graded (``--rubric-judge-probe``
    is 0 by default), ``none`` when none was."""
    name = "style" if kind == "tone" else kind  # the tone probe is the style probe
    gate = f"{name}-flips"
    # Where the limit may come from: every kind's may be set either way.
    flag = f"--rubric-judge-max-flips {kind}, else --rubric-judge-max-style-flips"
    entries = []
    for p in probes:
        if not p.probed:  # the probe is per judge: one that measured nothing must not pass
            message = (
                f"judge {p.judge}: the {name} probe judged no verdict "
                "again (each had an ERROR, on the original answer or judged again), so its "
                f"limit ({flag}) measured nothing for this judge"
            )
            entries.append(GateEntry(gate, None, None, True, message))
            continue
        over = p.sensitivity > limit
        message = (
            f"judge {p.judge}: {p.flips} of {p.verdicts} probed verdicts changed with "
            f"{'tone alone' if kind == 'tone' else f'the {kind} probe'} ({p.sensitivity:.3f}), "
            f"{'above' if over else 'at most'} {limit:g} ({flag})"
        )
        entries.append(GateEntry(gate, None, None, over, message, quiet=not over))
    if not probes:
        why = (
            unjudged
            or {
                "judged": f"no probed answer could be judged again by the {kind} probe",
                "unasked": "the probe was not asked: add --rubric-judge-probe N",
                "none": "no judged substance criterion was graded",
            }[probed_any]
        )
        message = (
            f"the {name} probe judged no verdict again ({why}), so "
            f"its limit ({flag}) measured nothing"
        )
        entries.append(GateEntry(gate, None, None, True, message))
    return entries


def _min_kappa_entries(
    calibration: Sequence[Calibration], min_kappa: float, unjudged: str | None
) -> list[GateEntry]:
    entries = []
    for c in calibration:
        if (kappa := c.kappa) is None:
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
    if not any(c.n for c in calibration):
        why = unjudged or ("the judge decided none of them" if calibration else None)
        message = (
            f"no calibration label was graded{f' ({why})' if why else ''}, so "
            "--rubric-judge-min-kappa measured nothing"
            + ("" if why else "; add `calibration:` examples to the rubric files")
        )
        entries.append(GateEntry("min-kappa", None, None, True, message))
    return entries


def run_gates(
    results: Sequence[CaseResult],
    asked: Gates,
    *,
    rows: Sequence[SubjectRow] | None = None,
    level: float = 0.95,
    calibration: Sequence[Calibration] = (),
    probes: Sequence[ProbeFigures] = (),
) -> GateReport:
    """Apply the gates ``asked`` to this run's ``results``; ``rows``, their leaderboard if
    already made; each delta's interval at ``gate_confidence`` if given, else ``level``. A
    result left undecided without the judge (``skipped_bounds``) is in no figure but a keyless
    run's fail-under, which takes every case at its bounds."""
    delta_level = asked.gate_confidence if asked.gate_confidence is not None else level
    decided = [r for r in results if r.skipped_bounds is None]
    now = {row.subject: row.correctness for row in rows or leaderboard(decided)}
    entries: list[GateEntry] = []
    notes: list[str] = []
    deltas: list[SubjectDelta] = []
    changes: tuple[CaseChange, ...] = ()
    applied: set[str] = set()
    if asked.baseline is not None:
        applied |= {"baseline-case", "baseline-subject"}
        entries, notes, deltas, changes = _compare(results, asked.baseline, asked, now, delta_level)
    if asked.fail_under is not None:
        applied.add("fail-under")
        # Bounds for a judge set without its key only: with no judge configured at all, the
        # deterministic criteria are the test, and each case scores what ran.
        keyless = asked.unjudged is not None and asked.unjudged.startswith(NO_KEY)
        spans = _unjudged_spans(results) if keyless else {}
        entries += _fail_under_entries(now, asked.fail_under, asked.flag, spans, asked.unjudged)
    if asked.max_flips:
        substance = any(
            c.requirement is not None and c.axis == "substance"
            for r in results
            for c in r.every_criterion
        )
        probed_any = "judged" if probes else "unasked" if substance else "none"
    for kind, limit in sorted(asked.max_flips.items()):
        applied.add("style-flips" if kind == "tone" else f"{kind}-flips")
        entries += _flip_entries(
            kind, [p for p in probes if p.kind == kind], limit, asked.unjudged, probed_any
        )
    if asked.min_kappa is not None:
        applied.add("min-kappa")
        entries += _min_kappa_entries(calibration, asked.min_kappa, asked.unjudged)
    # Each carried outcome once (shards repeat the same judge's); none of a gate applied here.
    entries += [e for e in dict.fromkeys(asked.carried) if e.gate not in applied]
    entries.sort(key=lambda e: ORDER.get(e.gate, len(ORDER)))  # stable: gate by gate
    return GateReport(asked, delta_level, tuple(deltas), tuple(entries), tuple(notes), changes)
