"""The baseline comparison: this run against a baseline ``--rubric-json``, as gate entries,
per-subject deltas and the items that changed.

``--rubric-baseline PATH`` judges every case that passed in the baseline and fails now
(gate ``baseline-case``) and every subject's correctness (``baseline-subject``): by
default a case that fails now, or a drop of more than ``--rubric-max-drop`` (default 0,
so any drop), fails the session. With ``--rubric-gate-confidence C`` both must be beyond
noise, and together they raise a false alarm on an unchanged subject at most ``1 - C``
of the time:

* a subject's drop fails when the paired C-interval of (now - baseline) over the shared
  cases lies wholly below ``-max_drop``: a one-sided test at ``(1 - C) / 2``;
* a case's flip fails when its passing samples fell beyond chance: the one-sided Fisher
  exact test of (passes, samples) now against the baseline's, at the other
  ``(1 - C) / 2`` shared over the subject's cases (Tarone's Bonferroni for discrete
  tests). With one sample a side no single flip is ever significant; a flip within
  noise is a note.

Cases are matched by node id, case and subject; a case or subject that is only on one
side is reported, never a failure (deselecting is a choice the command line shows).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .._guards.secrets import MAX_TEXT, clip, known_keys
from .._results import CaseResult, mark_text
from . import stats as _stats
from .gate_report import CHANGE_KINDS, EPSILON, CaseChange, GateEntry, SubjectDelta
from .leaderboard import leaderboard, paired

__all__ = [
    "BaselineComparison",
    "baseline_of",
    "before_and_after",
    "case_changes",
    "changed",
    "compare",
]


def case_changes(
    old: Mapping[tuple[str, str, str, int], CaseResult],
    new: Mapping[tuple[str, str, str, int], CaseResult],
) -> tuple[CaseChange, ...]:
    """Every item whose outcome changed, appeared or disappeared, kind by kind."""
    changes = []
    for key, now in new.items():
        was = old.get(key)
        if was is None:
            changes.append(CaseChange("appeared", now.nodeid, now.subject, None, now.score))
        elif was.passed != now.passed:
            changes.append(changed(was, now))
    changes += [
        CaseChange("disappeared", was.nodeid, was.subject, was.score, None)
        for key, was in old.items()
        if key not in new
    ]
    return tuple(sorted(changes, key=lambda c: (CHANGE_KINDS.index(c.kind), c.nodeid)))


def changed(was: CaseResult, now: CaseResult) -> CaseChange:
    """An item that passed in one run and not the other: ``regressed`` or ``improved``, with
    both responses and the verdicts that changed."""
    return CaseChange(
        "improved" if now.passed else "regressed",
        now.nodeid,
        now.subject,
        was.score,
        now.score,
        response_before=was.response,
        response_after=now.response,
        verdicts=verdict_changes(was, now),
    )


def verdict_changes(was: CaseResult, now: CaseResult) -> tuple[tuple[str, str, str], ...]:
    """Each criterion both results graded whose verdict changed: (id, there, now)."""
    there = {c.id: c.verdict.value for c in was.criteria}
    return tuple(
        (c.id, there[c.id], c.verdict.value)
        for c in now.criteria
        if c.id in there and there[c.id] != c.verdict.value
    )


def baseline_of(baseline: Sequence[CaseResult], result: CaseResult) -> CaseResult | None:
    """The baseline's result of the same item (node id, case, subject), if it passed there
    and ``result`` does not now: a regression, to show before and after."""
    if result.passed:
        return None
    for was in baseline:
        if (was.nodeid, was.case, was.subject) == (result.nodeid, result.case, result.subject):
            return was if was.passed else None
    return None


def before_and_after(change: CaseChange, *, limit: int = MAX_TEXT) -> list[tuple[str, str]]:
    """A regressed item's before and after, as (label, text) rows for the terminal, the
    Markdown and the HTML alike: the criteria whose verdict changed, then the baseline's
    response beside today's (each cut to ``limit`` characters, redacted of the keys known
    now; ``limit`` 0 shows no response)."""
    rows = []
    if change.verdicts:
        rows.append(
            (
                "verdicts changed",
                ", ".join(f"{cid} {there} -> {now}" for cid, there, now in change.verdicts),
            )
        )
    keys = known_keys()
    for label, score, response in (
        ("baseline", change.before, change.response_before),
        ("now", change.after, change.response_after),
    ):
        if response is not None and limit > 0:
            shown = f" (score {score:.2f})" if score is not None else ""
            rows.append((f"{label}{shown}", clip(response, *keys, limit=limit)))
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


def _by_subject(results: Iterable[CaseResult]) -> dict[str, list[CaseResult]]:
    """Ranked results by subject (``assert_rubric`` without ``subject=`` is no subject's)."""
    grouped: dict[str, list[CaseResult]] = defaultdict(list)
    for r in results:
        if r.ranked:
            grouped[r.subject].append(r)
    return grouped


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
        current = new.get(key)
        if current is None or not was.passed or current.passed:
            continue
        subject = key[2]
        failed, message = _flip(
            _name(key), was, current, gate_confidence, thresholds.get(subject, 0.0)
        )
        entries.append(GateEntry("baseline-case", subject, current.nodeid, failed, message))
    return entries


def _flip(
    name: str,
    was: CaseResult,
    current: CaseResult,
    gate_confidence: float | None,
    threshold: float,
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
        else f"within noise at --rubric-gate-confidence {gate_confidence:g} (not a failure)"
    )
    return failed, (
        f"{message}: {b} of {k2} sample(s) pass now, {a} of {k1} in the baseline, {verdict}; "
        f"one-sided Fisher p = {p:.3g}, {'at or below' if failed else 'above'} {threshold:.3g}"
    )


def _subject_entry(
    delta: SubjectDelta,
    before: float,
    after: float,
    *,
    max_drop: float,
    gate_confidence: float | None,
    partial: bool = False,
) -> GateEntry:
    """``baseline-subject``: the verdict on one subject found in both runs, ``before`` and
    ``after`` its correctness over the cases both graded (``partial``: not all of them)."""
    subject, drop = delta.subject, before - after
    head = f"subject {subject}: correctness {before:.3f} -> {after:.3f}"
    if partial:
        head += f" over the {delta.shared} cases both runs graded"
    interval = delta.interval
    if not drop > max_drop + EPSILON:
        failed, quiet = False, True
        message = f"{head}, no drop beyond --rubric-max-drop {max_drop:g}"
    elif gate_confidence is None:
        failed, quiet = True, False
        message = f"{head}, a drop of {drop:.3f} (more than --rubric-max-drop {max_drop:g})"
    elif interval is not None and interval[1] < -max_drop - EPSILON:
        failed, quiet = True, False
        message = (
            f"{head}, a drop of {drop:.3f}; its {gate_confidence:g} interval over "
            f"{delta.shared} shared cases, [{interval[0]:+.3f}, {interval[1]:+.3f}], lies "
            f"below -{max_drop:g} (--rubric-max-drop, --rubric-gate-confidence)"
        )
    else:
        failed, quiet = False, False
        message = (
            f"subject {subject}: the drop of {drop:.3f} is within noise at "
            f"--rubric-gate-confidence {gate_confidence:g} (not a failure)"
        )
    return GateEntry("baseline-subject", subject, None, failed, message, quiet=quiet)


def _shares_no_case(
    name: str,
    rootdir: str | None,
    old: Mapping[tuple[str, str, str, int], CaseResult],
    new: Mapping[tuple[str, str, str, int], CaseResult],
) -> str:
    """Why a baseline shares no case: cases are matched by node id, and node ids are
    relative to pytest's rootdir. With no ini file, pytest takes the rootdir from the paths
    on the command line, and ``--rubric-baseline PATH`` (with a space) is one of them: a
    baseline kept elsewhere moves the rootdir, and every node id with it."""
    message = f"the baseline ({name}) shares no case with this run: nothing was compared"
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
        "--rootdir, or write --rubric-baseline=PATH; else give the baseline of this suite"
    )


@dataclass(frozen=True, slots=True)
class BaselineComparison:
    """What comparing with the baseline found: the entries of its two gates, the notes
    about cases that did not run, each subject's delta, and the items that changed."""

    entries: tuple[GateEntry, ...]
    notes: tuple[str, ...]
    deltas: tuple[SubjectDelta, ...]
    changes: tuple[CaseChange, ...]


def compare(
    results: Sequence[CaseResult],
    baseline: Sequence[CaseResult],
    *,
    now: Mapping[str, float],
    baseline_name: str | None,
    rootdir: str | None = None,
    max_drop: float,
    gate_confidence: float | None,
    delta_level: float,
) -> BaselineComparison:
    """Apply ``baseline-case`` and ``baseline-subject`` to this run's ``results``; ``now``,
    each subject's correctness in this run. Each subject's delta carries the paired
    interval of (now - baseline) over the cases both runs graded, at ``delta_level``."""
    entries: list[GateEntry] = []
    notes: list[str] = []
    deltas: list[SubjectDelta] = []
    before = {row.subject: row.correctness for row in leaderboard(baseline)}
    old, new = _keyed(baseline), _keyed(results)
    changes = case_changes(old, new)
    entries += _case_entries(old, new, gate_confidence)
    missing = [k for k in old if k not in new]
    if missing:
        notes.append(
            f"{len(missing)} baseline case(s) did not run this time, e.g. {_name(missing[0])}"
        )
    mine, theirs = _by_subject(results), _by_subject(baseline)
    for subject in sorted(before.keys() | now.keys()):
        pairs = paired(mine.get(subject, ()), theirs.get(subject, ()))
        partial = len(pairs) < max(len(mine.get(subject, ())), len(theirs.get(subject, ())))
        delta = SubjectDelta(
            subject,
            before.get(subject),
            now.get(subject),
            interval=_stats.paired_difference(pairs, delta_level),
            shared=len(pairs),
            change=math.fsum(a - b for a, b in pairs) / len(pairs) if pairs else None,
            partial=partial,
        )
        deltas.append(delta)
        if delta.before is None or delta.after is None:
            continue
        if not pairs:  # a gate that compared nothing must not pass
            entries.append(
                GateEntry(
                    "baseline-subject",
                    subject,
                    None,
                    True,
                    f"subject {subject}: no case of it was graded in both runs, so nothing "
                    "was compared with the baseline",
                )
            )
            continue
        # Over the cases both runs graded: added or removed cases cannot hide a drop.
        entries.append(
            _subject_entry(
                delta,
                math.fsum(b for _, b in pairs) / len(pairs),
                math.fsum(a for a, _ in pairs) / len(pairs),
                max_drop=max_drop,
                gate_confidence=gate_confidence,
                partial=partial,
            )
        )
    if old and not any(key in new for key in old):
        entries.append(
            GateEntry(
                "baseline-case",
                None,
                None,
                True,
                _shares_no_case(baseline_name or "baseline", rootdir, old, new),
            )
        )
    return BaselineComparison(tuple(entries), tuple(notes), tuple(deltas), changes)
