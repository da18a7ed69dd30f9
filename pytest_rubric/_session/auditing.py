"""The session's part in auditing the judge: calibration examples graded at session start,
the probes planned over the collected items (the measures are ``_report.audit``'s).

:class:`Audit` asks the judge through :class:`~pytest_rubric._session.judging.Judging`;
the judge knows nothing of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pytest

from .._llm.recordings import CALIBRATION, location
from .._results import Outcome, ProbeRecord, Verdict
from ..judge.requests import JudgeKey, JudgeRequest
from .items import is_rubric_item
from .judging import Judging

if TYPE_CHECKING:
    # Imported where used: a session without rubric files or judge never loads them.
    from .._grade.grader import CompiledRubric
    from .._llm.base import Judged
    from .._report.audit import Calibration


@dataclass(eq=False, kw_only=True)
class Audit:
    """Calibration against the suite's labels, and the probes of the judge's biases."""

    judging: Judging  # and through it, the run's role and whether it is a dry run
    probes: int  # --rubric-judge-probe N
    probe_kinds: tuple[str, ...]  # --rubric-judge-probe-kinds
    min_kappa: float | None  # --rubric-judge-min-kappa
    # node id -> the criteria the probe judges
    probe_plan: dict[str, tuple[str, ...]] = field(default_factory=dict, init=False)
    # Calibration, by rubric file node id: the suite's name and its examples as collected;
    # what the judge made of them, once measured; and on an xdist controller, what the
    # workers measured (the first worker's, per file).
    _examples: dict[str, tuple[str, list[Any]]] = field(default_factory=dict, init=False)
    _calibrated: dict[str, Calibration] = field(default_factory=dict, init=False)

    # --- calibration ------------------------------------------------------------------------------

    def add_calibration(self, file_id: str, suite: str, examples: list[Any]) -> None:
        """A collected rubric file's calibration examples (``(example, criterion, case)``)."""
        if examples:
            self._examples[file_id] = (suite, examples)

    @property
    def calibrated(self) -> list[str]:
        """The rubric files (node ids) with calibration examples."""
        return sorted(self._examples)

    def _calibration_requests(self, file_id: str) -> list[JudgeRequest]:
        _, examples = self._examples[file_id]
        return [
            JudgeRequest(
                JudgeKey(file_id, example=index),
                [criterion],
                question=case.asked,
                response=example.response,
                reference=case.reference,
                guidance=self.judging.guidance.get(file_id),
                recording=location(file_id, CALIBRATION),
            )
            for index, (example, criterion, case) in enumerate(examples)
        ]

    def start_calibration(self) -> None:
        """Start grading every calibration example, before any judged item runs: under xdist
        on ``gw0`` alone (paid once), or, with ``--rubric-judge-min-kappa``, on every worker,
        which needs the figures for its own items (the controller keeps the first it gets)."""
        if self.judging.runner is None or self.judging.dry_run or not self._grades_calibration:
            return
        for file_id in self._examples:
            for request in self._calibration_requests(file_id):
                self.judging.schedule(request)

    @property
    def _grades_calibration(self) -> bool:
        return self.judging.role.first or self.min_kappa is not None

    def calibration_of(self, file_id: str) -> Calibration | None:
        """The judge's agreement with a rubric file's labels (waiting for its grades)."""
        runner = self.judging.runner
        if file_id in self._calibrated or runner is None:
            return self._calibrated.get(file_id)
        if file_id not in self._examples or not self._grades_calibration:
            return None
        from .._report.audit import label_met, measure

        pairs: list[tuple[bool, bool | None]] = []
        for example, criterion, outcome in self._graded(file_id):
            decided = outcome.verdict in (Verdict.MET, Verdict.UNMET)
            judged = outcome.verdict is Verdict.MET if decided else None
            pairs.append((label_met(example, criterion), judged))
        self._calibrated[file_id] = measure(self._examples[file_id][0], runner.name, pairs)
        return self._calibrated[file_id]

    def _graded(self, file_id: str) -> list[tuple[Any, Any, Outcome]]:
        """Each calibration example of ``file_id`` with its criterion and the judge's outcome
        (waiting for it); none without a judge."""
        if (runner := self.judging.runner) is None or file_id not in self._examples:
            return []
        _, examples = self._examples[file_id]
        requests = self._calibration_requests(file_id)
        return [
            (example, criterion, runner.result(request).outcomes[criterion.id])
            for request, (example, criterion, _) in zip(requests, examples, strict=True)
        ]

    def calibrations(self) -> list[Calibration]:
        """Every rubric file's calibration, in node id order."""
        for file_id in self._examples:
            self.calibration_of(file_id)
        return [self._calibrated[f] for f in sorted(self._calibrated)]

    def worker_calibrations(self) -> dict[str, Any]:
        """Every rubric file's calibration, measured now, for the controller."""
        self.calibrations()
        return {f: asdict(c) for f, c in self._calibrated.items()}

    def add_calibrations(self, measured: dict[str, Any]) -> None:
        """Keep the first calibration figures of each rubric file an xdist worker sends
        (every worker measures the same ones)."""
        from .._report.audit import Calibration

        for file_id, entry in measured.items():
            self._calibrated.setdefault(file_id, Calibration(**entry))

    def below_min_kappa(self, key: JudgeKey) -> str | None:
        """Why the judged criteria of ``key`` are ERROR: its suite's calibration kappa is
        below ``--rubric-judge-min-kappa``; None when it is not."""
        if (floor := self.min_kappa) is None:
            return None
        if (calibration := self.calibration_of(key.file)) is None:
            return None
        if calibration.n == 0 and (why := self._not_graded(key.file)) is not None:
            return (
                f"judge calibration of suite {calibration.suite!r}: none of its "
                f"{calibration.errors} examples was graded, so kappa cannot be computed "
                f"(--rubric-judge-min-kappa {floor:g}): {why}"
            )
        if calibration.kappa is None:
            return (
                f"judge calibration of suite {calibration.suite!r}: kappa cannot be computed "
                f"(n {calibration.n}; the labels or the verdicts are all one way), so it is not "
                f"at least --rubric-judge-min-kappa {floor:g}"
            )
        if calibration.kappa < floor:
            return (
                f"judge calibration of suite {calibration.suite!r}: kappa {calibration.kappa:.3f} "
                f"is below --rubric-judge-min-kappa {floor:g}"
            )
        return None

    def _not_graded(self, file_id: str) -> str | None:
        """Why the judge graded a calibration example of ``file_id`` ERROR (a replay that
        found no recorded reply, say), the first one's; None when it graded them all."""
        errors = (o.reason for _, _, o in self._graded(file_id) if o.verdict is Verdict.ERROR)
        return next(errors, None)

    # --- probes -----------------------------------------------------------------------------------

    def plan_probe(self, items: Sequence[pytest.Item]) -> None:
        """Choose the criteria the probes judge again (``--rubric-judge-probe N``); every
        xdist worker collects every item, so each makes the same choice."""
        if not self.probes or not self.judging.names or self.judging.dry_run:
            return
        from .._report.audit import probe_plan

        candidates = [
            (
                item.nodeid,
                str(getattr(item, "subject", "") or ""),
                [c.id for c in item.compiled.judged_criteria if c.axis == "substance"],
            )
            for item in items
            if is_rubric_item(item)
        ]
        self.probe_plan = probe_plan(sorted(candidates), self.probes)

    def _probe_requests(
        self, request: JudgeRequest, compiled: CompiledRubric
    ) -> tuple[list[Any], list[tuple[str, JudgeRequest]]]:
        """The judged criteria the plan chose to probe in an item's first answer
        (``request``), and each probe of it, ``(kind, request)``, for the kinds of
        ``--rubric-judge-probe-kinds`` (none when the item is not probed)."""
        ids = self.probe_plan.get(request.key.node, ())
        if not (criteria := [c for c in compiled.judged_criteria if c.id in ids]):
            return [], []
        from .._grade.restyle import pad, paddable, restyle

        key, response = request.key, request.response
        probes: list[tuple[str, JudgeRequest]] = []
        if "tone" in self.probe_kinds:
            probes += [
                (tone, request.again(key.probed(tone), criteria, restyle(response, to=tone)))
                for tone in ("confident", "hedged")
            ]
        if "length" in self.probe_kinds and paddable(response):  # prose after JSON would break it
            probes.append(("length", request.again(key.probed("length"), criteria, pad(response))))
        if "position" in self.probe_kinds and len(compiled.judged_criteria) > 1:
            # The whole case again, its criteria in reverse order (a one-shot call grades
            # them together, so every criterion moves but a middle one).
            reverse = list(reversed(compiled.judged_criteria))
            probes.append(("position", request.again(key.probed("position"), reverse, response)))
        return criteria, probes

    def schedule_probe(self, request: JudgeRequest, compiled: CompiledRubric) -> None:
        for _, probe in self._probe_requests(request, compiled)[1]:
            self.judging.schedule(probe)

    def probe(
        self, key: JudgeKey, compiled: CompiledRubric, response: str, judged: Judged | None
    ) -> list[ProbeRecord]:
        """The probes' records for an item's first answer, ``response`` (none when it is not
        probed): each judge's verdicts on it (``judged``) and judged again for each kind."""
        runner = self.judging.runner
        if runner is None or judged is None or key.node not in self.probe_plan:
            return []
        request = self.judging.request(key, compiled, response)
        criteria, probes = self._probe_requests(request, compiled)
        records = []
        # A panel's judges are probed one by one: the audit is per judge.
        for one in getattr(runner, "runners", (runner,)):
            again = {kind: one.result(probe) for kind, probe in probes}
            for c in criteria:
                if (outcome := judged.outcomes.get(c.id)) is None:
                    continue
                original = dict(outcome.judges).get(one.name, outcome.verdict)
                if not isinstance(original, str):  # a panel judge's score: MET in the upper half
                    share = original  # of the weight (holistic, grounded), or on the scale
                    if c.kind == "score":
                        share = (original - c.min_score) / (c.max_score - c.min_score)
                    original = "MET" if share >= 0.5 else "UNMET"
                negative = c.effective_weight < 0
                record = ProbeRecord(c.id, one.name, Verdict(original), negative=negative)
                if "confident" in again:
                    records.append(
                        replace(
                            record,
                            confident=again["confident"].outcomes[c.id].verdict,
                            hedged=again["hedged"].outcomes[c.id].verdict,
                        )
                    )
                records += [
                    replace(
                        record,
                        kind=kind,
                        probed=again[kind].outcomes[c.id].verdict,
                    )
                    for kind in ("length", "position")
                    if kind in again
                ]
        if records:
            self.judging.caches.warn_trouble()
        return records
